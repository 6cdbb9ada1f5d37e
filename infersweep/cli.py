"""The laptop entry point. Subcommands live in infersweep/commands/, one module each."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import infersweep.commands
from infersweep.recipe import RecipeError


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="infersweep",
                                 description="Deploy LLM serving graphs with Dynamo and benchmark them, as Argo workflows.")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for mod in sorted(pkgutil.iter_modules(infersweep.commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"infersweep.commands.{mod.name}").register(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        return a.fn(a)
    except (RecipeError, KeyError) as e:
        # Bad input: one clear line, no traceback, nothing touched.
        print(f"infersweep: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
