"""Templates and their variables: `{{...}}` substitution (workflow/common/util.go SubstituteParams), arguments
(ProcessArgs), template resolution (workflow/templateresolution), items and sequences (operator.go processItem,
expandSequence) and Go durations (wfv1.ParseStringToDuration)."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from infersweep.local.argo import text as argo_text
from infersweep.local.argo.errors import WorkflowError
from infersweep.local.argo.nodes import _iso

VAR_RE = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")


# Template prefixes a leaf template must have resolved (validate.go checkValidWorkflowVariablePrefix).
_CHECKED_PREFIXES = ("inputs.", "outputs.", "item", "tasks.", "steps.", "workflow.")


# common.go AbsentOptionalArgumentValue (argo-workflows v4.1.2 workflow/common/common.go:296): an argument that
# was a pure reference to a skipped/omitted node's output with no producer default.
ABSENT_OPTIONAL = "__argo-internal.absent-optional-output__"


def render_item(item: Any) -> str:
    """operator.go processItem: numbers and booleans render as JSON text (`true`, `1000`), strings as
    themselves, maps and lists as compact JSON with sorted keys (Go's json.Marshal)."""
    if isinstance(item, str):
        return item
    return json.dumps(item, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _substitute(value: Any, scope: dict[str, str], strict: bool = True) -> Any:
    if isinstance(value, str):

        def repl(mt: re.Match) -> str:
            key = mt.group(1).strip()
            if key in scope:
                return scope[key]
            if strict:
                raise WorkflowError(f"failed to resolve {{{{{key}}}}}")
            return mt.group(0)

        return VAR_RE.sub(repl, value)
    if isinstance(value, list):
        return [_substitute(v, scope, strict) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, scope, strict) for k, v in value.items()}
    return value


def check_resolved(arguments: Any, prefix: str) -> None:
    """WorkflowError naming the first `{{tasks.X...}}` / `{{steps.X...}}` a task's or step's arguments still hold
    after substitution (dag.go resolveDependencyReferences, steps.go resolveReferences: "Unable to resolve")."""
    leftovers = [
        m.group(1).strip() for m in VAR_RE.finditer(json.dumps(arguments)) if m.group(1).strip().startswith(prefix)
    ]
    if leftovers:
        raise WorkflowError(f"Unable to resolve: {{{{{leftovers[0]}}}}}")


def _str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _sequence(seq: dict[str, Any]) -> list[str]:
    # operator.go expandSequence
    fmt = seq.get("format") or "%d"
    start = int(str(seq.get("start", 0)))
    if "count" in seq and "end" in seq:
        raise WorkflowError("only one of count or end can be defined in withSequence")
    if "count" in seq:
        end = start + int(str(seq["count"])) - 1
        if int(str(seq["count"])) == 0:
            return []
    else:
        end = int(str(seq.get("end", 0)))
    step = 1 if end >= start else -1
    return [fmt % i for i in range(start, end + step, step)]


def parse_duration(v: Any) -> float:
    """wfv1.ParseStringToDuration: a bare number is seconds, else a Go duration (1s, 500ms, 1m30s)."""
    s = str(v).strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    total, pos = 0.0, 0
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    for mt in re.finditer(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", s):
        if mt.start() != pos:
            break
        total += float(mt.group(1)) * units[mt.group(2)]
        pos = mt.end()
    if pos != len(s) or not s:
        raise WorkflowError(f"invalid duration {s!r}")
    return total


class TemplateResolution:
    """Spec merging, global parameters, template lookup and ProcessArgs; mixed into LocalArgo."""

    def _merged_spec(self, wf: dict[str, Any]) -> dict[str, Any]:
        spec = dict(wf["spec"])
        ref = spec.pop("workflowTemplateRef", None)
        if not ref:
            spec["_scope"] = ""
            return spec
        base = self.wts.get(ref["name"])
        if base is None:
            raise WorkflowError(f'workflowtemplates.argoproj.io "{ref["name"]}" not found (workflowTemplateRef)')
        # operator.go setExecWorkflow / util JoinWorkflowSpec: the Workflow's fields win over the template's,
        # arguments merge parameter by parameter.
        merged = {**base["spec"], **{k: v for k, v in spec.items() if k != "arguments"}}
        given = {p["name"]: p for p in spec.get("arguments", {}).get("parameters", [])}
        params = [given.pop(p["name"], p) for p in base["spec"].get("arguments", {}).get("parameters", [])]
        merged["arguments"] = {"parameters": params + list(given.values())}
        merged["_scope"] = ref["name"]
        return merged

    def _global_params(self) -> dict[str, str]:
        out = {}
        for p in self.spec.get("arguments", {}).get("parameters", []):
            if "value" not in p:
                if p.get("valueFrom"):
                    raise WorkflowError(f"workflow parameter {p['name']!r}: valueFrom is not supported locally")
                raise WorkflowError(f"spec.arguments.{p['name']}.value is required; pass it with --set {p['name']}=...")
            if p.get("enum") and str(p["value"]) not in [str(e) for e in p["enum"]]:
                raise WorkflowError(f"workflow parameter {p['name']!r}={p['value']!r} is not one of {p['enum']}")
            out[p["name"]] = _str(p["value"])
        return out

    def globals(self) -> dict[str, str]:
        s = {f"workflow.parameters.{k}": v for k, v in self.params.items()}
        s["workflow.parameters"] = json.dumps([{"name": k, "value": v} for k, v in self.params.items()])
        s.update(
            {
                "workflow.name": self.name,
                "workflow.namespace": self.namespace,
                "workflow.uid": self.uid,
                "workflow.serviceAccountName": self.spec.get("serviceAccountName", "default"),
            }
        )
        for k, v in (self.workflow.get("metadata", {}).get("labels") or {}).items():
            s[f"workflow.labels.{k}"] = str(v)
        for k, v in (self.workflow.get("metadata", {}).get("annotations") or {}).items():
            s[f"workflow.annotations.{k}"] = str(v)
        if getattr(self, "_workflow_status", None):
            # operator.go operate: workflow.status / workflow.failures are set once the entry node is done
            s["workflow.status"] = self._workflow_status
            s["workflow.failures"] = argo_text.workflow_failures(self.name, self.nodes.values())
        if self.started_at:
            s["workflow.creationTimestamp"] = _iso(self.started_at)
            s["workflow.duration"] = f"{time.time() - self.started_at:.6f}"
        return s

    def resolve(self, holder: dict[str, Any], scope: str) -> tuple[dict[str, Any], str]:
        """templateresolution ResolveTemplate: `template` within the current scope, `templateRef` in a
        WorkflowTemplate (ClusterWorkflowTemplates are not available locally)."""
        ref = holder.get("templateRef")
        if ref:
            if ref.get("clusterScope"):
                raise WorkflowError("templateRef.clusterScope: ClusterWorkflowTemplates are not supported locally")
            wt = self.wts.get(ref["name"])
            if wt is None:
                raise WorkflowError(f'workflowtemplates.argoproj.io "{ref["name"]}" not found')
            tmpls, tname, scope = wt["spec"].get("templates", []), ref["template"], ref["name"]
        else:
            tmpls = (self.wts[scope]["spec"] if scope else self.spec).get("templates", [])
            tname = holder.get("template")
            if holder.get("inline"):
                raise WorkflowError("inline templates are not supported locally")
        for t in tmpls:
            if t["name"] == tname:
                return t, scope
        where = f"workflow template {scope}" if scope else "the workflow"
        raise WorkflowError(f"template {tname} not found in {where}")

    def _process_args(
        self, tmpl: dict[str, Any], args: dict[str, Any], node_name: str, holder: dict[str, Any], local: dict[str, str]
    ) -> dict[str, Any]:
        """common.ProcessArgs: input parameters from arguments, else their default; then substitute
        globals + inputs into the template."""
        given = {p["name"]: p for p in (args or {}).get("parameters", []) or []}
        values: dict[str, str] = {}
        for p in (tmpl.get("inputs") or {}).get("parameters", []) or []:
            if (given.get(p["name"]) or {}).get("value") == ABSENT_OPTIONAL:
                # common/util.go ProcessArgs :212-219 (v4.1.2): a pure reference to a skipped task's output
                # without a default is "not supplied": the input's own value/default applies, else a terminal error
                if "value" not in p and "default" not in p:
                    raise WorkflowError(
                        f"inputs.parameters.{p['name']}: argument references an absent optional "
                        "(skipped/omitted node output with no default)"
                    )
                values[p["name"]] = _str(p["value"] if "value" in p else p["default"])
            elif p["name"] in given and ("value" in given[p["name"]]):
                values[p["name"]] = _str(given[p["name"]]["value"])
            elif "value" in p:
                values[p["name"]] = _str(p["value"])
            elif "default" in p:
                values[p["name"]] = _str(p["default"])
            else:
                raise WorkflowError(f"inputs.parameters.{p['name']} was not supplied")
            if p.get("enum") and values[p["name"]] not in [str(e) for e in p["enum"]]:
                raise WorkflowError(
                    f"inputs.parameters.{p['name']}: value {values[p['name']]!r} is not in enum {p['enum']}"
                )
        scope = self.globals() | {f"inputs.parameters.{k}": v for k, v in values.items()} | local
        scope["inputs.parameters"] = json.dumps([{"name": k, "value": v} for k, v in values.items()])
        scope["node.name"] = node_name
        if "name" in holder and holder.get("_kind") == "task":
            scope["tasks.name"] = holder["name"]
        raw = ("dag", "steps", "outputs", "container", "script")
        body = {k: v for k, v in tmpl.items() if k not in raw}
        out = _substitute(body, scope, strict=False)
        # A container's own paths are mapped to this machine before parameters are filled in (a parameter
        # value may already be a host path), so it is kept raw with its scope (see _pod_command).
        for k in ("container", "script"):
            if k in tmpl:
                out[k] = tmpl[k]
        out["_scope"] = scope
        # A DAG's tasks are substituted later, with task outputs in scope (dag.go resolveDependencyReferences)
        for k in ("dag", "steps"):
            if k in tmpl:
                out[k] = _substitute(
                    tmpl[k],
                    {kk: vv for kk, vv in scope.items() if kk.startswith(("inputs.", "workflow."))},
                    strict=False,
                )
        if "outputs" in tmpl:
            out["outputs"] = tmpl["outputs"]
        out["_inputs"] = values
        return out
