"""Reading an engine's command line as argparse would: the last `--name value` / `--name=value` wins."""

from __future__ import annotations

from typing import Sequence


def flag_value(args: Sequence[str], *names: str) -> str | None:
    """Value of the last `--name value` / `--name=value` among `names`, else None."""
    value = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                value = args[i + 1]
            elif arg.startswith(name + "="):
                value = arg.split("=", 1)[1]
    return value


def has_switch(args: Sequence[str], *names: str) -> bool:
    return any(arg in names for arg in args)


def drop_flags(args: Sequence[str], names: Sequence[str]) -> list[str]:
    """args without `--name value` / `--name=value` for each of names."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in names:
            skip = True
            continue
        if any(arg.startswith(n + "=") for n in names):
            continue
        out.append(arg)
    return out
