"""Engine releases: which Dynamo release a recipe renders for, and what that changes (docs/engine-releases.md).

A release is params/engines/releases/<name>.yaml: the Dynamo version, the DGD apiVersion its operator serves,
and per engine the engine version it ships and the fields of params/engines/<engine>.yaml it spells otherwise
(`set`: its images). Beside it, <name>.flags.yaml lists the flags each worker module of that release accepts,
generated from the release's own parsers (tests/engine_parsers/release_flags.py).

By default the release follows the DGD apiVersion (`--dgd-api`): exactly one release per apiVersion, so v1beta1
renders Dynamo 1.6.1 and v1alpha1 renders Dynamo 1.3.1's images (for the cluster report's 1.3.0 operator).
Which apiVersions an operator serves is the release's `operator_serves`: the 1.3 operator serves v1beta1 too
(ai-dynamo 1.3.1's own planner reads and JSON-patches its DGDs as nvidia.com/v1beta1 `spec.components[]` with
`podTemplate.spec.containers` "main": dynamo/planner/connectors/kubernetes_api.py:35 DYNAMO_API_VERSION,
dynamo/planner/monitoring/dgd_services.py get_components_by_name / _main_container_from_pod_template), so a
cluster on a 1.3 operator may render 1.3.1 in v1beta1: params/cluster.yaml `dynamo_release: 1.3.1` names the
release, `--dgd-api` the apiVersion (`named_release` refuses one the release's operator does not serve).
Operators of 0.9 and before serve v1alpha1 only. Never one operator generation's DGD with another's images.
A recipe has no release field: what it deploys is the recipe plus `--dgd-api` (and the cluster's
dynamo_release), and the run context carries the image (recipe_context engine_image).
Rendering for a release checks the recipe's engine_args and the engine's own spellings against the
release's flags: a flag the release's parser does not have is one RecipeError naming it and the release that
has it, instead of a worker that exits at start-up on the cluster.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from infersweep.engines.base import Engine
from infersweep.params_files import RecipeError, Strict, format_pydantic, load_model_file, read_yaml_mapping
from infersweep.paths import params_dir
from infersweep.recipe.resolved import ResolvedRecipe

DgdApi = Literal["v1beta1", "v1alpha1"]


class ReleaseEngine(Strict):
    version: str  # the engine version the release's image carries and its ai-dynamo pins
    set: dict[str, Any] = {}  # fields of params/engines/<engine>.yaml this release spells otherwise


class Release(Strict):
    dynamo: str
    dgd_api: DgdApi  # the apiVersion this release renders (`--dgd-api` picks the release by it)
    # Every DGD apiVersion the release's operator serves (its CRD's `served` versions), with the evidence beside
    # it in the release file: the rendered one is one of them, and the reaper or a planner may use another.
    operator_serves: list[DgdApi] = []
    # The release params/engines/<engine>.yaml spell as they are: an engine it does not list renders with its
    # data file unchanged (adding an engine stays one data file plus one module). Any other release must
    # list every engine it renders (else one engine's newer images would reach an older operator).
    base: bool = False
    engines: dict[str, ReleaseEngine]


def releases_dir(pdir: Path) -> Path:
    return pdir / "engines" / "releases"


@lru_cache(maxsize=16)
def _releases(folder: Path, stamp: tuple[int, ...]) -> dict[str, Release]:
    found = {
        p.stem: load_model_file(p, Release) for p in sorted(folder.glob("*.yaml")) if not p.name.endswith(".flags.yaml")
    }
    by_api: dict[str, str] = {}
    for name, rel in found.items():
        if rel.operator_serves and rel.dgd_api not in rel.operator_serves:
            raise RecipeError(
                f"{folder / name}.yaml: dgd_api: {rel.dgd_api} is not among operator_serves {rel.operator_serves}; "
                "render an apiVersion the release's operator serves"
            )
        if rel.dgd_api in by_api:
            raise RecipeError(
                f"{folder / name}.yaml: dgd_api: {rel.dgd_api} is already the release "
                f"{by_api[rel.dgd_api]}'s; one release per DGD apiVersion (--dgd-api picks it)"
            )
        by_api[rel.dgd_api] = name
    return found


def releases(pdir: Path | None = None) -> dict[str, Release]:
    folder = releases_dir((pdir or params_dir()).resolve())
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    return _releases(folder, tuple(p.stat().st_mtime_ns for p in files))


def named_release(version: str, api: str, pdir: Path | None = None) -> tuple[str, Release]:
    """The release of Dynamo `version` (params/cluster.yaml dynamo_release) for DGD apiVersion `api`: one its
    operator serves, else one RecipeError naming the setting and the fix."""
    found = releases(pdir)
    hit = next(((n, r) for n, r in found.items() if version in (r.dynamo, n)), None)
    if hit is None:
        raise RecipeError(
            f"params/cluster.yaml dynamo_release: {version}: no release in {releases_dir(pdir or params_dir())} "
            f"is Dynamo {version}; use one of {sorted(r.dynamo for r in found.values())}, or '' for the release "
            "--dgd-api picks"
        )
    if api not in hit[1].operator_serves:
        raise RecipeError(
            f"params/cluster.yaml dynamo_release: {version}: its operator serves {hit[1].operator_serves}, not "
            f"--dgd-api {api}; render one of those"
        )
    return hit


def release_for_api(api: str, pdir: Path | None = None) -> tuple[str, Release]:
    """The release a DGD apiVersion renders (its name and data)."""
    found = releases(pdir)
    for name, rel in found.items():
        if rel.dgd_api == api:
            return name, rel
    raise RecipeError(
        f"--dgd-api {api}: no release in {releases_dir(pdir or params_dir())} renders it; "
        f"use one of {sorted(r.dgd_api for r in found.values())}"
    )


@lru_cache(maxsize=16)
def _flags(f: Path, mtime_ns: int) -> dict[str, frozenset[str]]:
    return {module: frozenset(flags) for module, flags in read_yaml_mapping(f).items()}


def release_flags(name: str, pdir: Path | None = None) -> dict[str, frozenset[str]]:
    """module -> the flags it accepts in this release ({} for a release without a flags file)."""
    f = releases_dir((pdir or params_dir()).resolve()) / f"{name}.flags.yaml"
    return _flags(f, f.stat().st_mtime_ns) if f.is_file() else {}


def flag_name(token: str, module: str) -> str | None:
    """The flag a command-line token names, as the module's parser reads it; None for a value.

    `--name=value` names `--name`. vLLM's FlexibleArgumentParser reads `--a_b` as `--a-b` and `--a.b` as a
    key of the JSON flag `--a` (vllm/utils/argparse_utils.py FlexibleArgumentParser.parse_args).
    """
    if not token.startswith("--") or token == "--":
        return None
    name = token.split("=", 1)[0]
    if module == "dynamo.vllm":
        name = name.split(".", 1)[0].replace("_", "-")
    return name


def accepted(flag: str, known: frozenset[str]) -> bool:
    """Whether the parser takes `flag`: one of its flags, or an unambiguous prefix of exactly one. Both stages
    allow abbreviations: SGLang's (dynamo/sglang/args.py parse_args builds argparse.ArgumentParser with the
    default allow_abbrev=True; the 1.6.1 templates' `--tp` is `--tp-size` so) and vLLM's engine stage
    (FlexibleArgumentParser keeps the default); Python 3.11 argparse.ArgumentParser._parse_optional takes a
    prefix that matches one option and refuses one that matches several as ambiguous."""
    return flag in known or sum(1 for k in known if k.startswith(flag)) == 1


def engine_spelled_flags(e: Engine) -> list[tuple[str, str]]:
    """(field of params/engines/<engine>.yaml, flag) for every flag the engine's data file spells."""
    out: list[tuple[str, str]] = []

    def add(field: str, value: Any) -> None:
        values = value if isinstance(value, list) else [value]
        out.extend((field, v) for v in values if isinstance(v, str) and v.startswith("--"))

    for field in (
        "model_flag",
        "tp_flag",
        "prefill_args",
        "decode_args",
        "kv_transfer_flag",
        "dp_flag",
        "dp_switches",
        "ep_flag",
        "ep_switch",
        "kv_router_args",
        "metrics_args",
    ):
        add(field, getattr(e, field))
    if e.speculative:
        add("speculative.flag", e.speculative.flag)
    for field in ("cpu_gib_flag", "cpu_args", "hicache_switch", "hicache_ratio_flag", "hicache_write_policy_flag"):
        add(f"offload.{field}", getattr(e.offload, field))
    return out


