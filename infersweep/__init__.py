"""infersweep: recipes rendered to Argo Workflows that deploy Dynamo DGDs and benchmark them with AIPerf.

Packages (each with its own file map):
  recipe/ engines/  a recipe as data, and what each engine adds      render.py     a recipe -> its documents
  schemas/          strict validation of every rendered document     platform/     the DGD adapters the steps use
  aiperf/           the AIPerf contract (stdlib only, in its image)  results/      the results table, runs, reports
  experiment/       comparisons of deployments                        predict/      estimates before GPUs are spent
  local/            local mode (the Argo controller port, stand-ins)  commands/     one module per CLI command
  gpu_bundle/       offline serving stacks for GPU hosts
Modules: cli.py/cli_util.py (entry point), errors.py (UserError), params_files.py + model_errors.py (data
files and their error messages), k8s_types.py (Kubernetes field grammars), names.py, paths.py,
cluster_settings.py (params/cluster.yaml), step_interface.py + step_declarations.py (the steps),
pipeline_params.py (the pipeline's parameters), metrics.py, model_cache.py, recipe_context.py, render_cache.py,
argo_server.py, catalog.py, slo_search.py, text_table.py. reference/ holds the upstream schemas shipped with
the package.

This file is copied into the AIPerf image (images/aiperf.Dockerfile): it must stay import-free.
"""
