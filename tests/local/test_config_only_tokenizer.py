"""TTFT is the first token (issue 32, item 1): the config-only model folder of `--workers gpu --weights dummy`
has a tokenizer in which every id the model can emit decodes to visible text.

Before, the folder carried the mocker's 32k-word toy tokenizer beside Qwen3's 151,936-row config: a random
first token above 32k decoded to nothing, the frontend sent no chunk for it, and the client's TTFT was the
first VISIBLE token's (+45 % at c1 on the H200). These tests load the folder with the real `tokenizers` /
`transformers` (the AIPerf env has both) the way the frontend (a DecodeStream) and vLLM (transformers) do.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from infersweep.local.dynamo.toy_model import config_only_model, full_vocab, special_ids_of
from infersweep.paths import REPO_ROOT, venv_python

MODELS = ("Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B-Instruct")
TOKENIZER_PY = Path(venv_python("aiperf"))

# Run in the AIPerf env: the frontend's view (tokenizers, its DecodeStream after a prompt) and vLLM's
# (transformers' AutoTokenizer) of every id in [0, vocab_size).
CHECK = r"""
import json, random, sys
from tokenizers import Tokenizer
from tokenizers.decoders import DecodeStream
from transformers import AutoTokenizer
d = sys.argv[1]
cfg = json.load(open(d + "/config.json"))
n = cfg["vocab_size"]
tok = Tokenizer.from_file(d + "/tokenizer.json")
texts = tok.decode_batch([[i] for i in range(n)], skip_special_tokens=True)
hidden = [i for i, t in enumerate(texts) if not (t.strip() and t.isascii() and t.isprintable())]
ids = [i for i in (random.Random(7).randrange(n) for _ in range(3000)) if i not in hidden]
back = tok.encode(tok.decode(ids, skip_special_tokens=True), add_special_tokens=False).ids
stream = DecodeStream(skip_special_tokens=True)
prompt = tok.encode("<|user|> hello there <|assistant|>", add_special_tokens=False).ids
for i in prompt:
    stream.step(tok, i)
silent = sum(stream.step(tok, i) is None for i in ids[:300])
hf = AutoTokenizer.from_pretrained(d)
print(json.dumps({"size": tok.get_vocab_size(), "hf_size": len(hf), "hidden": hidden, "roundtrip": back == ids,
                  "silent_steps": silent, "hf_eos": hf.eos_token_id, "hf_bos": hf.bos_token_id,
                  "hf_hidden": sorted(hf.all_special_ids)}))
"""


def _loaded(folder: Path) -> dict:
    proc = subprocess.run(
        [str(TOKENIZER_PY), "-c", CHECK, str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_full_vocabulary_puts_the_configs_specials_at_their_ids_and_a_word_everywhere_else():
    config = {"vocab_size": 1000, "bos_token_id": 990, "eos_token_id": [991, 995], "pad_token_id": 3}
    vocab = full_vocab(config["vocab_size"], special_ids_of(config))
    assert sorted(vocab.values()) == list(range(1000))
    assert (vocab["<s>"], vocab["</s>"], vocab["<pad>"], vocab["<|stop_995|>"]) == (990, 991, 3, 995)
    words = [t for t, i in vocab.items() if i not in (990, 991, 3, 995)]
    assert all(w.isascii() and w.isprintable() and w.strip() == w and w for w in words)
    with pytest.raises(ValueError, match=r"outside the vocabulary \[0, 1000\)"):
        full_vocab(1000, {"</s>": 1000})


@pytest.mark.slow  # a subprocess decodes every id (~20-60 s per model on 2 busy cores)
@pytest.mark.skipif(not TOKENIZER_PY.exists(), reason="needs the AIPerf env (tokenizers, transformers) at .venv-aiperf")
@pytest.mark.parametrize("hf_id", MODELS)
def test_every_id_of_the_config_only_model_decodes_to_visible_text(tmp_path, hf_id):
    folder = config_only_model(hf_id, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    got = _loaded(folder)
    n = config["vocab_size"]
    assert (got["size"], got["hf_size"]) == (n, n)
    # only the ids config.json names as bos/eos (the engine stops at eos) decode to nothing
    eos = config["eos_token_id"] if isinstance(config["eos_token_id"], list) else [config["eos_token_id"]]
    assert sorted(got["hidden"]) == sorted({config["bos_token_id"], *eos})
    assert (got["hf_eos"], got["hf_bos"]) == (eos[0], config["bos_token_id"])
    assert set(got["hf_hidden"]) <= set(got["hidden"])
    assert got["roundtrip"], "decode -> encode changed the token count"
    assert got["silent_steps"] == 0, "the frontend's incremental decode held back text for some tokens"
    assert json.loads((folder / "generation_config.json").read_text())["eos_token_id"] in (eos[0], eos)


def test_a_folder_built_with_the_old_tokenizer_is_rebuilt(tmp_path):
    from infersweep.local.dynamo.toy_model import build_toy_model

    out = tmp_path / "models" / "Qwen--Qwen3-32B-config-only"
    build_toy_model(out)  # what the folder held before: the mocker's 32k words
    folder = config_only_model("Qwen/Qwen3-32B", tmp_path)
    vocab = json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]
    assert len(vocab) == 151936 and vocab["</s>"] == 151645
