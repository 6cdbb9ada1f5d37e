"""Text Argo Workflows v4.1.2 puts in variables, byte for byte: Go's encoding/json and strconv.Quote, and
`{{workflow.failures}}` (workflow/controller/operator.go operate, failedNodeStatus)."""

from __future__ import annotations

import json
import time
from typing import Any, Iterable


def _fnv32a(s: str) -> int:
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def go_json(value: Any) -> str:
    """encoding/json Marshal: compact, HTML-escaped (<, >, & as \\u003c...), U+2028/U+2029 escaped."""
    out = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        out = out.replace(ch, esc)
    return out


def go_quote(s: str) -> str:
    """strconv.Quote: double-quoted, `"` and `\\` escaped, non-printable runes escaped."""
    short = {
        "\a": "\\a",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\v",
        '"': '\\"',
        "\\": "\\\\",
    }
    out = []
    for ch in s:
        if ch in short:
            out.append(short[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def pod_name(wf_name: str, node_name: str, template_name: str) -> str:
    """workflow/util/pod_name.go GeneratePodName (POD_NAMES v2, the default)."""
    if wf_name == node_name:
        return wf_name
    prefix = f"{wf_name}-{template_name}" if template_name else wf_name
    prefix = prefix[: 253 - 10 - 1] if len(prefix) > 253 - 10 - 1 else prefix
    return f"{prefix}-{_fnv32a(node_name)}"


def _metav1_time(t: float) -> str | None:
    # metav1.Time MarshalJSON: RFC3339 in UTC at second resolution; the zero time is null
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)) if t else None


def workflow_failures(wf_name: str, nodes: Iterable[Any]) -> str:
    """operator.go operate: a failedNodeStatus {displayName, message, templateName, phase, podName,
    finishedAt} for every Failed or Error node (in status.nodes map order, which Go leaves random; here
    creation order), json.Marshal'ed (no failures: `null`), then strconv.Quote'd ("necessary so that the
    escaped quotes are not removed during parameter substitution"): the text a container receives is the
    quoted string, outer quotes included."""
    failures = [
        {
            "displayName": n.display_name,
            "message": n.message,
            "templateName": n.template,
            "phase": n.phase,
            "podName": pod_name(wf_name, n.name, n.template),
            "finishedAt": _metav1_time(n.finished),
        }
        for n in nodes
        if n.phase in ("Failed", "Error")
    ]
    return go_quote(go_json(failures or None))
