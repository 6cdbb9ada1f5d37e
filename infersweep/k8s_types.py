"""Kubernetes field grammars, in one place: names, label values and resource quantities, as the API server
checks them (k8s.io/apimachinery at eed236c). Every model that takes such a field (recipe/facts.py,
recipe/models.py, cluster_settings.py, names.py, schemas/) checks it here, so a value one accepts the
others accept too. Below them, the grammars of the other values the cluster's objects carry (params/cluster.yaml
writes them into pod specs, Argo's artifact repository and CronWorkflows): image references, durations, cron
schedules, time zones, S3 buckets, prefixes and endpoints, registry and Git hosts.

Each check is a `fullmatch`: a pattern anchored with `$` would also accept the value with a trailing newline.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Any, Callable

# pkg/util/validation/validation.go dns1123LabelFmt / DNS1123LabelMaxLength (IsDNS1123Label).
DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL_MAX = 63
# pkg/util/validation/validation.go dns1123SubdomainFmt / DNS1123SubdomainMaxLength (IsDNS1123Subdomain).
DNS_SUBDOMAIN = DNS_LABEL + r"(\." + DNS_LABEL + r")*"
DNS_SUBDOMAIN_MAX = 253
# pkg/util/validation/validation.go qualifiedNameFmt (the name part of a label key) and labelValueFmt.
QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE = r"(" + QUALIFIED_NAME + r")?"
LABEL_VALUE_MAX = 63  # LabelValueMaxLength
# pkg/api/resource/quantity.go, the serialization format:
#   <quantity> ::= <signedNumber><suffix>;  <number> ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
#   <suffix> ::= <binarySI> (Ki|Mi|Gi|Ti|Pi|Ei) | <decimalExponent> (e|E <signedNumber>) | <decimalSI>
#   (suffix.go also parses n and u: m | "" | k | M | G | T | P | E plus n, u)
# This is the same pattern controller-gen writes into every CRD's quantity fields (the Dynamo CRDs under
# shared/reference/dynamo/crds carry it 56 times).
_NUMBER = r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
QUANTITY = r"[+-]?" + _NUMBER + r"(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?" + _NUMBER + r"))?"
QUANTITY_MAX = 64  # no quantity this long is meant; keeps a pasted blob out of a manifest

_DNS_LABEL_RE = re.compile(DNS_LABEL)
_DNS_SUBDOMAIN_RE = re.compile(DNS_SUBDOMAIN)
_QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE)
_QUANTITY_RE = re.compile(QUANTITY)


def is_dns_label(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= DNS_LABEL_MAX and _DNS_LABEL_RE.fullmatch(v) is not None


def is_dns_subdomain(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= DNS_SUBDOMAIN_MAX and _DNS_SUBDOMAIN_RE.fullmatch(v) is not None


def is_qualified_name(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= 63 and _QUALIFIED_NAME_RE.fullmatch(v) is not None


def is_label_value(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= LABEL_VALUE_MAX and _LABEL_VALUE_RE.fullmatch(v) is not None


def is_quantity(v: Any, *, positive: bool = False) -> bool:
    """A resource.Quantity string. `positive`: a request or size, which must be more than zero (the API server
    refuses a negative request, validation.ValidateResourceQuantityValue; a zero size is a mistake)."""
    if not (isinstance(v, str) and len(v) <= QUANTITY_MAX and _QUANTITY_RE.fullmatch(v)):
        return False
    if positive:
        mantissa = re.match(r"[+-]?[0-9.]*", v).group(0)
        return not v.startswith("-") and re.search(r"[1-9]", mantissa) is not None
    return True


# ------------------------------------------------------------- the values the cluster's other objects carry


def matches(pattern: str, max_len: int = 253) -> Callable[[Any], bool]:
    """A check that a value is a string of at most max_len that fullmatches pattern."""
    rx = re.compile(pattern)
    return lambda v: isinstance(v, str) and len(v) <= max_len and bool(rx.fullmatch(v))


# pkg/util/validation/validation.go configMapKeyFmt (IsConfigMapKey).
CONFIGMAP_KEY = r"[-._a-zA-Z0-9]+"
# S3 bucket naming rules (docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
S3_BUCKET = r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]"
# A key prefix without a leading or trailing '/': the run's keys are <prefix>/<recipe>/<run-id>/...
S3_PREFIX = r"[A-Za-z0-9!_.*'()-]+(/[A-Za-z0-9!_.*'()-]+)*"
# A host[:port] without a scheme (Argo's s3.endpoint), and an AWS region name.
HOST_PORT = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?"
REGION = r"[a-z0-9][a-z0-9-]*[a-z0-9]"
# An image reference (distribution/reference grammar, simplified): [registry[:port]/]path[:tag][@digest].
IMAGE_REF = (
    r"([a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?(:[0-9]+)?/)?[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?"
)
# The start of an image reference: a registry[:port]/ and path components, ending in '/'.
REGISTRY_PREFIX = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]+)?/([a-z0-9]+([._-][a-z0-9]+)*/)*"
# an https host[:port]; http://127.0.0.1:PORT / http://localhost:PORT for a server on the same machine only
GIT_HOST = HOST_PORT + r"|http://(127\.0\.0\.1|localhost):[0-9]{1,5}"
# Argo Backoff.duration / maxDuration: a Go duration ("10s", "1m30s") or a number of seconds ("10").
DURATION = r"[0-9]+|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+"
URL = r"https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~/-]*)?"
_CRON_FIELD = r"[0-9A-Za-z*?/,-]+"
_CRON_EVERY = r"@every [0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h)([0-9]+(ns|us|ms|s|m|h))*"
_CRON_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def is_cron(v: Any) -> bool:
    """An Argo CronWorkflow schedule: a robfig/cron v3 standard spec, five fields or an @descriptor
    (argo-workflows workflow/cron/operator.go uses cron.ParseStandard)."""
    if not isinstance(v, str):
        return False
    if v.startswith("@"):
        return v in _CRON_DESCRIPTORS or bool(re.fullmatch(_CRON_EVERY, v))
    fields = v.split()
    return len(fields) == 5 and all(re.fullmatch(_CRON_FIELD, f) for f in fields)


def is_timezone(v: Any) -> bool:
    """An IANA time zone this machine's tz database knows (a CronWorkflow's timezone)."""
    if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z0-9_+/-]+", v):
        return False
    try:
        zoneinfo.ZoneInfo(v)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True
