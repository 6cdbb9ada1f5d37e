"""Every rendered manifest passes checkov, except findings waived (with a reason) in tests/checkov-waivers.yaml.

Scanned: the whole `infersweep install --dry-run` set (step and pipeline WorkflowTemplates, the nightly and
reaper CronWorkflows, ServiceAccounts, Roles, RoleBindings, ConfigMaps) and `infersweep render --all` (every
recipe's Workflow and DGD), one document per file, with checkov's `kubernetes` and `argo_workflows`
frameworks. checkov lives in its own environment (.venv-checkov, built by scripts/setup.sh: its pins clash
with the main env); the test skips with that reason when it is absent. A waiver names the check and
the scanned files it covers (glob over `install-<Kind>-<name>.yaml` / `render-<recipe>-<file>-<n>.yaml`);
one that no longer matches a finding fails the test too, so the file never hides more than it says.
Measured on this (shared, 2-core) machine: checkov itself takes most of the test's time (see README).
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # real servers or subprocesses, seconds each: outside the inner loop

CHECKOV = REPO / ".venv-checkov" / "bin" / "checkov"
WAIVERS = REPO / "tests" / "checkov-waivers.yaml"


def write_manifests(out: Path, scratch: Path) -> int:
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.commands.install import install_set

    argo, kube = install_set(load_cluster_settings())
    n = 0
    for doc in argo + kube:
        (out / f"install-{doc['kind']}-{doc['metadata']['name']}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        n += 1
    rendered = scratch / "render"  # outside the scanned folder
    subprocess.run(
        [sys.executable, "-m", "infersweep.cli", "render", "--all", "--out", str(rendered)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=600,
    )
    for f in sorted(rendered.rglob("*.yaml")):
        if "templates" in f.parts:  # the same step/pipeline templates as the install set
            continue
        for i, doc in enumerate(d for d in yaml.safe_load_all(f.read_text()) if d):
            (out / f"render-{f.parent.name}-{f.stem}-{i}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
            n += 1
    return n


def load_waivers() -> list[dict]:
    waivers = yaml.safe_load(WAIVERS.read_text()) or []
    for w in waivers:
        assert set(w) == {"check", "resources", "reason"}, f"waiver {w}: needs check, resources, reason"
        assert len(w["reason"].split()) >= 8, f"waiver {w['check']}: give a real reason"
    return waivers


def findings(directory: Path) -> list[dict]:
    p = subprocess.run(
        [
            str(CHECKOV),
            "-d",
            str(directory),
            "--framework",
            "kubernetes",
            "argo_workflows",
            "-o",
            "json",
            "--quiet",
            "--compact",
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert p.returncode in (0, 1), p.stderr[-2000:]
    reports = json.loads(p.stdout or "[]")
    reports = reports if isinstance(reports, list) else [reports]
    out = []
    for r in reports:
        for f in (r.get("results") or {}).get("failed_checks", []):
            out.append(
                {
                    "check": f["check_id"],
                    "resource": f["resource"],
                    "file": Path(f["file_path"]).name,
                    "name": f.get("check_name", ""),
                }
            )
    return out


@pytest.mark.skipif(
    not CHECKOV.exists(), reason=".venv-checkov missing: run scripts/setup.sh (it builds checkov's own env)"
)
def test_rendered_manifests_have_no_unwaived_checkov_finding(tmp_path):
    scan = tmp_path / "scan"
    scan.mkdir()
    count = write_manifests(scan, tmp_path)
    assert count > 100
    waivers = load_waivers()
    found = findings(scan)
    used = set()
    open_findings = []
    for f in found:
        match = [
            i
            for i, w in enumerate(waivers)
            if w["check"] == f["check"] and any(fnmatch.fnmatch(f["file"], pat) for pat in w["resources"])
        ]
        used.update(match)
        if not match:
            open_findings.append(f)
    assert not open_findings, "fix or waive (tests/checkov-waivers.yaml, with a reason):\n" + "\n".join(
        f"  {f['check']} {f['resource']} ({f['file']}): {f['name']}" for f in open_findings
    )
    stale = [w["check"] for i, w in enumerate(waivers) if i not in used]
    assert not stale, f"waivers that match no finding any more (remove them): {stale}"
