"""Issue 42's lows (finding 8, build item 6): files of a Git checkout stay inside the clone, the Argo token
never on the command line or in a repr, aiperf-point's model cache read-only, images and lock files pinned."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from infersweep.launcher.derive import source
from infersweep.params_files import RecipeError
from tests.support.git_repo import git
from workflows.launcher import FROM_GIT

PLANTED = "SECRET-PLANTED-outside-the-clone"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git client")


def _repo_with_link(tmp_path, link: str, target: str) -> tuple[str, str]:
    outside = tmp_path / "outside.yaml"
    outside.write_text(f"token: {PLANTED}\n")
    repo = tmp_path / "repo"
    (repo / "recipes").mkdir(parents=True)
    (repo / "recipes" / "fine.yaml").write_text("name: fine\n")
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    (repo / link).symlink_to(target.format(outside=outside))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    return f"file://{repo}", git(repo, "rev-parse", "HEAD")


@needs_git
@pytest.mark.parametrize(
    "link, target",
    [
        ("recipes/mine.yaml", "{outside}"),  # the recipe itself, absolute
        ("recipes/mine.yaml", "../../outside.yaml"),  # relative, climbing out
        ("params/models/m.yaml", "{outside}"),  # a file the recipe's params/ would resolve
    ],
)
def test_a_symlink_out_of_the_clone_is_refused_naming_it(tmp_path, link, target):
    repo, commit = _repo_with_link(tmp_path, link, target)
    path = link if link.startswith("recipes/") else "recipes/fine.yaml"
    with pytest.raises(RecipeError) as e:
        source(FROM_GIT, "recipe", {"git-repo": repo, "git-commit": commit, "git-path": path}, tmp_path / "s")
    said = str(e.value)
    assert link in said and "outside the repository" in said and "\n" not in said
    assert PLANTED not in said and "outside.yaml" not in said


@needs_git
def test_a_symlink_inside_the_clone_is_followed(tmp_path):
    repo, commit = _repo_with_link(tmp_path, "recipes/mine.yaml", "fine.yaml")
    f, _, _ = source(
        FROM_GIT, "recipe", {"git-repo": repo, "git-commit": commit, "git-path": "recipes/mine.yaml"}, tmp_path / "s"
    )
    assert f.read_text() == "name: fine\n"


# ------------------------------------------------------------------------------ the Argo token


def _server_args(*argv: str):
    import argparse

    from infersweep.argo_server import add_server_flags

    p = argparse.ArgumentParser()
    add_server_flags(p)
    return p.parse_args(list(argv))


def test_the_argo_token_comes_from_a_file_and_never_shows_in_a_repr(tmp_path, capsys):
    from infersweep.argo_server import load_config, token_from_args

    f = tmp_path / "token"
    f.write_text("Bearer tok-PLANTED-123\n")
    tok = token_from_args(_server_args("--token-file", str(f)))
    assert tok == "Bearer tok-PLANTED-123" and capsys.readouterr().err == ""
    cfg = load_config(host="argo:2746", token=tok, env={}, config_path=tmp_path / "none.yaml")
    assert cfg.token == tok and "PLANTED" not in repr(cfg) and "PLANTED" not in str(cfg)
    # from the environment, as `argo` takes it
    cfg = load_config(host="argo:2746", env={"ARGO_TOKEN": "env-PLANTED"}, config_path=tmp_path / "none.yaml")
    assert cfg.token == "env-PLANTED" and "PLANTED" not in repr(cfg)


def test_a_token_on_the_command_line_warns_it_shows_in_ps(capsys):
    from infersweep.argo_server import token_from_args

    assert token_from_args(_server_args("--token", "cli-PLANTED")) == "cli-PLANTED"
    err = capsys.readouterr().err
    assert "--token is visible" in err and "--token-file" in err and "cli-PLANTED" not in err


def test_an_unreadable_or_empty_token_file_is_one_line(tmp_path):
    from infersweep.argo_server import ArgoConfigError, token_from_args

    with pytest.raises(ArgoConfigError, match="--token-file .*cannot read"):
        token_from_args(_server_args("--token-file", str(tmp_path / "missing")))
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ArgoConfigError, match="--token-file .*empty"):
        token_from_args(_server_args("--token-file", str(tmp_path / "empty")))


# ------------------------------------------------------------------------------ the model cache


def _mounts_of(template: dict) -> dict[str, dict]:
    (tmpl,) = [t for t in template["spec"]["templates"] if t.get("container")]
    return {vm["name"]: vm for vm in tmpl["container"]["volumeMounts"]}


def test_only_the_model_cache_step_may_write_the_model_cache():
    import yaml

    from workflows.steps_library import STEPS, step_template_name

    golden = Path(__file__).parents[1] / "golden" / "templates"
    readers = []
    for step in STEPS:
        if "model-cache" not in step.mounts:
            continue
        mounts = _mounts_of(yaml.safe_load((golden / f"{step_template_name(step)}.yaml").read_text()))
        if step.name == "model-cache":
            assert not mounts["model-cache"].get("readOnly")  # it downloads into it
        else:
            readers.append(step.name)
            assert mounts["model-cache"].get("readOnly") is True, step.name
            assert not mounts["workdir"].get("readOnly")
    assert "aiperf-point" in readers


# ------------------------------------------------------------------------------ images and lock files

REPO = Path(__file__).resolve().parents[2]


def test_images_build_warns_while_a_base_image_is_a_tag(capsys, tmp_path, monkeypatch):
    """The base images cannot be pinned from here (no registry to read the digest from): `images build` says
    so per Dockerfile, with the command that prints the digest."""
    from infersweep.cli import main

    assert main(["images", "build", "--registry", "ghcr.io/acme", "--dry-run"]) == 0
    err = capsys.readouterr().err
    for image in ("steps", "aiperf"):
        assert f"images build: warning: images/{image}.Dockerfile: FROM python:3.11-slim is a tag" in err
    assert "docker buildx imagetools inspect python:3.11-slim" in err


def test_a_base_image_by_digest_is_not_warned_about(monkeypatch, tmp_path):
    from infersweep import images

    digest = "sha256:" + "a" * 64
    for name in ("steps", "aiperf"):
        (tmp_path / "images").mkdir(exist_ok=True)
        text = (REPO / "images" / f"{name}.Dockerfile").read_text()
        (tmp_path / "images" / f"{name}.Dockerfile").write_text(text.replace("python:3.11-slim", f"x@{digest}"))
    monkeypatch.setattr(images, "REPO_ROOT", tmp_path)
    assert images.unpinned_bases("1") == []


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version and not any(c in version for c in "<>=!~*,;"), f"{path.name}: {line!r}"
            pins[name] = version
    return pins


@pytest.mark.parametrize("image", ["steps", "aiperf"])
def test_each_image_installs_every_package_at_a_pinned_version(image):
    """The Dockerfile installs through its lock (a pip constraints file), the lock pins every package of the
    closure with ==, and it satisfies what pyproject.toml / the requirements ask for."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    lock = REPO / "images" / f"{image}.lock.txt"
    dockerfile = (REPO / "images" / f"{image}.Dockerfile").read_text()
    (pip,) = [ln for ln in dockerfile.splitlines() if "pip install" in ln]
    assert "-c " in pip and f"{image}.lock.txt" in pip and f"images/{image}.lock.txt" in dockerfile
    pins = _pins(lock)
    if image == "steps":
        wanted = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    else:
        wanted = [f"{n}=={v}" for n, v in _pins(REPO / "images" / "aiperf.requirements.txt").items()]
    for spec in wanted:
        r = Requirement(spec)
        assert r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True), spec


