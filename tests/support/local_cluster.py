"""A LocalCluster for executor tests: one folder, no Python environments, a plain PATH."""

from __future__ import annotations

from pathlib import Path

from infersweep.local.argo import LocalCluster


def local_cluster(tmp: Path, state: Path | None = None, cms=None, **more) -> LocalCluster:
    """`more`: any other LocalCluster field (template_referencing, current_templates, ...)."""
    return LocalCluster(
        pythons={},
        pvc_dirs=lambda c: tmp / "pvc" / c,
        run_dir=tmp,
        cwd=tmp,
        env={"PATH": "/usr/bin:/bin"},
        unmapped_on_host=True,
        configmaps=cms or {},
        state_dir=state or tmp / "state",
        **more,
    )
