"""workflows: the middle tier, where a recipe or an experiment becomes Argo objects with Hera.

Imported only by the application tier of infersweep/ (commands/, local/, launcher/, api.py); it imports the
domain of infersweep/ (the recipe, dgd/, aiperf/, experiment/, platform/, ...) and nothing above it
(pyproject.toml [tool.importlinter]). Importing this package loads no Hera: render.py serves a cached
bundle without it (render_cache.py).

  render.py         a recipe -> its bundle (DGD, Workflow, WorkflowTemplates, ScaledObjects), validated
  render_cache.py   bundles kept on disk by the hash of everything they came from
  pipeline.py       the engine x topology pipeline WorkflowTemplate and a recipe's Workflow and arguments
  experiment.py     an experiment's WorkflowTemplate and Workflow
  template_spec.py  what those two share: the spec around their DAGs, the AIPerf point task
  steps_library.py  one WorkflowTemplate per declared step, and the task that runs one
  gpu_guard.py      the GPU guard: lanes, locks, queue priority
  cron.py           the nightly CronWorkflows           launcher.py   the UI launchers
  install_set.py    every object `infersweep install` creates
  cluster.py        RBAC and ConfigMaps applied with kubectl    admission.py  the DGD admission policy
  strict.py         what templateReferencing: Strict allows a submitted object to say
  all_templates.py  the catalog as module-level Hera objects (`hera generate yaml`)
"""
