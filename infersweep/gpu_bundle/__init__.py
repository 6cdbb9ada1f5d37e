"""Offline bundles of a serving stack for GPU hosts without internet.

Files: ``dependency_walk.py`` (what the host lacks, from its pip freeze), ``build.py`` (install, trim per
GPU architecture, pack, split, manifest), ``assemble.py`` (stdlib only, runs on the host: verify, unpack, check),
``__main__.py`` (the command line). Profiles are data in ``params/gpu-bundles/``.
"""
