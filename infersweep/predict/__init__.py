"""Predictions before GPUs are spent: AIConfigurator estimates per recipe, the mocker's timing table built
from them, the source label of every result row, and a physics check on measurements.

  aic.py           calls AIConfigurator in its own environment (.venv-aic), caching every estimate
  aic_worker.py    runs inside .venv-aic (JSON in, JSON out); imports nothing from infersweep
  target.py        a recipe mapped onto AIConfigurator's database, or exactly why it cannot be
  curve.py         the predicted curve: TTFT, ITL and throughput per concurrency
  queueing.py      the closed loop's TTFT: a band from the static estimate to the prefill queue
  rank.py          an experiment's treatments ranked by its question before any GPU is spent
  mocker_table.py  the Dynamo mocker's timing table (`--planner-profile-data`) from the estimates
  local_timing.py  calibrated local mode: the mocker workers get that table for the recipe's GPU
  source.py        the `source` of every results row (and of run.json)
  physics.py       a physics check: a decode step cannot beat reading the weights it needs
  beside.py        measured rows with their prediction and physics verdict (steps/summarize.py)
"""
