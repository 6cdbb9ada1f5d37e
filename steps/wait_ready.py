"""Step: wait until the run's DGD serves the model, failing fast (with the reason) when it never will.

The reason is the last line on stderr, which Argo shows as the step's message; the debug bundle (DGD
status, pods, events, last log lines) goes to --bundle, an optional output artifact of the template.
Once ready, the images the deployment's pods actually run (container image -> imageID with its digest,
from pod status) go to --images for the run context: a tag can move, a digest cannot.
On success, --ready-file records the deployment's time-to-ready (from the DGD's creation to serving):
the results table carries it as a context column (infersweep.results.context).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import yaml

from steps import transient
from steps.platform import DGDOwnedElsewhere, dgd_name, get_platform
from infersweep.step_declarations import WAIT_READY


def main(argv: list[str] | None = None) -> int:
    a = WAIT_READY.parser().parse_args(argv)
    name = dgd_name(a.name, a.run_id)
    platform = get_platform()
    if a.ensure_from and Path(a.ensure_from).is_file():
        saved = yaml.safe_load(Path(a.ensure_from).read_text())
        owners = [o for o in saved["metadata"].get("ownerReferences") or [] if o.get("kind") == "Workflow"]
        try:
            platform.apply_dgd(saved, a.namespace, owners[0] if owners else None, patch_own=False)
        except DGDOwnedElsewhere as e:
            print(f"wait-ready: {e}", file=sys.stderr)
            return 1
    try:
        took = platform.wait_ready(name, a.namespace, a.model, a.timeout_s, api_version=a.api_version,
                                   bundle_path=Path(a.bundle) if a.bundle else None)
    except (TimeoutError, RuntimeError) as e:
        message = f"{a.namespace}/{name} is not serving: {e}"
        print(f"wait-ready: {message}", file=sys.stderr)
        if a.failure:
            Path(a.failure).parent.mkdir(parents=True, exist_ok=True)
            Path(a.failure).write_text(message + "\n")
        return 1
    print(f"{a.namespace}/{name} serves {a.model} after {took:.1f} s")
    if a.images:
        images = platform.image_ids(name, a.namespace)
        Path(a.images).parent.mkdir(parents=True, exist_ok=True)
        Path(a.images).write_text(json.dumps(images, indent=2, sort_keys=True) + "\n")
        for image, image_id in sorted(images.items()):
            print(f"  runs {image} = {image_id}")
    if a.ready_file:
        write_ready_file(Path(a.ready_file), name, a.namespace, a.api_version, waited_s=took)
    return 0


def write_ready_file(path: Path, name: str, namespace: str, api_version: str, *, waited_s: float) -> None:
    ready_at = time.time()
    try:
        applied_at = get_platform().applied_at(name, namespace, api_version)
    except Exception as e:  # the record enriches a run: never fail a served deployment over it
        print(f"wait-ready: cannot read when {name} was applied: {e}", file=sys.stderr)
        applied_at = None
    record = {"dgd": name, "applied_at": applied_at, "ready_at": ready_at, "waited_s": round(waited_s, 3),
              "time_to_ready_s": round(ready_at - applied_at, 3) if applied_at else None}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n")


if __name__ == "__main__":
    raise SystemExit(transient.run(main, "wait-ready"))
