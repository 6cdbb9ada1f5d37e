"""Which measured prompts the prefix cache had seen before: AIPerf's own prompts regenerated for each point of a
committed GPU run, matched against every other prompt of the run.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/prompt_collisions.py SNAPSHOT.tar.xz [--points c8 c4-r1]

SNAPSHOT is a GPU run's committed snapshot (benchmarks/measured/*/...-snapshot.tar.xz). It keeps each point's
command line and records but not AIPerf's inputs.json (their md5s are in tier/inputs-md5.txt). AIPerf writes
inputs.json before it sends anything, so each point's command runs again here with AIPerf 0.13 (.venv-aiperf)
against a closed port, with the tokenizer the GPU run gave it: infersweep's config-only model folder
(infersweep.local.dynamo.toy_model.config_only_model) as an offline hub id (infersweep.aiperf.flags
tokenizer_as_cached_hub_id). Each regenerated file must match the run's md5, or the script stops.

Why: a synthetic prompt is a window of ISL tokens at a random offset in AIPerf's tokenized corpus
(aiperf/dataset/generator/prompt.py sample_tokens_from_corpus: `start = rng.randrange(corpus_len)`), and each point
draws its offsets from its own seed (infersweep's per-point seeds). Two prompts are the same when two draws hit the
same offset: about 1 in N per pair, N the corpus's tokens (printed here, from AIPerf's own _initialize_corpus). A
prompt the engine's prefix cache still holds from an earlier point is then served from it, whole. The table lists
every measured request that read more than half its prompt from the cache, and where its prompt was sent before.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks._common import table  # noqa: E402

AIPERF = REPO / ".venv-aiperf" / "bin" / "aiperf"
CLOSED_URL = "http://127.0.0.1:9"  # nothing listens: AIPerf writes inputs.json, then fails to connect

# AIPerf 0.13's corpus as its PromptGenerator tokenizes it, in AIPerf's own code (run in the AIPerf env)
CORPUS_SIZE = """
from aiperf.common.enums import PromptCorpus
from aiperf.common.tokenizer import Tokenizer
from aiperf.dataset.generator.prompt import PromptGenerator
g = PromptGenerator.__new__(PromptGenerator)
g._corpus, g.tokenizer, g.debug = PromptCorpus.SONNET, Tokenizer.from_pretrained("{repo}"), lambda *a, **k: None
g._initialize_corpus()
print(g._corpus_size)
"""


def extract(snapshot: Path, dest: Path, points: set[str] | None) -> tuple[dict[str, Path], dict[str, str]]:
    """Each point's folder (result.json, aiperf-phases.yaml, records) under dest, and the run's inputs md5s."""
    folders: dict[str, Path] = {}
    md5: dict[str, str] = {}
    with tarfile.open(snapshot) as tf:
        for m in tf:
            if "/volumes/workdir/run/points/" not in m.name or not m.isfile():
                if m.name.endswith("inputs-md5.txt"):
                    for line in tf.extractfile(m).read().decode().splitlines():  # type: ignore[union-attr]
                        digest, path = line.split()
                        if "/volumes/" in path:
                            md5[path.split("/points/")[1].split("/")[0]] = digest
                continue
            rel = m.name.split("/volumes/workdir/run/points/")[1]
            name, _, inner = rel.partition("/")
            if points and name not in points:
                continue
            if inner in ("result.json", "aiperf-phases.yaml", "aiperf/profile_export.jsonl"):
                out = dest / name / inner
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(tf.extractfile(m).read())  # type: ignore[union-attr]
                folders[name] = dest / name
    return folders, md5


def regenerate(point: Path, repo: str, env: dict[str, str]) -> Path:
    """inputs.json of the point's own AIPerf command, sent nowhere."""
    argv = list(json.loads((point / "result.json").read_text())["argv"])
    out = point / "regenerated"
    values = {"--url": CLOSED_URL, "--config": str(point / "aiperf-phases.yaml"), "--artifact-dir": str(out)}
    values["--tokenizer"] = repo
    for flag, value in values.items():
        argv[argv.index(flag) + 1] = value
    subprocess.run([str(AIPERF), *argv[1:]], env={**os.environ, **env}, capture_output=True, timeout=300)
    return out / "inputs.json"


