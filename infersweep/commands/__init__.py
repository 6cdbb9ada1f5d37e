"""One module per `infersweep` subcommand. Each defines `register(subparsers)` that adds its parser and
sets `fn`; the CLI discovers the modules, so adding a command is adding a file.

A recipe, rendered and checked:
  recipes.py    `recipes [list|show NAME]`: the catalog as a table, or one recipe (folder defaults merged)
  render.py     `render RECIPE --out DIR` / `render --all`: a recipe's documents, validated
  validate.py   `validate [PATHS]`: recipes and every document they render
  predict.py    `predict RECIPE|EXPERIMENT`: the predicted curve per concurrency, nothing run
  experiment.py `experiment plan|list|render|submit ...`: an experiment's treatments, order and Workflow
The cluster:
  install.py    `install`: the install set (workflows/install_set.py) onto the cluster
  images.py     `images build` / `images pin`: the step and AIPerf images
  preflight.py  `preflight`: the cluster checked before any GPU is held
  submit.py     `submit RECIPE [--watch]`: the recipe's Workflow, created through the Argo Server
  list.py       `list [-l SELECTOR]`: cluster runs, newest first
  status.py     `status NAME`: a run's phase, progress and failed steps
  watch.py      `watch NAME`: what `submit --watch` prints while a cluster run goes on
  logs.py       `logs RUN [STEP]`: a run's step logs (cluster or local)
Local mode:
  run.py        `run --local RECIPE`: the rendered workflow, executed on this machine
  slo_search.py `slo-search RECIPE --local`: the highest load meeting the recipe's SLOs
  argo.py       `argo run FILE.yaml`: any Workflow with the local executor (infersweep/local/argo/)
Results:
  runs.py       `runs`: the runs of a results store, newest first
  report.py     `report RUN`: the self-contained HTML report of a run
  compare.py    `compare RUN_A RUN_B ...`: runs against the first, per concurrency
  regress.py    `regress RUN --baseline RUN`: pass / regressed / improved / inconclusive
  baseline.py   `baseline promote|show`: a recipe's baseline run for the nightly regression check
  publish.py    `publish DIR`: a result folder into S3 (e.g. after an upload failed)
  import_.py    `import DIR --recipe R`: AIPerf artifact folders into the results store as a run
  export.py     `export --format llm-d RUN`: a run as llm-d benchmark reports
"""
