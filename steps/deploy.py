"""Step: apply the DGD given as YAML text; print and output the frontend URL."""

from __future__ import annotations

import argparse
import sys

import yaml

from steps.outputs import write_param
from steps.platform import get_platform


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.deploy")
    ap.add_argument("--dgd", required=True, help="the DynamoGraphDeployment as YAML text")
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--owner-name", default="", help="Workflow that owns the DGD (garbage collection)")
    ap.add_argument("--owner-uid", default="")
    ap.add_argument("--url-param", default="", help="file to write the frontend URL to (Argo output parameter)")
    a = ap.parse_args(argv)
    dgd = yaml.safe_load(a.dgd)
    if not isinstance(dgd, dict) or dgd.get("kind") != "DynamoGraphDeployment":
        print("deploy: --dgd is not a DynamoGraphDeployment document", file=sys.stderr)
        return 2
    owner = {"name": a.owner_name, "uid": a.owner_uid} if a.owner_uid else None
    url = get_platform().apply_dgd(dgd, a.namespace, owner)
    write_param(a.url_param, url)
    print(f"applied {dgd['apiVersion']} DynamoGraphDeployment {a.namespace}/{dgd['metadata']['name']}; frontend {url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
