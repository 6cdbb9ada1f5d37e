"""`infersweep argo run FILE.yaml`: run any Workflow with the local executor (infersweep/local/argo/)
and print its status as `argo get -o json` shows it under `status`."""

from __future__ import annotations

import argparse
import json
import signal
import tempfile
from pathlib import Path
from typing import Any

import yaml

from infersweep.cli_util import key_values
from infersweep.recipe import RecipeError


def load_documents(
    path: Path, templates_dir: Path | None
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, dict[str, str]]]:
    """(the Workflow, WorkflowTemplates, ConfigMaps "namespace/name" -> data) from FILE and --templates DIR."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    if templates_dir is not None:
        for f in sorted(list(templates_dir.glob("*.yaml")) + list(templates_dir.glob("*.yml"))):
            docs += [d for d in yaml.safe_load_all(f.read_text()) if d]
    wfs = [d for d in docs if d.get("kind") == "Workflow"]
    if len(wfs) != 1:
        raise RecipeError(f"{path}: expected exactly one `kind: Workflow` document, found {len(wfs)}")
    wf = wfs[0]
    ns = wf.get("metadata", {}).get("namespace", "default")
    templates = [d for d in docs if d.get("kind") == "WorkflowTemplate"]
    cms = {
        f"{d['metadata'].get('namespace', ns)}/{d['metadata']['name']}": {
            k: str(v) for k, v in (d.get("data") or {}).items()
        }
        for d in docs
        if d.get("kind") == "ConfigMap"
    }
    return wf, templates, cms


def run_workflow_file(
    path: Path,
    *,
    templates_dir: Path | None = None,
    images: dict[str, str] | None = None,
    work_dir: Path | None = None,
    state_dir: Path | None = None,
    params: dict[str, str] | None = None,
    on_started=None,
    template_referencing: str = "",
):
    """Run FILE's Workflow to the end; returns the LocalArgo (its `.status()` is the JSON printed)."""
    from infersweep.local.argo import LocalArgo, LocalCluster

    wf, templates, cms = load_documents(path, templates_dir)
    if params:
        args = wf.setdefault("spec", {}).setdefault("arguments", {}).setdefault("parameters", [])
        for k, v in params.items():
            for p in args:
                if p["name"] == k:
                    p["value"] = v
                    break
            else:
                args.append({"name": k, "value": v})
    work = Path(work_dir or tempfile.mkdtemp(prefix="argo-local-"))
    pythons = {}
    for image, target in (images or {}).items():
        t = Path(target)
        pythons[image] = str(t / "bin" / "python") if t.is_dir() else str(t)
    import os

    cluster = LocalCluster(
        pythons=pythons,
        pvc_dirs=lambda claim: work / "pvc" / claim,
        run_dir=work,
        cwd=work,
        env=dict(os.environ),
        unmapped_on_host=True,
        configmaps=cms,
        state_dir=state_dir,
        template_referencing=template_referencing,
        # Secure re-reads the installed templates on every reconcile: the files as they are now
        current_templates=(lambda: load_documents(path, templates_dir)[1]) if template_referencing else None,
    )
    argo = LocalArgo(wf, templates, cluster)
    if on_started:
        on_started(argo)
    argo.run()
    return argo


def run(a: argparse.Namespace) -> int:
    if a.action != "run":
        raise RecipeError("infersweep argo: only `run` is available")
    images = key_values(a.image, "--image", "IMAGE=PYTHON_OR_ENV, e.g. alpine=/usr/bin/python3")
    path = Path(a.file)
    if not path.is_file():
        raise RecipeError(f"{a.file}: no such file; give a Workflow YAML")
    if a.templates and not Path(a.templates).is_dir():
        raise RecipeError(f"--templates {a.templates}: not a folder of WorkflowTemplate/ConfigMap YAML files")

    holder: dict[str, Any] = {}

    def started(argo) -> None:
        holder["argo"] = argo
        for sig, strategy in ((signal.SIGINT, "Stop"), (signal.SIGTERM, "Terminate")):
            signal.signal(sig, lambda *_s, st=strategy: argo.stop(strategy=st))

    # What `argo submit` would refuse is a WorkflowError (a UserError, exit 2): nothing ran.
    argo = run_workflow_file(
        path,
        templates_dir=Path(a.templates) if a.templates else None,
        images=images,
        work_dir=Path(a.work_dir) if a.work_dir else None,
        on_started=started,
        state_dir=Path(a.state_dir) if a.state_dir else None,
        params=key_values(a.parameter, "-p", "NAME=VALUE, as `argo submit -p`"),
        template_referencing=a.template_referencing or "",
    )
    print(json.dumps(argo.status(), indent=2))
    return 0 if argo.phase == "Succeeded" else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("argo", help="run any Argo Workflow YAML with the local executor (Argo v4.1.2 semantics)")
    p.add_argument("action", choices=["run"], help="run: execute the workflow and print its status as JSON")
    p.add_argument("file", help="a YAML file holding one Workflow (and optionally WorkflowTemplates, ConfigMaps)")
    p.add_argument("--templates", metavar="DIR", help="folder of WorkflowTemplate and ConfigMap YAML files")
    p.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="IMAGE=PYTHON_OR_ENV",
        help="run IMAGE's command with this interpreter/environment; unmapped images run on the host shell",
    )
    p.add_argument(
        "-p",
        "--parameter",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a workflow parameter, as `argo submit -p`",
    )
    p.add_argument("--work-dir", metavar="DIR", help="folder for volumes, node logs (default: a new temp folder)")
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where semaphore/mutex holders live; runs sharing it share "
        "their locks (default ~/.cache/infersweep/argo-local)",
    )
    p.add_argument(
        "--template-referencing",
        choices=["Strict", "Secure"],
        help="the controller's workflowRestrictions.templateReferencing: Strict errors a Workflow without "
        "workflowTemplateRef; Secure also errors a running one whose WorkflowTemplate (re-read from FILE and "
        "--templates on every pass) changes",
    )
    p.set_defaults(fn=run)