@pytest.mark.parametrize("image, venv", [("steps", ".venv"), ("aiperf", ".venv-aiperf")])
def test_the_lock_is_the_full_closure_of_the_tested_environment(image, venv):
    """scripts/lock_images.py --check: the lock names every package the environment the tests ran in resolved
    (a package missing from a constraints file would be installed at whatever version is newest)."""
    python = REPO / venv / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{venv} not set up (scripts/setup.sh)")
    res = subprocess.run(
        [str(python), str(REPO / "scripts" / "lock_images.py"), image, "--check"], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr


# ------------------------------------------------------------------------------ userinfo in a Git URL


@pytest.mark.parametrize(
    "repo, says",
    [
        ("https://ghp_PLANTED0123@github.com/org/r.git", "user name in the URL"),
        ("http://x:ghp_PLANTED0123@github.com/org/r.git", "password or token in the URL"),
        # scp-like with a password: git would hand "user:token" to ssh as the login name
        ("x:ghp_PLANTED0123@github.com:org/r.git", "password or token in the URL"),
        # not a Git URL at all: the error names it without what precedes the '@'
        ("x:ghp_PLANTED0123@github.com/org/r.git", "not a Git URL"),
    ],
)
def test_userinfo_in_a_git_url_is_refused_and_never_echoed(repo, says):
    from infersweep.launcher.git_source import check_git_source

    with pytest.raises(RecipeError, match=says) as e:
        check_git_source(repo, "a" * 40, "r.yaml")
    assert "PLANTED" not in str(e.value) and "\n" not in str(e.value)