def collisions(snapshot: Path, points: list[str] | None = None, work: Path | None = None) -> dict:
    """Regenerate, check, match: {"corpus_tokens", "prompts", "distinct", "shared": [...], "cached": [...]}."""
    from infersweep.aiperf.flags import tokenizer_as_cached_hub_id
    from infersweep.local.dynamo.toy_model import config_only_model
    from infersweep.results.prompt_repeats import payload_digests, sent_requests

    work = Path(work or tempfile.mkdtemp(prefix="prompt-collisions-"))
    folders, md5 = extract(snapshot, work / "points", set(points) if points else None)
    argv = json.loads(next(iter(folders.values())).joinpath("result.json").read_text())["argv"]
    model = argv[argv.index("--model") + 1]
    repo, env = tokenizer_as_cached_hub_id(config_only_model(model, work / "cache"), work / "hub")
    texts: dict[tuple[str, str], str] = {}  # (point, session) -> digest of its first request's body
    for name, folder in sorted(folders.items()):
        inputs = regenerate(folder, repo, env)
        got = hashlib.md5(inputs.read_bytes()).hexdigest() if inputs.exists() else None
        if got != md5.get(name):
            raise SystemExit(f"{name}: regenerated inputs.json md5 {got} is not the run's {md5.get(name)}")
        texts |= {(name, sid): digest for (sid, turn), digest in payload_digests(inputs).items() if turn == 0}
    where: dict[str, list[tuple[str, str]]] = {}
    for key, text in texts.items():
        where.setdefault(text, []).append(key)
    shared = sorted(keys for keys in where.values() if len(keys) > 1)
    # every request that read more than half its prompt from the cache, wherever (or nowhere) its prompt was sent
    cached = [
        (name, phase, sid, int(total), int(hit), [k for k in where[texts[(name, sid)]] if k != (name, sid)])
        for name, folder in sorted(folders.items())
        for _, sid, _, phase, hit, total in sent_requests(folder / "aiperf" / "profile_export.jsonl")
        if total and hit > 0.5 * total
    ]
    size = subprocess.run(
        [str(AIPERF.parent / "python"), "-c", CORPUS_SIZE.format(repo=repo)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return {
        "corpus_tokens": int(size.stdout.strip().splitlines()[-1]),
        "prompts": len(texts),
        "distinct": len(where),
        "shared": shared,
        "cached": cached,
    }


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot", type=Path)
    ap.add_argument("--points", nargs="*", help="point folders (c8, c4-r1, ...); default every point")
    a = ap.parse_args(argv)
    r = collisions(a.snapshot, a.points)
    n, k = r["corpus_tokens"], r["prompts"]
    lines = [
        f"{k} prompts regenerated (every inputs.json matches the run's md5), {r['distinct']} distinct; AIPerf's "
        f"corpus holds {n:,} tokens, so two prompts coincide with probability about 1/{n:,} (one per offset) "
        f"and these {k} would share {k * (k - 1) / 2 / n:.2f} pair(s) on average",
        "",
        table(
            [[", ".join(f"{p} {s}" for p, s in keys)] for keys in r["shared"]],
            ["the same prompt sent as (point, session)"],
        ),
        "",
        table(
            [
                [p, ph, s, str(t), str(h), ", ".join(f"{q} {u}" for q, u in other) or "nowhere else in the run"]
                for p, ph, s, t, h, other in r["cached"]
            ],
            ["point", "phase", "session", "prompt tokens", "read from cache", "its prompt also sent as"],
        ),
    ]
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
