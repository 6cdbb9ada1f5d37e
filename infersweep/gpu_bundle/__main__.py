"""python -m infersweep.gpu_bundle build --profile NAME [--profile NAME ...] --out DIR

Builds, on a machine with internet, everything a GPU host lacks for the named profiles, and writes the parts,
their manifests and assemble.py into DIR. Copy DIR to the host and run ``python3 DIR/assemble.py --check``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .build import build, load_profile, parse_size, resplit
from .dependency_walk import BundleError

HOST_PACKAGES = Path(__file__).resolve().parents[2] / "images" / "gpu-host" / "h200-python-packages.txt"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="infersweep gpu-bundle", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="fetch, install, trim, pack and split the profiles' sites")
    b.add_argument("--profile", action="append", required=True, help="params/gpu-bundles/<name>.yaml (repeatable)")
    b.add_argument("--host-packages", type=Path, default=HOST_PACKAGES, help="the GPU host's `pip freeze`")
    b.add_argument("--arch", default="sm90", help="the host's GPU architecture (trim rules per profile)")
    b.add_argument("--part-size", default="60MiB", help="largest part (e.g. 60MiB: what one transfer takes)")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "infersweep" / "gpu-bundle")
    r = sub.add_parser("resplit", help="cut a built bundle's parts again at another size")
    r.add_argument("manifest", type=Path, nargs="+", help="<site>.manifest.json")
    r.add_argument("--part-size", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "resplit":
        try:
            for m in args.manifest:
                out = resplit(m, parse_size(args.part_size))
                print(f"gpu-bundle: {out['site']}: {len(out['parts'])} parts of at most {args.part_size}")
        except BundleError as e:
            print(f"gpu-bundle: {e}", file=sys.stderr)
            return 2
        return 0
    try:
        if not args.host_packages.is_file():
            raise BundleError(f"--host-packages {args.host_packages}: no such file; run `pip freeze` on the host")
        part = parse_size(args.part_size)
        for name in args.profile:
            m = build(load_profile(name), args.host_packages, args.arch, part, args.out, args.cache)
            size = sum(p["bytes"] for p in m["parts"])
            print(
                f"gpu-bundle: {m['site']}: {len(m['wheels'])} wheels, {sum(t['files'] for t in m['trimmed'])} files "
                f"({sum(t['bytes'] for t in m['trimmed']) / 2**20:.0f} MiB) trimmed, "
                f"{size / 2**20:.0f} MiB in {len(m['parts'])} parts -> {args.out}"
            )
    except BundleError as e:
        print(f"gpu-bundle: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
