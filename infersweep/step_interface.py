"""How a pipeline step is declared once: its options, where its WorkflowTemplate takes each value, and the
argparse parser that follows from the same declaration.

A step is a container entry point (`python -m steps.<module>`). Its `Step` lists its `Option`s once, each
with what argparse needs (flag, help, type, default, required, choices) and, when the step's template
passes it, where the value comes from: an Argo input parameter (`input`, whose description is the help),
a fixed value or template expression (`value`, e.g. a path or `{{workflow.name}}`), or a file the
controller reads back as an output parameter (`output`). From that one list follow the template's
inputs, container args and outputs (workflows/steps_library.py renders them with Hera) and the step's
parser (`Step.parser()`, which steps/<module>.py calls in its `main()`); tests/steps/test_step_declarations.py
parses every rendered container's args with its step's own parser, so the two cannot drift.

Standard library only and no Hera: every step imports this (the AIPerf image copies it, see
images/aiperf.Dockerfile), and the declarations themselves live beside it in infersweep/step_declarations.py.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

T = TypeVar("T")

OUT = "/tmp/outputs"  # output parameters are small files the controller reads back
WORKFLOW_NAME = "{{workflow.name}}"
WORKFLOW_NAMESPACE = "{{workflow.namespace}}"
WORKFLOW_UID = "{{workflow.uid}}"


def input_ref(name: str) -> str:
    """The Argo expression of one of the template's input parameters."""
    return "{{inputs.parameters.%s}}" % name


def json_object(text: str) -> dict[str, Any]:
    """argparse type for a JSON-object argument (SLOs, tolerances): bad input is one clear usage error."""
    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


@dataclass(frozen=True)
class Option:
    """One command-line option of a step (or a positional, when `flag` has no leading dash).

    At most one of `input`, `value` and `output` says how the step's WorkflowTemplate fills it; with none,
    the template leaves it out (the parser still accepts it: local tools, init containers, defaults).
    """

    flag: str
    help: str = ""  # also the description of the input parameter it comes from
    note: str = ""  # added to the help in --help only (the Argo UI shows `help`)
    type: Callable[[str], Any] | None = None
    default: Any = None
    required: bool = False
    choices: tuple[str, ...] | None = None
    switch: bool = False  # a flag without a value (store_true)
    nargs: str | None = None
    metavar: str | None = None
    one_of: str | None = None  # options sharing this name: exactly one of them must be given
    input: str | bool = False  # from this Argo input parameter (True: the one named like the flag)
    value: str | bool | None = None  # a fixed value or template expression (True: a switch that is on)
    output: str | None = None  # the step writes this output parameter to the file OUT/<output>
    artifact: str | None = None  # the file `value` names is this optional output artifact

    def __post_init__(self) -> None:
        sources = [s for s in ("input", "value", "output") if getattr(self, s) not in (None, False)]
        if len(sources) > 1:
            raise ValueError(f"{self.flag}: give at most one of input, value, output (got {sources})")
        if self.switch and self.value not in (None, True):
            raise ValueError(f"{self.flag}: a switch is either left out or on (value=True)")
        if self.value is True and not self.switch:
            raise ValueError(f"{self.flag}: value=True is for a switch")
        if self.artifact and not isinstance(self.value, str):
            raise ValueError(f"{self.flag}: an artifact is the file its value names: give value")
        if self.required and self.one_of:
            raise ValueError(f"{self.flag}: a one_of option is required through its group, not on its own")

    @property
    def positional(self) -> bool:
        return not self.flag.startswith("-")

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def input_name(self) -> str | None:
        if self.input is True:
            return self.flag.lstrip("-")
        return self.input or None

    def template_value(self) -> str | bool | None:
        """What the step's WorkflowTemplate passes (None: nothing)."""
        if self.input_name:
            return input_ref(self.input_name)
        if self.output:
            return f"{OUT}/{self.output}"
        return self.value


