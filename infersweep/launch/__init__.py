"""The launcher's in-cluster step: a recipe (or experiment) chosen in the Argo UI, from the catalog or from Git
at a pinned commit, rendered and validated with the same code as `infersweep render`/`validate`, and turned
into the run Workflow the launcher creates (workflows/launcher.py; docs/ui.md)."""
