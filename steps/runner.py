"""The one way out of every step: `python -m steps.<module>` ends in `run(main, STEP)`, which turns what
`main` returned or raised into the exit code the step's WorkflowTemplate acts on.

| outcome                                                        | exit | Argo                          |
|----------------------------------------------------------------|------|-------------------------------|
| `main` returns N                                               | N    | 0 Succeeded, else Failed      |
| an error carrying `causes`, each of them transient (publish's  | 75   | retried, on the steps whose   |
|   PublishError: S3 unreachable or throttled for every key)     |      |   template has a retryStrategy |
| an error that says its own exit code (`exit_code`: BadInput 2, | that | Failed, not retried           |
|   PlatformError 1, PublishConflict 2): its message only        |      |                               |
| an error a rerun can outlive (steps/transient.py is_transient: | 75   | retried, as above             |
|   an API/S3 hiccup, throttling, a dropped connection)          |      |                               |
| anything else (a bug): its type and message                    | 1    | Failed, not retried           |

Argo v4.1.2 workflow/controller/operator.go processNodeRetries: with `retryPolicy: Always` and the template's
`expression` (`asInt(lastRetry.exitCode) == 75`), exactly the 75s are retried. The last stderr line is the
step's message in the Argo UI, so each error ends with one line naming the step.

Standard library only: the AIPerf image copies this file (images/aiperf.Dockerfile).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Mapping

from steps.transient import TRANSIENT_EXIT, is_transient


def exit_code(exc: BaseException) -> int:
    """The exit code of a step that raised `exc`: an error over several calls whose every cause is transient
    is 75 (publish: S3 unreachable for each key); else an error's own code (a refusal stays a refusal, even
    when an API error caused it); else 75 for a transient error, 1 for anything else."""
    causes = getattr(exc, "causes", None)
    if isinstance(causes, list) and causes and all(is_transient(c) for c in causes):
        return TRANSIENT_EXIT
    code = getattr(exc, "exit_code", None)
    if isinstance(code, int) and code > 0:
        return code
    return TRANSIENT_EXIT if is_transient(exc) else 1


def run(main: Callable[[], int], step: Any, labels: Mapping[type, str] | None = None) -> int:
    """Run a step's main (`step`: its declaration, or its name) and return its exit code (see the table).
    `labels` names the speaker of an error kind when it is not the step (e.g. deploy's --ensure)."""
    name = getattr(step, "name", step)
    try:
        return main()
    except Exception as e:  # noqa: BLE001 - every failure leaves through here, classified
        code = exit_code(e)
        label = next((n for kind, n in (labels or {}).items() if isinstance(e, kind)), name)
        # The project's own errors say what happened and how to fix it: their message alone. Anything else
        # (a library's error, a bug) also names its type.
        # The kind goes first: a message's last line may be a command to copy (publish's resume command).
        own = type(e).__module__.split(".")[0] == "infersweep"
        kind = " (transient: Argo retries it)" if code == TRANSIENT_EXIT else "" if own else " (not transient)"
        print(f"{label}{kind}: {e if own else f'{type(e).__name__}: {e}'}", file=sys.stderr)
        return code


def main_of(main: Callable[[], int], step: Any, labels: Mapping[type, str] | None = None) -> None:
    """`if __name__ == "__main__": main_of(main, STEP)`: exit with run()'s code."""
    sys.exit(run(main, step, labels))
