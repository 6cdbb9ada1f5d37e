"""`when` as Argo Workflows v4.1.2 evaluates it: govaluate (github.com/Knetic/govaluate 7625b7f, the
version go.mod pins), with every bare word turned into a string.

workflow/controller/steps.go shouldExecute: NewEvaluableExpression(when); on a parse error "Invalid 'when'
expression '%s': %v" (with a quoting hint when govaluate says "Invalid token"); then every VARIABLE token
becomes a STRING token of its own text (so `foo != bar` compares the strings "foo" and "bar"), the
expression is re-planned from the tokens (NewEvaluableExpressionFromTokens), evaluated with no parameters
("Failed to evaluate 'when' expresion '%s': %v"), and a non-bool result is "Expected boolean evaluation
for '%s'. Got %v".

govaluate, as ported here:
- parsing.go readToken: numbers (float64, `0x` hex) start with a digit; a word starts with a letter and
  runs over letters, digits, `_` and `.` (`true`/`false` are booleans, `in`/`IN` the comparator, a word with
  a `.` is an ACCESSOR, which Argo does *not* turn into a string: evaluating it fails "No parameter ...");
  `[...]` is an escaped variable; `'...'`/`"..."` a string (ended by either quote; `\\` escapes), a string
  that parses as a date is a TIME (its Unix seconds); anything else is read as a run of symbol characters,
  breaking at whitespace, and must be a known operator ("Invalid token: '%s'").
- lexerState.go checkExpressionSyntax: a value cannot follow a value ("Cannot transition token types ...").
- stagePlanner.go precedence, lowest first: `,` ; `?` `:` `??` ; `||` ; `&&` ; comparators
  (== != > >= < <= =~ !~ in) ; bitwise | & ^ ; shifts ; + - ; * / % ; ** ; prefix ! - ~ ; values/parens.
  Same-precedence chains are left-associative (reorderStages).
- evaluationStage.go: == / != are reflect.DeepEqual (a number never equals a string); < > <= >= need two
  numbers or two strings; + concatenates when either side is a string; =~ / !~ need a string and a
  regexp (RE2 here approximated by Python's re); `in` needs a list on the right (`x in (a, b)`); && || need
  bools and short-circuit (EvaluableExpression.evaluateStage); `?` needs a bool.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any, Callable


class WhenError(ValueError):
    pass


class _ParseError(Exception):
    pass


class _EvalError(Exception):
    pass


_NUMERIC, _BOOLEAN, _STRING, _PATTERN, _TIME, _VARIABLE, _ACCESSOR = (
    "NUMERIC",
    "BOOLEAN",
    "STRING",
    "PATTERN",
    "TIME",
    "VARIABLE",
    "ACCESSOR",
)
_CLAUSE, _CLAUSE_CLOSE, _SEPARATOR = "CLAUSE", "CLAUSE_CLOSE", "SEPARATOR"
_PREFIX, _MODIFIER, _LOGICALOP, _COMPARATOR, _TERNARY = "PREFIX", "MODIFIER", "LOGICALOP", "COMPARATOR", "TERNARY"
_VALUES = (_NUMERIC, _BOOLEAN, _STRING, _PATTERN, _TIME, _VARIABLE, _ACCESSOR)

_PREFIXES = {"-", "!", "~"}
_MODIFIERS = {"+", "-", "*", "/", "%", "**", "&", "|", "^", ">>", "<<"}
_LOGICAL = {"&&", "||"}
_COMPARATORS = {"==", "!=", ">", ">=", "<", "<=", "=~", "!~", "in"}
_TERNARIES = {"?", ":", "??"}

# parsing.go tryParseTime, as strptime formats (Go layouts in the comments).
_TIME_FORMATS = (
    "%a %b %d %H:%M:%S %Y",  # ANSIC
    "%Y-%m-%dT%H:%M:%S%z",  # RFC3339 / ISO8601 with seconds
    "%Y-%m-%dT%H:%M:%S.%f%z",  # RFC3339Nano
    "%Y-%m-%d",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M:%S%z",
    "%I:%M%p",  # Kitchen
)


def _try_time(s: str) -> float | None:
    for fmt in _TIME_FORMATS:
        try:
            t = datetime.strptime(s.replace("Z", "+0000") if "%z" in fmt else s, fmt)
        except ValueError:
            continue
        return float(int(t.timestamp()))
    return None


def _is_letter(c: str) -> bool:
    return c.isalpha()


def _is_symbol_char(c: str) -> bool:
    # parsing.go isNotAlphanumeric
    return not (c.isdigit() or c.isalpha() or c in "()[]'\"")


def _tokens(expr: str) -> list[tuple[str, Any]]:
    """parsing.go parseTokens (no functions)."""
    out: list[tuple[str, Any]] = []
    i, n = 0, len(expr)
    while i < n:
        c = expr[i]
        if c.isspace():
            i += 1
            continue
        if c.isdigit() or c == ".":
            token, i = _number(expr, i)
        elif c == ",":
            token, i = (_SEPARATOR, ","), i + 1
        elif c == "[":
            j = expr.find("]", i + 1)
            if j < 0:
                raise _ParseError("Unclosed parameter bracket")
            token, i = (_VARIABLE, expr[i + 1 : j]), j + 1
        elif _is_letter(c):
            token, i = _word(expr, i)
        elif c in "'\"":
            token, i = _string(expr, i)
        elif c == "(":
            token, i = (_CLAUSE, "("), i + 1
        elif c == ")":
            token, i = (_CLAUSE_CLOSE, ")"), i + 1
        else:
            # lexerState: a PREFIX may come first, after an operator, a `(` or a `,`
            can_prefix = not out or out[-1][0] not in _VALUES + (_CLAUSE_CLOSE,)
            token, i = _symbol(expr, i, can_prefix)
        out.append(token)
    _check_tokens(out)
    return out


def _scan(expr: str, i: int, ok: Callable[[str], bool]) -> int:
    """The index after the run of characters from `i` that `ok` accepts."""
    while i < len(expr) and ok(expr[i]):
        i += 1
    return i


def _number(expr: str, i: int) -> tuple[tuple[str, Any], int]:
    """A numeric token (hex with 0x) at `i` and the index after it."""
    if expr.startswith(("0x", "0X"), i) and i + 2 < len(expr):
        j = _scan(expr, i + 2, lambda ch: ch in "0123456789abcdefABCDEF")
        try:
            return (_NUMERIC, float(int(expr[i + 2 : j], 16))), j
        except ValueError:
            raise _ParseError(f"Unable to parse hex value '{expr[i + 2 : j]}' to uint64\n") from None
    j = _scan(expr, i, lambda ch: ch.isdigit() or ch == ".")
    try:
        return (_NUMERIC, float(expr[i:j])), j
    except ValueError:
        raise _ParseError(f"Unable to parse numeric value '{expr[i:j]}' to float64\n") from None


def _word(expr: str, i: int) -> tuple[tuple[str, Any], int]:
    """A boolean, `in`, an accessor (a.B) or a variable at `i`, and the index after it."""
    j = _scan(expr, i, lambda ch: ch.isalpha() or ch.isdigit() or ch in "_.")
    word = expr[i:j]
    if word in ("true", "false"):
        return (_BOOLEAN, word == "true"), j
    if word in ("in", "IN"):
        return (_COMPARATOR, "in"), j
    if "." not in word:
        return (_VARIABLE, word), j
    if word.endswith("."):
        raise _ParseError(f"Hanging accessor on token '{word}'")
    for p in word.split(".")[1:]:
        if p[:1] and p[0].upper() != p[0]:
            raise _ParseError(f"Unable to access unexported field '{p}' in token '{word}'")
    return (_ACCESSOR, word), j


def _string(expr: str, i: int) -> tuple[tuple[str, Any], int]:
    """A string literal (a time when it parses as one) opening at `i`, and the index after it."""
    buf, j, n = [], i + 1, len(expr)
    while j < n:
        ch = expr[j]
        if ch == "\\" and j + 1 < n:
            buf.append(expr[j + 1])
            j += 2
            continue
        if ch in "'\"":
            s = "".join(buf)
            t = _try_time(s)
            return ((_TIME, t) if t is not None else (_STRING, s)), j + 1
        buf.append(ch)
        j += 1
    raise _ParseError("Unclosed string literal")


def _symbol(expr: str, i: int, can_prefix: bool) -> tuple[tuple[str, Any], int]:
    """An operator at `i` (a prefix where `can_prefix`), and the index after it."""
    j = _scan(expr, i, lambda ch: not ch.isspace() and _is_symbol_char(ch))
    sym = expr[i:j]
    if sym in _PREFIXES and can_prefix:
        return (_PREFIX, sym), j
    for kinds, kind in (
        (_MODIFIERS, _MODIFIER),
        (_LOGICAL, _LOGICALOP),
        (_COMPARATORS, _COMPARATOR),
        (_TERNARIES, _TERNARY),
    ):
        if sym in kinds:
            return (kind, sym), j
    raise _ParseError(f"Invalid token: '{sym}'")


def _check_tokens(out: list[tuple[str, Any]]) -> None:
    """parsing.go checkBalance and lexerState.go's transitions over the whole token list."""
    depth = 0
    for kind, _ in out:  # parsing.go checkBalance
        depth += {_CLAUSE: 1, _CLAUSE_CLOSE: -1}.get(kind, 0)
    if depth != 0:
        raise _ParseError("Unbalanced parenthesis")
    prev = None
    for kind, value in out:  # lexerState.go: no value directly after a value or `)`
        if prev is not None and prev[0] in _VALUES + (_CLAUSE_CLOSE,) and kind in _VALUES + (_CLAUSE, _PREFIX):
            raise _ParseError(
                f"Cannot transition token types from {prev[0]} [{_fmt(prev[1])}] to {kind} [{_fmt(value)}]"
            )
        prev = (kind, value)
    if out and out[-1][0] in (_PREFIX, _MODIFIER, _LOGICALOP, _COMPARATOR, _TERNARY, _SEPARATOR):
        raise _ParseError("Unexpected end of expression")


