"""The one root of the errors a user can fix: `UserError`.

Every error that means "your input is wrong" (a recipe, a data file, a `--set`, a rendered document the
schemas refuse, a workflow the local executor rejects) subclasses it, with a message that names the file or
field and the fix. The CLI (infersweep/cli.py main) prints a UserError as one line and exits 2; anything else
is a bug in infersweep and is shown as one, with its traceback and exit code 70 (EX_SOFTWARE, sysexits.h),
never disguised as bad input.

Stdlib only: the CLI imports it at start-up.
"""

from __future__ import annotations

USAGE_EXIT = 2  # argparse's own exit code for a bad command line: bad input, same code
BUG_EXIT = 70  # sysexits.h EX_SOFTWARE: an internal software error
INTERRUPTED_EXIT = 130  # 128 + SIGINT, the shell's code for a command stopped by Ctrl-C

# Every exit code a command of the CLI returns, with what it means: docs/errors.md lists exactly these
# (tests/cli/test_exit_codes.py checks the table and every `return` of infersweep/commands/ against it).
EXIT_CODES = {
    0: "done (a run succeeded, a check passed, a regression verdict of pass or improved)",
    1: "the command worked and the answer is no: a run failed, `validate`/`preflight` found problems, "
    "`regress` found a regression, an experiment has a treatment without results, nothing to export",
    USAGE_EXIT: "bad input",
    3: "no answer from the evidence: `predict` cannot model the recipe, `regress` is inconclusive",
    BUG_EXIT: "a bug in infersweep",
    INTERRUPTED_EXIT: "interrupted (Ctrl-C) outside a run",
}


class UserError(Exception):
    """An error the user can cause and fix: the message says which file/field/argument and how to fix it.

    The CLI prints it as one line, `infersweep: MESSAGE`, and exits with `exit_code(e)`: USAGE_EXIT, unless the
    kind sets its own `exit_code` (a publish that could not upload, a local deployment that would not start:
    the answer is no, 1). Every code a kind sets is in EXIT_CODES (tests/house/test_error_family.py). The base
    sets none on purpose: a step (steps/runner.py) that fails with a UserError caused by a dropped connection
    is retried (75), which an exit_code would override. A kind that other code catches as a ValueError or
    LookupError keeps that base beside this one."""


def exit_code(e: UserError) -> int:
    """The CLI's exit code for a UserError: its kind's own, else USAGE_EXIT (bad input)."""
    return getattr(e, "exit_code", USAGE_EXIT)


class BadArgument(UserError, ValueError):
    """A command-line argument, or a file or folder it names, that cannot be used as given (a --store that is no
    store, a folder to publish with nothing in it, one run where two are needed); the message names it and the
    fix."""
