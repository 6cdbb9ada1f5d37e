"""Kubernetes field grammars, in one place: names, label values and resource quantities, as the API server
checks them (k8s.io/apimachinery at eed236c). Every model that takes such a field (recipe/facts.py,
recipe/models.py, cluster_settings.py, names.py, schemas/) checks it here, so a value one accepts the
others accept too.

Each check is a `fullmatch`: a pattern anchored with `$` would also accept the value with a trailing newline.
"""

from __future__ import annotations

import re
from typing import Any

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
