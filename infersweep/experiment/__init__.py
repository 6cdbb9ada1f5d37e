"""Experiments: a comparison of deployments as one object (spec, restart classes, plan, cost model).

The experiment before it runs:
  spec.py      params/experiments/*.yaml: the treatments of a comparison, as validated recipes
  restart.py   restart classes: what moving a running deployment to the next treatment forces
  plan.py      the order the treatments run in, and what each step between them costs
  order.py     what the order did: the KV-cache state each treatment started from, a balanced order's passes
  cost.py      GPU time of a plan on a cluster, from per-phase durations (a model, not a measurement)
  warmup.py    the warm-up of a treatment that starts on empty KV caches
  kv_reset.py  emptying the workers' KV caches between two treatments that keep the workers
While and after it runs:
  workdir.py   what the experiment's small workdir steps do (mark-start, record-ready, archive, verdict)
  compare.py   the compare step (steps/compare.py): every treatment's table -> the experiment report
  report.py    the experiment report: deltas against the baseline treatment, the claim's verdict
  paired.py    a balanced experiment's claim judged on its ABBA blocks (paired differences, Student t)
"""
