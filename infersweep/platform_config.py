"""params/platform.yaml: the images, namespace, cache PVC and bucket a cluster uses."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import yaml

from infersweep.paths import params_dir


@lru_cache(maxsize=1)
def load_platform() -> dict[str, Any]:
    return yaml.safe_load((params_dir() / "platform.yaml").read_text())
