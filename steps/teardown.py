"""Step: delete the DGD. Idempotent: it runs after the sweep and again in the exit handler."""

from __future__ import annotations

import argparse

from steps.platform import get_platform


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.teardown")
    ap.add_argument("--name", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--api-version", default="v1beta1")
    a = ap.parse_args(argv)
    deleted = get_platform().delete_dgd(a.name, a.namespace, a.api_version)
    print(f"DGD {a.namespace}/{a.name}: {'deleted' if deleted else 'already gone'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
