"""Step of the UI launchers (workflows/launcher.py `render`): derive the run Workflow of the recipe or
experiment chosen in the Argo UI and write it as JSON to --out, the output parameter the create-run resource
template creates. A bad choice (a `set` of what follows from the recipe, a Git source that is not a full
commit, a recipe that does not fit the pool) fails here with its message and creates nothing.

infersweep/launcher/derive.py does the deriving; it renders through workflows.render like `infersweep submit`.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from infersweep.cluster_settings import parse_cluster_settings
from infersweep.launcher.derive import Launcher, experiment_run, recipe_run
from infersweep.launcher.git_credentials import GitCredentials
from infersweep.step_declarations import LAUNCHER_STEP
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = LAUNCHER_STEP.parser().parse_args(argv)
    git = {"git-repo": a.git_repo, "git-commit": a.git_commit, "git-path": a.git_path}
    settings = parse_cluster_settings(yaml.safe_load(a.settings), where="launcher --settings")
    # The launcher mounts the Secret only when the setting names one (workflows/launcher.py).
    creds = (
        GitCredentials(
            settings.git_credentials_secret, Path(a.git_credentials), tuple(settings.trust.git_credential_hosts)
        )
        if a.git_credentials
        else None
    )
    launcher = Launcher(
        git=git,
        settings=settings,
        namespace=a.namespace,
        name=a.launcher,
        scratch=a.scratch,
        credentials=creds,
        dgd_api=a.dgd_api,  # the install's (workflows/launcher.py)
    )
    if a.kind == "recipe":
        run_params = {k: str(v) for k, v in a.run_params.items()}
        launch = recipe_run(a.name, launcher, set_text=a.set, run_params=run_params)
    else:
        launch = experiment_run(a.name, launcher)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(launch.workflow, separators=(",", ":")))
    print("\n".join(launch.summary))
    print(
        f"creating the run Workflow ({launch.workflow['metadata'].get('generateName')}...): "
        "its name is this launcher's output run-name"
    )
    return 0


if __name__ == "__main__":
    main_of(main, LAUNCHER_STEP)
