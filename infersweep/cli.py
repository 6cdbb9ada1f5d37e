"""The laptop entry point. Subcommands live in infersweep/commands/, one module each.

Start-up matters (every render/validate/submit/run pays it): only the chosen command's module is imported,
so `infersweep render` never loads pandas (report/compare/regress) or the Argo Server client. Without a
known command (`infersweep --help`, a typo) every command is registered, for the full list.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import traceback

import infersweep.commands
from infersweep.errors import BUG_EXIT, INTERRUPTED_EXIT, UserError, exit_code


def _command_modules() -> dict[str, str]:
    """Command name -> module name; a module named after a Python keyword ends in `_` (import_ -> import), and
    an underscore is a hyphen in the command (slo_search -> slo-search)."""
    return {m.name.rstrip("_").replace("_", "-"): m.name for m in pkgutil.iter_modules(infersweep.commands.__path__)}


def command_names() -> list[str]:
    return sorted(_command_modules())


def _chosen(argv: list[str], names: list[str]) -> list[str]:
    """The command modules to register: the one argv names (the first non-option word), else all
    (also for `infersweep -h COMMAND`, which prints the top-level help)."""
    for arg in argv:
        if arg in ("-h", "--help"):
            return names
        if not arg.startswith("-"):
            return [arg] if arg in names else names
    return names


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="infersweep", description="Deploy LLM serving graphs with Dynamo and benchmark them, as Argo workflows."
    )
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    modules = _command_modules()
    names = sorted(modules)
    for name in names if argv is None else _chosen(argv, names):
        importlib.import_module(f"infersweep.commands.{modules[name]}").register(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    a = build_parser(argv).parse_args(argv)
    try:
        return a.fn(a)
    except UserError as e:
        # An error the user can fix: one clear line naming the field and the fix, no traceback, and the
        # kind's exit code (2, bad input, unless it says otherwise: infersweep/errors.py exit_code).
        print(f"infersweep: {e}", file=sys.stderr)
        return exit_code(e)
    except KeyboardInterrupt:
        # Ctrl-C is the user's choice, not a failure to explain (`run --local` handles it itself: argo stop)
        print("infersweep: interrupted", file=sys.stderr)
        return INTERRUPTED_EXIT
    except Exception:
        # Anything else is a bug of infersweep (a KeyError included): shown as one, never as bad input.
        traceback.print_exc()
        print(
            "infersweep: internal error (a bug in infersweep, not in your input); the traceback is above",
            file=sys.stderr,
        )
        return BUG_EXIT


if __name__ == "__main__":
    raise SystemExit(main())
