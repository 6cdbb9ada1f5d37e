"""Evaluate a ValidatingAdmissionPolicy's CEL on objects with cel-python (celpy), as the API server would:
the variables in order (each may use the earlier ones), then each validation. Run as a script by an
interpreter that has celpy (tests/security/test_dgd_policy.py): JSON on stdin {"variables": [[name, expr]],
"validations": [expr], "objects": [obj]}, JSON on stdout: for each object the list of validation results
(true = allowed, or the error text when the expression fails to evaluate)."""

import json
import sys

import celpy
from celpy import celtypes


def evaluate(variables, validations, obj):
    env = celpy.Environment()
    o = celpy.json_to_cel(obj)
    values = {}
    for name, expr in variables:
        act = {"object": o, "variables": celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})}
        values[name] = env.program(env.compile(expr)).evaluate(act)
    act = {"object": o, "variables": celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})}
    out = []
    for expr in validations:
        try:
            r = env.program(env.compile(expr)).evaluate(act)
            out.append(bool(r) if isinstance(r, celtypes.BoolType) else f"not a bool: {r!r}")
        except Exception as e:  # an evaluation error: the API server's failurePolicy Fail refuses it
            out.append(f"error: {e}")
    return out


if __name__ == "__main__":
    data = json.load(sys.stdin)
    print(json.dumps([evaluate(data["variables"], data["validations"], o) for o in data["objects"]]))