def _other_release_with(flag: str, module: str, current: str, pdir: Path | None) -> str | None:
    for name, rel in releases(pdir).items():
        if name != current and accepted(flag, release_flags(name, pdir).get(module, frozenset())):
            return f"Dynamo {rel.dynamo}'s (--dgd-api {rel.dgd_api})"
    return None


def flag_problem(r: ResolvedRecipe, name: str, rel: Release, pdir: Path | None) -> str | None:
    """What is wrong with the recipe's engine_args or the engine's spellings under release `name`, if anything."""
    module = r.engine.module
    known = release_flags(name, pdir).get(module)
    if known is None:
        return None  # no flags list for this module (dynamo.trtllm: its parser needs tensorrt_llm)
    spec = rel.engines.get(r.recipe.engine)
    version = f" ({r.engine.label} {spec.version})" if spec else ""
    what = f"a flag of {module} in Dynamo {rel.dynamo}{version}, the release --dgd-api {rel.dgd_api} renders"
    for token in r.recipe.engine_args:
        flag = flag_name(token, module)
        if flag and not accepted(flag, known):
            other = _other_release_with(flag, module, name, pdir)
            fix = f"it is {other}: render with that, or remove it" if other else "check its spelling or remove it"
            return f"engine_args: {flag} is not {what}; {fix}"
    for field, flag in engine_spelled_flags(r.engine):
        if not accepted(flag_name(flag, module) or flag, known):
            return (
                f"engine: params/engines/{r.recipe.engine}.yaml {field} spells {flag}, not {what}; "
                f"give engines.{r.recipe.engine}.set.{field.split('.')[0]} in params/engines/releases/{name}.yaml"
            )
    return None


