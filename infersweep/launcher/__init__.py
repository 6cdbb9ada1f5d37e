"""The UI launcher, the code of its render step (steps/launcher.py; the launcher WorkflowTemplates are
workflows/launcher.py, and infersweep/local/launcher_run.py runs one on this machine): a recipe (or
experiment) chosen in the Argo UI, from the catalog or from Git at a pinned commit, rendered and validated
with the same code as `infersweep render`/`validate`, and turned into the run Workflow the launcher creates
(docs/ui.md).

  derive.py                 what a launch derives from the few things a UI user chose: the run's Workflow
  git_source.py             a recipe or experiment file from Git at one pinned commit, verified
  git_credentials.py        the launcher's Git credentials: the mounted Secret, what `git fetch` needs
  git_credential_helper.py  the git credential helper that answers `get` from that mounted Secret
"""
