"""Step: make sure the model-cache PVC exists (create it if missing, leave it alone if present)."""

from __future__ import annotations

import argparse

from steps.platform import get_platform


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.ensure_pvc")
    ap.add_argument("--name", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--size", required=True)
    ap.add_argument("--storage-class", default="")
    a = ap.parse_args(argv)
    state = get_platform().ensure_pvc(a.name, a.namespace, a.size, a.storage_class)
    print(f"pvc {a.namespace}/{a.name}: {state}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