def for_dgd_api(r: ResolvedRecipe, api: str, pdir: Path | None = None, release: str = "") -> ResolvedRecipe:
    """The recipe as it renders for DGD apiVersion `api`: the release `release` names (params/cluster.yaml
    dynamo_release, e.g. 1.3.1 in v1beta1) or else the one `api` picks; that release's engine facts (its images)
    and its flags checked. The same object when it already is; a copy otherwise."""
    pdir = pdir or getattr(r, "params_dir", None)
    name, rel = named_release(release, api, pdir) if release else release_for_api(api, pdir)
    if r.release == name:
        return r
    path = r.path or r.name
    spec = rel.engines.get(r.recipe.engine) or (ReleaseEngine(version="") if rel.base else None)
    if spec is None:
        raise RecipeError(
            f"{path}: engine: Dynamo {rel.dynamo} (the release --dgd-api {api} renders) has no "
            f"{r.recipe.engine} here; add engines.{r.recipe.engine} to "
            f"params/engines/releases/{name}.yaml or render with another --dgd-api"
        )
    engine = r.engine
    if spec.set:
        data = r.engine.model_dump(mode="json", exclude_unset=True) | spec.set
        try:
            engine = type(r.engine).model_validate(data)
        except ValidationError as e:
            raise RecipeError(format_pydantic(releases_dir(pdir or params_dir()) / f"{name}.yaml", e)) from None
    out = copy.copy(r)
    out.engine, out.release = engine, name
    if spec.set:  # what only the engine's facts decide, again on this release's (speculative methods, ...)
        from infersweep.recipe.resolve import _check_features

        _check_features(out, path)
    problem = flag_problem(out, name, rel, pdir)
    if problem:
        raise RecipeError(f"{path}: {problem}")
    return out


_IMAGE_VERSION = re.compile(r":v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+._].*)?$")
SKEW_ANNOTATION = "infersweep.io/image-release-skew"


def image_skew(r: ResolvedRecipe, pdir: Path | None = None) -> str | None:
    """Why the image the recipe runs is outside its release's window, or None.

    A recipe's own `image:` wins over its release's (ResolvedRecipe.image), so `--dgd-api v1alpha1` can pair
    the Dynamo 1.3.1 release (and the 1.3 operator it is rendered for) with an image of another Dynamo line,
    e.g. the Lightning vLLM recipes' vllm-runtime:1.5.0-nemotron-3.5-lightning-dev.1. An operator and the
    runtime it deploys are kept within one minor version of each other (issue 34 item 12); further apart,
    the run is not refused (the image may be the only one with the recipe's engine features) but its
    provenance says so: the DGD's annotation SKEW_ANNOTATION and the run context's `engine_image_skew`.
    An image whose tag carries no version (a digest, `latest`) is not judged."""
    if not r.release:
        return None
    rel = releases(pdir or getattr(r, "params_dir", None)).get(r.release)
    m = _IMAGE_VERSION.search(r.image or "")
    if rel is None or m is None:
        return None
    img_major, img_minor = int(m.group(1)), int(m.group(2))
    rel_major, rel_minor = (int(x) for x in rel.dynamo.split(".")[:2])
    if img_major == rel_major and abs(img_minor - rel_minor) <= 1:
        return None
    return (
        f"image {r.image} is Dynamo {img_major}.{img_minor}; --dgd-api {rel.dgd_api} renders for Dynamo "
        f"{rel.dynamo}'s operator, more than one minor version apart (the recipe's image: wins over the release's)"
    )
