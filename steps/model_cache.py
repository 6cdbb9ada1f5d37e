"""Step: put the model (and its speculative-decoding draft) at its pinned revision on the cache PVC, once.

The work is infersweep.model_cache.cache_models (a marker per complete revision, a lock file against two
runs at once, the hub or a file:// folder as source). Outputs the model folder (the tokenizer AIPerf
reads) and the resolved commit. Exit 75 when the download failed in a way a rerun can fix (Argo retries
it, steps/transient.py), 1 for any other failure.
"""

from __future__ import annotations

import os
from pathlib import Path

from infersweep.model_cache import CacheOutputs, cache_models
from infersweep.step_declarations import MODEL_CACHE_STEP
from infersweep.step_interface import from_args
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = MODEL_CACHE_STEP.parser().parse_args(argv)
    # ModelNotCached: exit 75 when its cause is a dropped connection or a 5xx from the hub (Argo retries it),
    # else 1 (steps/runner.py)
    cache_models(
        a.model_id,
        a.revision,
        Path(a.cache_dir),
        a.source,
        draft_model=a.draft_model,
        draft_revision=a.draft_revision,
        outputs=from_args(CacheOutputs, a),
    )
    return 0


if __name__ == "__main__":
    os.umask(0o002)  # other runs' pods (other UIDs in the same group) must be able to read the cache
    main_of(main, MODEL_CACHE_STEP)