@dataclass(frozen=True)
class Step:
    """A step, declared once: the parser and the WorkflowTemplate (workflows/steps_library.py) follow."""

    name: str  # the template's name (after the infersweep- prefix) and its container's
    module: str  # steps/<module>.py
    description: str
    options: tuple[Option, ...]
    # Input parameters the container's args do not use (the init container's, the pod's resources).
    extra_inputs: tuple[tuple[str, str], ...] = ()
    image: str = "steps"  # "steps" or "aiperf" (images/<image>.Dockerfile)
    artifacts: tuple[tuple[str, str], ...] = ()  # (name, path)
    # written only on some outcomes (a failure's debug bundle): Argo must not fail the step when absent
    optional_artifacts: tuple[tuple[str, str], ...] = ()
    mounts: tuple[str, ...] = ("workdir",)
    # The mounts it may write; any other is mounted readOnly. The model cache is written by the model-cache
    # step alone: DGD workers later load its files (code too, with trust_remote_code), so a step that only
    # reads a tokenizer from it (aiperf-point) must not be able to change them.
    writes: tuple[str, ...] = ("workdir",)
    env_from_secret: str | None = None
    retry: bool = False  # only steps whose failure is transient and whose rerun cannot lose a measurement
    env: Mapping[str, str] = field(default_factory=dict)
    # The container writes nothing outside its volumes (no output files under /tmp/outputs, no
    # matplotlib cache): its root filesystem can be read-only.
    read_only_root: bool = False
    # activeDeadlineSeconds when params/platform.yaml `steps.deadlines_s` names none for this step
    deadline_s: int = 600
    # False: no WorkflowTemplate of its own (the reaper runs in a CronWorkflow, aiperf-results is a tool)
    template: bool = True

    def __post_init__(self) -> None:
        dests = [o.dest for o in self.options]
        if len(dests) != len(set(dests)):
            raise ValueError(f"step {self.name}: an option is declared twice: {sorted(dests)}")

    # -- the parser ------------------------------------------------------------------------------------
    def parser(self, **types: Callable[[str], Any]) -> argparse.ArgumentParser:
        """The step's argparse parser. `types` (by option dest) refines a declared type with a check that
        needs the step's own code (the AIPerf step's workload keys); it cannot add or rename options."""
        unknown = set(types) - {o.dest for o in self.options}
        if unknown:
            raise ValueError(f"step {self.name}: no option {sorted(unknown)} to refine")
        ap = argparse.ArgumentParser(prog=f"python -m steps.{self.module}", description=self.description)
        groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
        for o in self.options:
            target: Any = ap
            if o.one_of:
                if o.one_of not in groups:
                    groups[o.one_of] = ap.add_mutually_exclusive_group(required=True)
                target = groups[o.one_of]
            # argparse formats help with %: a literal % would crash --help
            kw: dict[str, Any] = {"help": " ".join(filter(None, (o.help, o.note))).replace("%", "%%")}
            if o.switch:
                target.add_argument(o.flag, action="store_true", **kw)
                continue
            kw["type"] = types.get(o.dest, o.type)
            if o.default is not None:
                kw["default"] = o.default
            for key in ("choices", "nargs", "metavar"):
                if getattr(o, key) is not None:
                    kw[key] = list(o.choices) if key == "choices" else getattr(o, key)
            if o.required and not o.positional:
                kw["required"] = True
            target.add_argument(o.flag, **kw)
        return ap

    # -- what the template passes -----------------------------------------------------------------------
    def argv(self, values: Mapping[str, str | bool]) -> list[str]:
        """Container args for `values` (by option dest), in declaration order; an unknown option, a
        missing required one or a group not given exactly once is a ValueError naming the step."""
        unknown = set(values) - {o.dest for o in self.options}
        if unknown:
            raise ValueError(f"step {self.name}: no option {sorted(unknown)}")
        args: list[str] = []
        given: dict[str, list[str]] = {}
        for o in self.options:
            if o.one_of:
                given.setdefault(o.one_of, [])
            v = values.get(o.dest)
            if v is None or v is False:
                if o.required:
                    raise ValueError(f"step {self.name}: {o.flag} is required")
                continue
            if o.one_of:
                given[o.one_of].append(o.flag)
            if o.switch:
                if v is not True:
                    raise ValueError(f"step {self.name}: {o.flag} is a switch: give True")
                args.append(o.flag)
            elif o.positional:
                args.append(str(v))
            else:
                args += [o.flag, str(v)]
        for group, flags in given.items():
            if len(flags) != 1:
                raise ValueError(f"step {self.name}: give exactly one of the {group} options, got {flags}")
        return args

    def template_args(self) -> list[str]:
        values = {o.dest: v for o in self.options if (v := o.template_value()) is not None}
        return self.argv(values)

    def template_inputs(self) -> list[tuple[str, str]]:
        """(name, description) of the template's input parameters: those the options take, then the extra."""
        seen: dict[str, str] = {}
        for o in self.options:
            if o.input_name and o.input_name not in seen:
                seen[o.input_name] = o.help
        for name, description in self.extra_inputs:
            if name in seen:
                raise ValueError(f"step {self.name}: input {name} is declared twice")
            seen[name] = description
        return list(seen.items())

    def template_outputs(self) -> list[tuple[str, str]]:
        """(name, path) of the output parameters."""
        return [(o.output, f"{OUT}/{o.output}") for o in self.options if o.output]

    def template_optional_artifacts(self) -> list[tuple[str, str]]:
        return list(self.optional_artifacts) + [(o.artifact, str(o.value)) for o in self.options if o.artifact]

    def check_arguments(self, arguments: Mapping[str, Any]) -> None:
        """A task's arguments must be exactly the template's inputs: Argo ignores an argument no input
        declares and fails a missing one only when the task runs (argo-workflows
        workflow/common/util.go ProcessArgs walks the template's inputs, "inputs.parameters.%s was not
        supplied"); here both fail at render time."""
        declared = [n for n, _ in self.template_inputs()]
        unknown = sorted(set(arguments) - set(declared))
        missing = [n for n in declared if n not in arguments]
        if unknown or missing:
            raise ValueError(
                f"step {self.name}: arguments {sorted(arguments)} do not match its inputs {declared}"
                + (f"; unknown: {unknown}" if unknown else "")
                + (f"; missing: {missing}" if missing else "")
            )


def write_output_param(path: str | Path | None, value: Any) -> None:
    """Write one output parameter's file, which the controller reads back (a string as is, anything else as
    compact JSON: keep it small); no path, no file."""
    if not path:
        return
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))


def from_args(cls: type[T], args: argparse.Namespace, **given: Any) -> T:
    """A request dataclass from a step's parsed options: each field takes the option of its name (its dest),
    `given` names the fields whose option is spelled otherwise. The step's declaration and the request then
    agree by name, and the step module does not copy every option by hand."""
    taken = {f.name: getattr(args, f.name) for f in fields(cls) if f.name not in given and hasattr(args, f.name)}
    return cls(**taken, **given)
