"""Experiments: a comparison of deployments as one object (spec, restart classes, plan, cost model)."""
