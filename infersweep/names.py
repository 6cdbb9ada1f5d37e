"""Kubernetes-safe names and label values, whatever text they come from.

A recipe name is *validated* (refused when it is not a DNS-1123 label, see infersweep.recipe), but some
names are built from other text: a run id from a recipe name and a timestamp, a label value from a model id
like `nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8` ('/' is not allowed in a label value). These helpers
turn any text into a valid name. When the text had to be changed (characters replaced, cut to length), a
short hash of the original is appended, so two different inputs never map to the same name (two runs or
two models must not share a label value or a resource by accident).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from infersweep import k8s_types

DNS_LABEL_MAX = 63
LABEL_VALUE_MAX = 63
# The grammars are infersweep/k8s_types.py's; \Z, not $: a name with a trailing newline is no name.
_DNS_LABEL_RE = re.compile(rf"^{k8s_types.DNS_LABEL}\Z")
_LABEL_VALUE_RE = re.compile(rf"^{k8s_types.LABEL_VALUE}\Z")
_HASH_LEN = 8


def is_dns_label(text: str) -> bool:
    return len(text) <= DNS_LABEL_MAX and bool(_DNS_LABEL_RE.match(text))


def is_label_value(text: str) -> bool:
    return len(text) <= LABEL_VALUE_MAX and bool(_LABEL_VALUE_RE.match(text))


def _ascii(text: str) -> str:
    # Compatibility decomposition folds what has an ASCII reading ('ｎ' -> 'n', 'é' -> 'e'); what has none
    # (a Cyrillic 'о' that only looks like 'o') is dropped by the encode and then replaced below. Folding
    # never makes a look-alike *equal* to the real name: the hash suffix tells them apart.
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LEN]


def _fit(base: str, original: str, max_len: int, changed: bool, strip: str) -> str:
    if len(base) > max_len:
        changed = True
    if not changed:
        return base
    suffix = _digest(original)
    head = base[: max_len - _HASH_LEN - 1].strip(strip)
    return f"{head}-{suffix}" if head else suffix


def dns_label(text: str, max_len: int = DNS_LABEL_MAX) -> str:
    """A DNS-1123 label (lowercase alphanumerics and '-', alphanumeric at both ends, <= max_len).

    Valid input comes back unchanged; anything else is folded to lowercase ASCII, runs of other
    characters become one '-', and a hash of the original is appended.
    """
    if not 1 <= max_len <= DNS_LABEL_MAX:
        raise ValueError(f"max_len must be 1..{DNS_LABEL_MAX}")
    if len(text) <= max_len and _DNS_LABEL_RE.match(text):
        return text
    base = re.sub(r"[^a-z0-9]+", "-", _ascii(text).lower()).strip("-")
    return _fit(base, text, max_len, True, "-")


def label_value(text: str, max_len: int = LABEL_VALUE_MAX) -> str:
    """A Kubernetes label value ([A-Za-z0-9._-], alphanumeric at both ends, <= max_len; may be empty).

    `nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8` becomes `nvidia_NVIDIA-Nemotron-3-Nano-30B-A3B-FP8-<hash>`:
    still readable in `kubectl get -L`, and distinct from any other id.
    """
    if not 1 <= max_len <= LABEL_VALUE_MAX:
        raise ValueError(f"max_len must be 1..{LABEL_VALUE_MAX}")
    if len(text) <= max_len and _LABEL_VALUE_RE.match(text):
        return text
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", _ascii(text))
    base = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", base)
    return _fit(base, text, max_len, True, "-_.")


# Older Dynamo operators refuse a DynamoGraphDeployment whose name is longer than 45 characters (the
# operator derives Service/Deployment names from it); issue 10 measured 25 of the 47 catalog recipes over it.
DGD_NAME_MAX = 45
_RUN_SUFFIX_LEN = 6


def dgd_run_name(base: str, run_id: str) -> str:
    """The DGD of one run: `<base, cut>-<6 hex of the run id>`, a DNS label of at most 45 characters.

    Per run, so two runs of one recipe (a nightly and an ad-hoc submit, or a resubmit) never share, patch
    or delete each other's deployment; deterministic, so every step of the run (deploy, wait-ready, the
    points' ensure-deployed, teardown, the exit handler) computes the same name from `{{workflow.name}}`
    without passing it around. The full run id is on the DGD as a label.
    """
    if not run_id:
        raise ValueError("dgd_run_name: run_id is empty (pass {{workflow.name}})")
    suffix = _digest(run_id)[:_RUN_SUFFIX_LEN]
    head = dns_label(base)[: DGD_NAME_MAX - _RUN_SUFFIX_LEN - 1].strip("-")
    return f"{head}-{suffix}" if head else suffix
