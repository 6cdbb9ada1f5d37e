"""Which engines exist: each data file params/engines/<name>.yaml paired with its module, loudly.

Discovery: the engine `<name>` is the module `infersweep.engines.<name>`, which defines `ENGINE`, a subclass
of infersweep.engines.base.Engine whose `name` is `<name>`. The package's search path is this directory plus
the directories listed in $INFERSWEEP_ENGINES_PATH (os.pathsep-separated), so an engine kept outside the
repository (or a test's stub engine) is one `<name>.py` in such a directory and one params/engines/<name>.yaml.

Every mistake is a RecipeError with one line naming the file and the fix: a data file without a module, a
module without a data file, a module whose class leaves a rule unimplemented, a data file with an unknown or
missing field.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import pkgutil
import sys
from functools import lru_cache
from pathlib import Path
from typing import cast

import infersweep.engines as _package
from infersweep.engines.base import Engine
from infersweep.params_files import RecipeError, load_model_file, shared_fact_file

ENGINES_PATH_ENV = "INFERSWEEP_ENGINES_PATH"
# Modules of this package that are not engines.
NOT_ENGINES = frozenset({"base", "registry", "views"})
_BUILTIN_DIR = str(Path(_package.__file__).parent)


def _search_path() -> tuple[str, ...]:
    extra = [d for d in os.environ.get(ENGINES_PATH_ENV, "").split(os.pathsep) if d]
    return (_BUILTIN_DIR, *extra)


def _set_package_path(dirs: tuple[str, ...]) -> None:
    _package.__path__[:] = list(dirs)  # the directories `import infersweep.engines.<name>` searches


def engine_modules(dirs: tuple[str, ...] | None = None) -> dict[str, str]:
    """Engine module name -> its file, over the search path (a name found twice: the first wins)."""
    out: dict[str, str] = {}
    for info in pkgutil.iter_modules(list(dirs or _search_path())):
        if info.name not in NOT_ENGINES and not info.name.startswith("_") and info.name not in out:
            # iter_modules over a list of folders yields FileFinders (each has .path); the union type does not say so
            finder = cast(importlib.machinery.FileFinder, info.module_finder)
            out[info.name] = str(Path(finder.path) / f"{info.name}.py")
    return out


@lru_cache(maxsize=64)
def engine_class(name: str, dirs: tuple[str, ...]) -> type[Engine]:
    """The class of engine `name`, checked: a subclass of Engine, named `name`, with every rule."""
    _set_package_path(dirs)
    modname = f"{_package.__name__}.{name}"
    found, loaded = engine_modules(dirs).get(name), sys.modules.get(modname)
    if loaded is not None and getattr(loaded, "__file__", None) != found:
        del sys.modules[modname]  # imported from another search path earlier (tests): import this one
    try:
        module = importlib.import_module(modname)
    except ModuleNotFoundError as e:
        if e.name != modname:
            raise
        raise RecipeError(
            f"params/engines/{name}.yaml: no engine module for it; add infersweep/engines/{name}.py "
            f"(or {name}.py in a directory of ${ENGINES_PATH_ENV}) defining ENGINE, a subclass of "
            "infersweep.engines.base.Engine"
        ) from None
    cls = getattr(module, "ENGINE", None)
    where = getattr(module, "__file__", modname)
    if not (isinstance(cls, type) and issubclass(cls, Engine)):
        raise RecipeError(f"{where}: ENGINE must be a subclass of infersweep.engines.base.Engine; define it")
    if getattr(cls, "name", None) != name:
        raise RecipeError(
            f"{where}: {cls.__name__}.name is {getattr(cls, 'name', None)!r}, not {name!r} (its data "
            f"file params/engines/{name}.yaml); set name = {name!r}"
        )
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise RecipeError(
            f"{where}: engine {name!r} does not implement the rules {', '.join(missing)}; "
            "implement each (their contracts: infersweep/engines/base.py Engine)"
        )
    return cls


@lru_cache(maxsize=64)
def _check_pairs(pdir: Path, dirs: tuple[str, ...], stamps: tuple[int, ...]) -> tuple[str, ...]:
    data = {p.stem for p in (pdir / "engines").glob("*.yaml")}
    modules = engine_modules(dirs)
    bad_names = sorted(n for n in data if not n.isidentifier())
    if bad_names:
        raise RecipeError(
            f"{pdir / 'engines' / bad_names[0]}.yaml: an engine's name is its module's name, a Python "
            f"identifier; rename it (e.g. {bad_names[0].replace('-', '_').replace('.', '_')}.yaml)"
        )
    no_data = sorted(set(modules) - data)
    if no_data:
        raise RecipeError(
            f"{modules[no_data[0]]}: engine module without a data file; add "
            f"{pdir / 'engines' / no_data[0]}.yaml (its image, module and flag spellings) or remove the module"
        )
    no_module = sorted(data - set(modules))
    if no_module:
        name = no_module[0]
        raise RecipeError(
            f"{pdir / 'engines' / name}.yaml: no engine module for it; add infersweep/engines/{name}.py "
            f"(or {name}.py in a directory of ${ENGINES_PATH_ENV}) defining ENGINE, a subclass of "
            "infersweep.engines.base.Engine, or remove the data file"
        )
    return tuple(sorted(data))


def _pairs(pdir: Path, dirs: tuple[str, ...]) -> tuple[str, ...]:
    # Keyed on the directories' mtimes too: a data file or module added while a process runs is seen.
    stamps = tuple(Path(d).stat().st_mtime_ns if Path(d).is_dir() else 0 for d in (str(pdir / "engines"), *dirs))
    return _check_pairs(pdir, dirs, stamps)


def engine_names(pdir: Path) -> tuple[str, ...]:
    """The engines of a params directory, each data file paired with its module (else a RecipeError)."""
    return _pairs(pdir.resolve(), _search_path())


@lru_cache(maxsize=64)
def _load(f: Path, mtime_ns: int, name: str, dirs: tuple[str, ...]) -> Engine:
    return load_model_file(f, engine_class(name, dirs))


def load_engine(name: str, pdir: Path, recipe_path: Path | str = "<recipe>", field: str = "engine") -> Engine:
    """Engine `name` of a params directory: its data file validated against its module's class (a bad or
    unknown name is reported against the recipe's `field`)."""
    dirs = _search_path()
    known = _pairs(pdir.resolve(), dirs)
    if name not in known:
        raise RecipeError(
            f"{recipe_path}: {field}: must be one of {list(known)} (got {name!r}); a new engine is "
            f"params/engines/{name}.yaml plus its module infersweep/engines/{name}.py"
        )
    f = shared_fact_file(pdir, "engine", name, recipe_path, field)
    return _load(f.resolve(), f.stat().st_mtime_ns, name, dirs)


def all_engines(pdir: Path) -> dict[str, Engine]:
    return {name: load_engine(name, pdir, f"params/engines/{name}.yaml", "engine") for name in engine_names(pdir)}


def engine_by_module(module: str, pdir: Path) -> Engine | None:
    """The engine whose workers run `python -m <module>` (dynamo.vllm -> vLLM), if any."""
    return next((e for e in all_engines(pdir).values() if e.module == module), None)