def _fmt(v: Any) -> str:
    """Go's %v of a govaluate value."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e21:
            return str(int(v))
        return repr(v)
    if v is None:
        return "<nil>"
    if isinstance(v, list):
        return "[" + " ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, re.Pattern):
        return v.pattern
    return str(v)


# precedence levels (stagePlanner.go), lowest first
_LEVELS: list[tuple[set[str], str]] = [
    ({","}, _SEPARATOR),
    (_TERNARIES, _TERNARY),
    ({"||"}, _LOGICALOP),
    ({"&&"}, _LOGICALOP),
    (_COMPARATORS, _COMPARATOR),
    ({"&", "|", "^"}, _MODIFIER),
    ({"<<", ">>"}, _MODIFIER),
    ({"+", "-"}, _MODIFIER),
    ({"*", "/", "%"}, _MODIFIER),
    ({"**"}, _MODIFIER),
]


class _Parser:
    def __init__(self, toks: list[tuple[str, Any]]):
        self.toks, self.pos = toks, 0

    def peek(self) -> tuple[str, Any] | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def level(self, i: int) -> Any:
        if i == len(_LEVELS):
            return self.prefix()
        syms, kind = _LEVELS[i]
        left = self.level(i + 1)
        while True:
            t = self.peek()
            if t is None or t[0] != kind or t[1] not in syms:
                return left
            self.pos += 1
            right = self.level(i + 1)
            left = ("op", t[1], left, right)

    def prefix(self) -> Any:
        t = self.peek()
        if t is not None and t[0] == _PREFIX:
            self.pos += 1
            return ("prefix", t[1], self.prefix())
        return self.value()

    def value(self) -> Any:
        t = self.peek()
        if t is None:
            raise _ParseError("Unexpected end of expression")
        self.pos += 1
        kind, v = t
        if kind == _CLAUSE:
            inner = self.level(0)
            nt = self.peek()
            if nt is None or nt[0] != _CLAUSE_CLOSE:
                raise _ParseError("Unbalanced parenthesis")
            self.pos += 1
            return ("group", inner)
        if kind == _ACCESSOR:
            return ("accessor", v)
        if kind in (_NUMERIC, _STRING, _BOOLEAN, _TIME):
            return ("lit", v)
        if kind == _VARIABLE:
            return ("lit", v)  # steps.go shouldExecute: a VARIABLE token becomes a STRING of its own text
        raise _ParseError(f"Unable to plan token kind: '{kind}', value: '{_fmt(v)}'")


def _is_num(v: Any) -> bool:
    return isinstance(v, float) and not isinstance(v, bool)


def _eval(node: Any) -> Any:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "group":
        return _eval(node[1])
    if kind == "accessor":
        raise _EvalError(
            f"Unable to access parameter field or method '{node[1].split('.')[0]}': "
            f"No parameter '{node[1].split('.')[0]}' found."
        )
    if kind == "prefix":
        _, sym, operand = node
        v = _eval(operand)
        if sym == "!":
            if not isinstance(v, bool):
                raise _EvalError(f"Value '{_fmt(v)}' cannot be used with the prefix '!'")
            return not v
        if not _is_num(v):
            raise _EvalError(f"Value '{_fmt(v)}' cannot be used with the prefix '{sym}'")
        return -v if sym == "-" else float(~int(v))
    _, sym, ln, rn = node
    left = _eval(ln)
    # EvaluableExpression.evaluateStage: short circuits
    if sym == "&&" and left is False:
        return False
    if sym == "||" and left is True:
        return True
    if sym == "??" and left is not None:
        return left
    if sym == "?" and left is False:
        right = None
        skip = True
    elif sym == ":" and left is not None:
        right, skip = None, True
    else:
        right, skip = _eval(rn), False
    if sym == ",":
        return (left if isinstance(left, list) else [left]) + [right]
    if sym in ("&&", "||"):
        for v in (left, right):
            if not isinstance(v, bool):
                raise _EvalError(
                    f"Value '{_fmt(v)}' cannot be used with the logical operator '{sym}', it is not a bool"
                )
        return left and right if sym == "&&" else left or right
    if sym == "?":
        if not isinstance(left, bool):
            raise _EvalError(f"Value '{_fmt(left)}' cannot be used with the ternary operator '?', it is not a bool")
        return right if left and not skip else None
    if sym in (":", "??"):
        return left if left is not None else right
    if sym in ("==", "!="):
        eq = type(left) is type(right) and left == right
        return eq if sym == "==" else not eq
    if sym in (">", ">=", "<", "<="):
        if not ((_is_num(left) and _is_num(right)) or (isinstance(left, str) and isinstance(right, str))):
            raise _EvalError(f"Value '{_fmt(left)}' cannot be used with the comparator '{sym}', it is not a number")
        return {">": left > right, ">=": left >= right, "<": left < right, "<=": left <= right}[sym]
    if sym in ("=~", "!~"):
        if not isinstance(left, str):
            raise _EvalError(f"Value '{_fmt(left)}' cannot be used with the comparator '{sym}', it is not a number")
        if not isinstance(right, str):
            raise _EvalError(f"Value '{_fmt(right)}' cannot be used with the comparator '{sym}', it is not a number")
        try:
            pat = re.compile(right)
        except re.error as e:
            raise _EvalError(f"Unable to compile regexp pattern '{right}': {e}") from None
        found = pat.search(left) is not None  # regexp.MatchString: unanchored
        return found if sym == "=~" else not found
    if sym == "in":
        if not isinstance(right, list):
            raise _EvalError(f"Value '{_fmt(right)}' cannot be used with the comparator 'in', it is not a number")
        return any(type(left) is type(v) and left == v for v in right)
    if sym == "+":
        if isinstance(left, str) or isinstance(right, str):
            return _fmt(left) + _fmt(right)
        if not (_is_num(left) and _is_num(right)):
            raise _EvalError(f"Value '{_fmt(left)}' cannot be used with the modifier '+', it is not a number")
        return left + right
    for v in (left, right):
        if not _is_num(v):
            raise _EvalError(f"Value '{_fmt(v)}' cannot be used with the modifier '{sym}', it is not a number")
    if sym == "-":
        return left - right
    if sym == "*":
        return left * right
    if sym == "/":
        return left / right if right else (math.inf if left > 0 else -math.inf if left < 0 else math.nan)
    if sym == "%":
        return math.fmod(left, right) if right else math.nan
    if sym == "**":
        return math.pow(left, right)
    li, ri = int(left), int(right)
    return float({"&": li & ri, "|": li | ri, "^": li ^ ri, "<<": li << ri, ">>": li >> ri}[sym])


def should_execute(when: str) -> bool:
    """steps.go shouldExecute over an already substituted `when`. Raises WhenError with Argo's text."""
    if when == "":
        return True
    try:
        toks = _tokens(when)
        p = _Parser(toks)
        tree = p.level(0) if toks else ("lit", None)
        if p.pos != len(toks):
            raise _ParseError(f"Unexpected token {_fmt(toks[p.pos][1])}")
    except _ParseError as e:
        if "Invalid token" in str(e):
            raise WhenError(
                f"Invalid 'when' expression '{when}': {e} (hint: try wrapping the affected expression in quotes (\"))"
            ) from None
        raise WhenError(f"Invalid 'when' expression '{when}': {e}") from None
    try:
        result = _eval(tree)
    except _EvalError as e:
        raise WhenError(f"Failed to evaluate 'when' expresion '{when}': {e}") from None
    if not isinstance(result, bool):
        raise WhenError(f"Expected boolean evaluation for '{when}'. Got {_fmt(result)}")
    return result
