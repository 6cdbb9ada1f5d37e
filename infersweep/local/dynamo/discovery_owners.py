"""Which entries of a local deployment's Dynamo file discovery store have no living owner.

Dynamo's file store (ai-dynamo/dynamo lib/runtime/src/storage/kv/file.rs, read at commit 065abee) keeps each
key a process wrote alive by touching its file: `FileStore::expiry_thread` calls `Directory::keep_alive` for
every bucket in the process's `active_dirs` each `max(TTL / 3, 1 s)` (DEFAULT_TTL is 10 s: every 3.3 s), and
`Directory::keep_alive` sets the mtime of every file in that Directory's `owned_files` to now. The same
thread deletes any file of those buckets whose mtime is older than the TTL (`delete_expired_files`), whoever
wrote it. So a live entry's mtime moves every 3.3 s; an entry whose mtime stands still for longer has no
owner and is deleted when it is 10 s old, and the worker it announces drops out of the frontend while its
process keeps running.

Measured on the H200 with ai-dynamo 1.3.1 (benchmarks/measured/h200-2026-12-01): of the eight worker
starts whose logs were kept, two lost one endpoint instance each, 10.2 s and 10.6 s after registering it:
`clear_kv_blocks` in `qwen3-32b-bf16-cold-start` (deleted by the worker's own expiry pass, unnoticed at the
time since nothing reset a cache there) and `generate` in `qwen3-32b-bf16-lost-registration` (deleted by the
frontend, after which every request got 503). A vLLM worker registers its endpoints at once
(dynamo/vllm/worker_factory.py: `asyncio.gather` of `serve_endpoint` for generate, clear_kv_blocks and
get_perf_metrics), all into one bucket, `v1/instances`, and `FileStore::get_or_create_bucket` looks the bucket
up in `active_dirs`, unlocks, builds a new `Directory` with its own `owned_files` and inserts it: two
registrations that miss at once each build one, the later insert replaces the earlier, and a key written
through the replaced one is touched by nobody. `scripts/discovery_race.py` reproduces it through ai-dynamo
1.3.1's own runtime on the H200 host's 16 cores (2 of 100 processes lost an entry; none of 208 on a 2-core
machine), and on the third H200 session every one of 5 vLLM worker starts lost one.

infersweep.local.dynamo.discovery_keeper keeps such an entry alive while its writer lives (a process of every
deployment this check runs for), so this check finds nothing to hold against a start whose writer is alive;
what it still catches is an entry nobody keeps at all, and infersweep.local.dynamo.reconfigure restarts such a start.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

# The store's constants and listing are the keeper's (standard library only, so it runs as a script).
from infersweep.local.dynamo.discovery_keeper import KEEP_ALIVE_S, TTL_S, entry_mtimes  # noqa: F401 (re-exported)

# Two and a half keep-alive intervals: every owned file is touched at least twice in the window, so a file
# whose mtime did not move is unowned even when one touch comes late on a loaded machine; and the window
# (8.3 s) ends before such a file, written at most a second before the check starts, reaches the TTL.
WINDOW_S = 2.5 * KEEP_ALIVE_S


def unowned_entries(
    discovery_dir: Path,
    *,
    since: float = 0.0,
    window_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """The entries present now that nobody keeps alive: their mtime does not move over `window_s` (default
    WINDOW_S), or they are gone by its end (expired already). Sorted.

    Only entries last touched at or after `since` (epoch s: when the processes to check started) are judged:
    what a process stopped before them left behind expires by itself and takes nothing of theirs with it.
    Entries written during the window are not judged either."""
    since_ns = int(since * 1e9)
    before = {key: mtime for key, mtime in entry_mtimes(discovery_dir).items() if mtime >= since_ns}
    sleep(WINDOW_S if window_s is None else window_s)
    after = entry_mtimes(discovery_dir)
    return sorted(key for key, mtime in before.items() if after.get(key, mtime) == mtime)
