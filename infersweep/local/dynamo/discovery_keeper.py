"""Keep alive the discovery entries a living Dynamo worker wrote but lost track of (run as its own process).

Dynamo's file store (ai-dynamo/dynamo lib/runtime/src/storage/kv/file.rs, read at commit 065abee) keeps a key
alive only while the `Directory` that wrote it is the one in `FileStore::active_dirs`: `expiry_thread` calls
`Directory::keep_alive`, which sets the mtime of that Directory's `owned_files` to now every max(TTL / 3, 1 s),
and `delete_expired_files` removes any file of the bucket older than the TTL (10 s), whoever wrote it.
`get_or_create_bucket` looks the bucket up, unlocks, builds a new Directory and inserts it, so two
registrations into one bucket at once (a vLLM worker's `asyncio.gather` of generate, clear_kv_blocks and
get_perf_metrics, dynamo/vllm/worker_factory.py) can each build one; the later insert replaces the earlier,
and what was written through the replaced one is touched by nobody. The process keeps serving that endpoint;
only its entry expires, and the frontend drops the worker (or its KV-reset endpoint) mid-run.

Measured with ai-dynamo 1.3.1 (docs/measured-h200.md): on the H200's 16 cores `scripts/discovery_race.py`
lost an entry in 2 of 100 fresh processes; real vLLM workers lost one in 2 of 8 starts in the first two
sessions and in 5 of 5 in the third (three of them a start and its two restarts), so restarting until a start
keeps everything is no way to get a measurement.

What this process does about it: every second it reads the mtimes of the store's files. An entry's key ends
in its writer's instance id (`dynamo%2Fbackend%2Fgenerate%2F<id>`), shared by every entry that process
registered. An entry not touched for STALE_S while a sibling with the same id was touched by its owner
within STALE_S belongs to a living process that lost track of it: it is touched here, as the owner would
(set mtime to now, file.rs `Directory::keep_alive`), recorded once in the adoption log, and from then on
touched at every pass (not only when stale again), so a keeper held up by a loaded machine has a whole TTL,
not the 5 s between STALE_S and the TTL, before the entry is lost. When the owner
dies its own entries stop moving (or are deleted at its shutdown), this stops touching the lost one, and
everything of that process expires together, as Dynamo intends. An entry with no living sibling is never
touched. Standard library only: it runs as a script under any interpreter.

    python discovery_keeper.py --store STATE/discovery --adoptions STATE/discovery-adoptions.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from pathlib import Path

TTL_S = 10.0  # file.rs DEFAULT_TTL
KEEP_ALIVE_S = max(TTL_S / 3, 1.0)  # file.rs expiry_thread: max(ttl / 3, MIN_KEEP_ALIVE)
TEMP_FILE_PREFIX = ".tmp_"  # file.rs: atomic writes go through these; never an entry
# An entry older than this missed its owner's keep-alive (3.3 s) by half an interval: lost, if a sibling moves.
# Touched at 5 s, it is never near the 10 s TTL while this runs every POLL_S.
STALE_S = 1.5 * KEEP_ALIVE_S
POLL_S = 1.0
ID_SEPARATOR = "%2F"  # file.rs Key::url_safe: '/' in a key is written as %2F


def entry_mtimes(store: Path) -> dict[str, int]:
    """Every entry of the store (bucket path / key file) with its mtime in ns; temp files left out."""
    root = Path(store)
    out: dict[str, int] = {}
    for path in root.rglob("*"):
        if path.name.startswith(TEMP_FILE_PREFIX):
            continue
        try:
            st = path.stat()
        except FileNotFoundError:  # deleted between the listing and the stat: not an entry any more
            continue
        if stat.S_ISREG(st.st_mode):
            out[str(path.relative_to(root))] = st.st_mtime_ns
    return out


def instance_id(entry: str) -> str | None:
    """The writer's instance id that ends an entry's key, or None for a key without one."""
    name = entry.rsplit("/", 1)[-1]
    if ID_SEPARATOR not in name:
        return None
    tail = name.rsplit(ID_SEPARATOR, 1)[-1]
    return tail or None


def lost_entries(
    mtimes: dict[str, int], now_ns: int, touched_here: dict[str, int], adopted: frozenset[str] | set[str] = frozenset()
) -> list[str]:
    """The entries to touch now, while a sibling of the same instance id was touched within STALE_S by someone
    other than this keeper (`touched_here`: the mtime this keeper last set on each entry it touched; a sibling
    still at that mtime is evidence of nothing): every stale one (not touched for STALE_S, not yet expired),
    and every one already `adopted` whatever its age, so that once found it stays as fresh as one poll and a
    pass delayed by a loaded machine cannot let it reach the TTL. Sorted."""
    by_id: dict[str, list[str]] = {}
    for entry in mtimes:
        iid = instance_id(entry)
        if iid is not None:
            by_id.setdefault(iid, []).append(entry)
    out = []
    for entries in by_id.values():
        # A sibling its owner touched within STALE_S: that process is alive and keeping its entries.
        owner_alive = any(now_ns - mtimes[e] < STALE_S * 1e9 and touched_here.get(e) != mtimes[e] for e in entries)
        if not owner_alive:
            continue
        out += [e for e in entries if e in adopted or STALE_S * 1e9 <= now_ns - mtimes[e] < TTL_S * 1e9]
    return sorted(out)


def keep_round(store: Path, touched_here: dict[str, int], adopted: set[str], adoptions: Path | None) -> list[str]:
    """One pass: touch every lost entry, record each entry's first adoption. Returns the entries touched."""
    mtimes = entry_mtimes(store)
    now_ns = time.time_ns()
    touched = []
    for entry in lost_entries(mtimes, now_ns, touched_here, adopted):
        path = Path(store) / entry
        try:
            os.utime(path, ns=(now_ns, now_ns))
            # As the file system stores it (its mtime resolution may be coarser than ns): what a later pass reads.
            touched_here[entry] = path.stat().st_mtime_ns
        except FileNotFoundError:  # expired or deleted by its owner's shutdown meanwhile
            continue
        touched.append(entry)
        if entry not in adopted:
            adopted.add(entry)
            record = {
                "entry": entry,
                "adopted_at": now_ns / 1e9,
                "age_s": round((now_ns - mtimes[entry]) / 1e9, 2),
                "why": "not touched by its writer while a sibling of the same instance was",
            }
            print(f"discovery keeper: adopted {entry} ({record['age_s']} s since its last touch)", flush=True)
            if adoptions is not None:
                with open(adoptions, "a") as f:
                    f.write(json.dumps(record) + "\n")
    for entry in [e for e in touched_here if e not in mtimes]:  # gone: forget it
        del touched_here[entry]
    return touched


def read_adoptions(path: Path) -> list[dict]:
    """The adoption log's records (empty when there is none)."""
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, type=Path, help="the deployment's DYN_FILE_KV folder")
    ap.add_argument("--adoptions", type=Path, help="JSON lines, one per entry adopted")
    args = ap.parse_args(argv)
    touched_here: dict[str, int] = {}
    adopted: set[str] = set()
    print(f"discovery keeper: watching {args.store} (stale after {STALE_S:.1f} s, TTL {TTL_S:.0f} s)", flush=True)
    while True:
        try:
            if args.store.is_dir():
                keep_round(args.store, touched_here, adopted, args.adoptions)
        except Exception as e:  # one bad pass must not end the keeper: the next one tries again
            print(f"discovery keeper: pass failed: {e!r}", file=sys.stderr, flush=True)
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main())
