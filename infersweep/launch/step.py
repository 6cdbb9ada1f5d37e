"""`python -m infersweep.launch.step`: the launcher's render step (workflows/launcher.py). Writes the run's
Workflow as JSON to --out (the output parameter the create-run resource template creates) and prints what
it derived; a bad choice exits 1 with one line per mistake and creates nothing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m infersweep.launch.step", description=__doc__)
    p.add_argument("--kind", choices=["recipe", "experiment"], required=True)
    p.add_argument("--name", required=True, help="the catalog name, or from-git")
    p.add_argument("--git-repo", default="")
    p.add_argument("--git-commit", default="")
    p.add_argument("--git-path", default="")
    p.add_argument("--set", default="", help="recipe launches: KEY=VALUE lines")
    p.add_argument("--namespace", required=True)
    p.add_argument("--launcher", required=True, help="the launcher Workflow's name (a label of the run)")
    p.add_argument("--settings", required=True, help="the install's cluster settings, YAML")
    p.add_argument(
        "--run-param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run settings fixed at install, applied before --set",
    )
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--scratch", required=True, type=Path, help="a writable folder (Git checkouts)")
    return p


def main(argv: list[str] | None = None) -> int:
    from infersweep.cluster_settings import ClusterSettingsError, parse_cluster_settings
    from infersweep.launch.derive import experiment_run, recipe_run
    from infersweep.params_files import RecipeError

    a = parser().parse_args(argv)
    git = {"git-repo": a.git_repo, "git-commit": a.git_commit, "git-path": a.git_path}
    try:
        settings = parse_cluster_settings(yaml.safe_load(a.settings), where="launcher --settings")
        if a.kind == "recipe":
            run_params = dict(kv.partition("=")[::2] for kv in a.run_param)
            launch = recipe_run(
                a.name,
                git=git,
                set_text=a.set,
                settings=settings,
                namespace=a.namespace,
                launcher=a.launcher,
                scratch=a.scratch,
                run_params=run_params,
            )
        else:
            launch = experiment_run(
                a.name, git=git, settings=settings, namespace=a.namespace, launcher=a.launcher, scratch=a.scratch
            )
    except (RecipeError, ClusterSettingsError, ValueError) as e:
        print(f"launch refused: {e}", file=sys.stderr)
        return 1
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(launch.workflow, separators=(",", ":")))
    print("\n".join(launch.summary))
    print(
        f"creating the run Workflow ({launch.workflow['metadata'].get('generateName')}...): "
        "its name is this launcher's output run-name"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
