"""infersweep: recipes rendered to Argo Workflows that deploy Dynamo DGDs and benchmark them with AIPerf.

Three tiers, imports running one way (pyproject.toml [tool.importlinter], tests/house/test_layers.py):
  application  cli.py + commands/ (one module per CLI command, preflight.py the checks of one), local/ (local
               mode), launcher/ (the UI launcher's render step), api.py: what a user asks for. Only commands/, local/,
               launcher/ and api.py import workflows/ (a contract names them).
  workflows/   the top-level package beside this one: a recipe or an experiment becomes Argo objects with Hera
               (render.py + render_cache.py: a recipe's documents; pipeline.py, experiment.py, steps_library.py,
               ...). It imports the domain below and nothing of the application.
  domain       the rest of this package: what a recipe, a DGD, a point, a result are; it never imports workflows/.
Packages of the domain (each with its own file map):
  recipe/ engines/  a recipe as data, and what each engine adds      dgd/          how a recipe becomes a DGD
  schemas/          strict validation of every rendered document     platform/     the DGD adapters the steps use
  aiperf/           the AIPerf contract (stdlib only, in its image)  results/      the results table, runs, reports
  experiment/       comparisons of deployments                        predict/      estimates before GPUs are spent
  gpu_bundle/       offline serving stacks for GPU hosts
Modules: cli.py/cli_util.py (entry point), errors.py (UserError), params_files.py + model_errors.py (data
files and their error messages), k8s_types.py (Kubernetes field grammars), names.py, paths.py,
cluster_settings.py (params/cluster.yaml), validity_thresholds.py (params/validity.yaml), step_interface.py + step_declarations.py (the steps),
pipeline_params.py (the pipeline's parameters), metrics.py, model_cache.py, recipe_context.py,
argo_server.py + argo_client.py + argo_kube.py (Argo through its Server, else the Kubernetes API),
install_version.py (the version label of installed objects), template_holds.py (templates a live Workflow
still reads), gpu_pool_check.py (what worker pods need of the nodes, before a GPU is held), catalog.py,
slo_bisect.py (the bisection `slo-search` runs), text_table.py. reference/ holds the upstream schemas shipped
with the package.

This file is copied into the AIPerf image (images/aiperf.Dockerfile): it must stay import-free.
"""
