"""A tiny, weightless "model" directory that Dynamo's mocker and frontend can serve.

The mocker never runs a network: it only needs a tokenizer (to count and detokenize tokens), a chat
template (the frontend renders prompts with it) and config.json (the mocker sizes its simulated KV
cache from it). Everything is written with the stdlib so the builder works in any env, including
one without `tokenizers`/`transformers`.

Why WordLevel: a word-level vocabulary with a whitespace pre-tokenizer detokenizes to readable,
space-joined words; a tiny byte-level BPE without a matching decoder streams back empty text.
One word or punctuation run is one token, so AIPerf's prompt lengths count the same way here.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from infersweep.paths import params_dir
from infersweep.recipe import RecipeError

MARKER = ".complete"

# Special tokens first, so their ids are stable whatever vocab_size is.
UNK, BOS, EOS, PAD = "[UNK]", "<s>", "</s>", "<pad>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
SPECIAL_TOKENS = (UNK, BOS, EOS, PAD, *ROLE_TOKENS)
SPECIAL_TOKENS_MAP = ("bos_token", "eos_token", "unk_token", "pad_token")

# Common English words (lowercase: the tokenizer lowercases its input) and punctuation. Benchmark
# prompts are English text; mapping their words to real ids, not [UNK], keeps token sequences and
# KV-router prefix hashes closer to a real model's. Rare words still become [UNK].
COMMON_WORDS = """
the of and to a in is it you that he was for on are with as i his they be at one have this from
or had by not word but what some we can out other were all there when up use your how said an each
she which do their time if will way about many then them write would like so these her long make
thing see him two has look more day could go come did number sound no most people my over know
water than call first who may down side been now find any new work part take get place made live
where after back little only round man year came show every good me give our under name very
through just form sentence great think say help low line differ turn cause much mean before move
right boy old too same tell does set three want air well also play small end put home read hand
port large spell add even land here must big high such follow act why ask men change went light
kind off need house picture try us again animal point mother world near build self earth father
head stand own page should country found answer school grow study still learn plant cover food sun
four between state keep eye never last let thought city tree cross farm hard start might story saw
far sea draw left late run while press close night real life few north open seem together next
white children begin got walk example ease paper group always music those both mark often letter
until mile river car feet care second book carry took science eat room friend began idea fish
mountain stop once base hear horse cut sure watch color face wood main enough plain girl usual
young ready above ever red list though feel talk bird soon body dog family direct pose leave song
measure door product black short numeral class wind question happen complete ship area half rock
order fire south problem piece told knew pass since top whole king space heard best hour better
true during hundred five remember step early hold west ground interest reach fast verb sing listen
six table travel less morning ten simple several vowel toward war lay against pattern slow center
love person money serve appear road map rain rule govern pull cold notice voice unit power town
fine certain fly fall lead cry dark machine note wait plan figure star box noun field rest correct
able pound done beauty drive stood contain front teach week final gave green oh quick develop
ocean warm free minute strong special mind behind clear tail produce fact street inch multiply
nothing course stay wheel full force blue object decide surface deep moon island foot system busy
test record boat common gold possible plane stead dry wonder laugh thousand ago ran check game
shape equate hot miss brought heat snow tire bring yes distant fill east paint language among
thou thy thee shall lord sir hath art o am upon yet mine speak doth heart nor queen lady
. , ! ? ; : ' " ( ) - ... 0 1 2 3 4 5 6 7 8 9 10 100
""".split()

# Filler words are built from syllables so generated text still looks like words.
_ONSETS = "b c d f g h j k l m n p r s t v w z br ch dr fl gr kr pl sh st tr".split()
_VOWELS = "a e i o u ai ea ee oo ou".split()


def _filler_words():
    """Yield an endless, deterministic stream of pronounceable pseudo-words."""
    syllables = [o + v for o in _ONSETS for v in _VOWELS]
    for first in syllables:
        for second in syllables:
            yield first + second
    for first in syllables:
        for second in syllables:
            for third in syllables:
                yield first + second + third


def build_vocab(vocab_size: int) -> dict[str, int]:
    """Specials, then common words, then filler words, until `vocab_size` entries."""
    if vocab_size < len(SPECIAL_TOKENS) + 1:
        raise ValueError(f"vocab_size must be > {len(SPECIAL_TOKENS)}, got {vocab_size}")
    vocab: dict[str, int] = {}
    for word in (*SPECIAL_TOKENS, *COMMON_WORDS):
        if len(vocab) >= vocab_size:
            return vocab
        vocab.setdefault(word, len(vocab))
    for word in _filler_words():
        if len(vocab) >= vocab_size:
            break
        vocab.setdefault(word, len(vocab))
    return vocab


def full_vocab(vocab_size: int, special_ids: dict[str, int]) -> dict[str, int]:
    """Every id in [0, vocab_size) a token, with the specials at the ids a real config.json names.

    For real engines on random weights (`--load-format dummy`): the model emits ids across its whole vocabulary
    (Qwen3: 151,936), and an id the tokenizer does not know decodes to nothing, so the frontend sends no text
    for it (Dynamo's DecodeStream, lib/llm/src/tokenizers.rs, emits a chunk only when the decoded text grows)
    and the client saw its first token late. Here every id decodes to a lowercase word or punctuation run,
    which the space-joining WordLevel decode turns into visible text. special_ids: {"<s>": bos, "</s>": eos,
    ...} as the model's config names them; they keep their ids so the engine's stop ids and the tokenizer's
    agree. Deterministic."""
    if vocab_size < len(SPECIAL_TOKENS) + 1:
        raise ValueError(f"vocab_size must be > {len(SPECIAL_TOKENS)}, got {vocab_size}")
    bad = {t: i for t, i in special_ids.items() if not 0 <= i < vocab_size}
    if bad:
        raise ValueError(f"special token ids {bad} are outside the vocabulary [0, {vocab_size})")
    vocab = dict(special_ids)
    taken = set(special_ids.values())
    words = (w for w in (*SPECIAL_TOKENS, *COMMON_WORDS, *_filler_words()) if w not in vocab)
    for token_id in range(vocab_size):
        if token_id not in taken:
            word = next(words)
            while word in vocab:
                word = next(words)
            vocab[word] = token_id
    return dict(sorted(vocab.items(), key=lambda kv: kv[1]))


def _added_token(token_id: int, content: str, special: bool = True) -> dict:
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": special,
    }


def _added_tokens(vocab: dict[str, int], hidden: set[str] | None) -> list[dict]:
    """The added tokens (matched whole before pre-tokenization, so "<|user|>" stays one token); `hidden`: the
    ones decoding skips (special), all of them when None. Extra stop ids (Llama 3.1's eos list) come last."""
    tokens = [*SPECIAL_TOKENS, *(t for t in vocab if t.startswith("<|stop_"))]
    return [_added_token(vocab[t], t, hidden is None or t in hidden) for t in tokens if t in vocab]


def tokenizer_json(vocab: dict[str, int], hidden: set[str] | None = None) -> dict:
    """HF `tokenizers` serialisation of a WordLevel model with a Whitespace pre-tokenizer.

    No decoder on purpose: without one, `tokenizers` joins decoded tokens with single spaces,
    which is exactly what a word-level vocabulary needs. `hidden`: the added tokens that are special (skipped
    when decoding); None: all of them (the mocker's toy model).
    """
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": _added_tokens(vocab, hidden),
        # Lowercase first: "The" and "the" are one token, and far fewer words fall to [UNK].
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": UNK},
    }


# Jinja (rendered by minijinja in the frontend). Content may arrive as a list of parts.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' }} "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}{% if part['type'] == 'text' %}"
    "{{ part['text'] }} {% endif %}{% endfor %}{% endif %}"
    " {{ eos_token }} "
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def tokenizer_config_json(vocab: dict[str, int], hidden: set[str] | None = None) -> dict:
    """`hidden` (a full vocabulary): only the specials the config names are named here, since transformers
    skips every named special when decoding (PreTrainedTokenizerBase.all_special_ids)."""
    named = {t: t if hidden is None or t in hidden else None for t in (BOS, EOS, UNK, PAD)}
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": named[BOS],
        "eos_token": named[EOS],
        "unk_token": named[UNK],
        "pad_token": named[PAD],
        "model_max_length": 32768,
        "clean_up_tokenization_spaces": False,
        "add_bos_token": False,  # the chat template adds it
        "added_tokens_decoder": {
            str(a["id"]): {k: v for k, v in a.items() if k != "id"} for a in _added_tokens(vocab, hidden)
        },
        "chat_template": CHAT_TEMPLATE,
    }


def config_json(vocab: dict[str, int], vocab_size: int, name: str) -> dict:
    """Llama-3-8B-like shapes.

    The mocker reads num_hidden_layers, num_attention_heads, hidden_size, num_key_value_heads and
    torch_dtype to compute KV bytes per token (used for simulated KV-transfer time in disagg);
    the frontend reads max_position_embeddings (context length) and bos/eos ids.
    """
    return {
        "_name_or_path": name,
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "hidden_act": "silu",
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": vocab_size,
        "bos_token_id": vocab[BOS],
        "eos_token_id": vocab[EOS],
        "pad_token_id": vocab[PAD],
    }


def generation_config_json(vocab: dict[str, int]) -> dict:
    # The frontend's model card looks for it (eos ids); harmless if unused.
    return {"bos_token_id": vocab[BOS], "eos_token_id": vocab[EOS], "pad_token_id": vocab[PAD]}


def special_ids_of(config: dict) -> dict[str, int]:
    """{token: id} of the specials a model's config.json names: bos, eos (the first of a list; the others as
    extra stop tokens "<|stop_ID|>"), pad."""
    out: dict[str, int] = {}
    eos = config.get("eos_token_id")
    eos_ids = [e for e in (eos if isinstance(eos, list) else [eos]) if isinstance(e, int)]
    for token, value in ((BOS, config.get("bos_token_id")), (EOS, eos_ids[0] if eos_ids else None)):
        if isinstance(value, int):
            out[token] = value
    if isinstance(config.get("pad_token_id"), int) and config["pad_token_id"] not in out.values():
        out[PAD] = config["pad_token_id"]
    out |= {f"<|stop_{e}|>": e for e in eos_ids[1:] if e not in out.values()}
    return out


def vocab_size_of(config: dict) -> int:
    """The embedding rows a config.json declares (a multimodal model's text_config may declare more)."""
    sizes = [c.get("vocab_size") for c in (config, config.get("text_config") or {}) if isinstance(c, dict)]
    sizes = [s for s in sizes if isinstance(s, int)]
    if not sizes:
        raise ValueError("config.json declares no vocab_size")
    return max(sizes)


def build_toy_model(
    dest: Path,
    *,
    name: str = "infersweep/toy-model",
    vocab_size: int = 32000,
    special_ids: dict[str, int] | None = None,
) -> Path:
    """Write the toy model into `dest` (created if needed) and return `dest`.

    `special_ids` (special_ids_of a real config.json): a full vocabulary (full_vocab) whose specials sit at
    those ids and are the only tokens decoding skips, for real engines on random weights. None: the mocker's
    toy model (specials first, 32k words).

    Deterministic: same arguments, same bytes. Skips work when `dest/.complete` exists and records the same
    arguments, so concurrent steps can share one dir (and a folder built with other arguments is rebuilt).
    Files go to a temp dir first and are moved in, then the marker is written last, so a crash never leaves
    a dir that looks complete but is not.
    """
    dest = Path(dest)
    marker = {"name": name, "vocab_size": vocab_size} | ({"special_ids": special_ids} if special_ids else {})
    try:
        if json.loads((dest / MARKER).read_text()) == marker:
            return dest
    except (OSError, ValueError):
        pass
    (dest / MARKER).unlink(missing_ok=True)
    dest.mkdir(parents=True, exist_ok=True)
    if special_ids:
        vocab, hidden = full_vocab(vocab_size, special_ids), set(special_ids)
        stops = [special_ids[t] for t in special_ids if t == EOS or t.startswith("<|stop_")]
        generation = {k: special_ids[t] for k, t in (("bos_token_id", BOS), ("pad_token_id", PAD)) if t in special_ids}
        generation |= {"eos_token_id": stops if len(stops) > 1 else stops[0]} if stops else {}
    else:
        vocab, hidden = build_vocab(vocab_size), None
        generation = generation_config_json(vocab)
    tok_config = tokenizer_config_json(vocab, hidden)
    files = {
        "tokenizer.json": tokenizer_json(vocab, hidden),
        "tokenizer_config.json": tok_config,
        "config.json": config_json(vocab, vocab_size, name),
        "generation_config.json": generation,
        "special_tokens_map.json": {k: tok_config[k] for k in SPECIAL_TOKENS_MAP if tok_config[k]},
    }
    tmp = Path(tempfile.mkdtemp(prefix=".toy-", dir=dest))
    try:
        for filename, content in files.items():
            (tmp / filename).write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n")
        for filename in files:
            os.replace(tmp / filename, dest / filename)  # atomic per file
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (dest / MARKER).write_text(json.dumps(marker) + "\n")
    return dest


def model_config_file(hf_id: str) -> Path:
    return params_dir() / "model-configs" / f"{hf_id.replace('/', '--')}.json"


def config_only_model(hf_id: str, cache_root: Path) -> Path:
    """<cache_root>/models/<org>--<name>-config-only: toy tokenizer + the real config.json."""
    src = model_config_file(hf_id)
    if not src.is_file():
        known = sorted(p.stem.replace("--", "/") for p in src.parent.glob("*.json"))
        raise RecipeError(
            f"--weights dummy: no architecture config for {hf_id} in {src.parent}/ (known: "
            f"{', '.join(known) or 'none'}); add the model's config.json there as {src.name}, "
            "or run with --weights cache on a model folder that holds its weights"
        )
    out = Path(cache_root) / "models" / f"{src.stem}-config-only"
    config = json.loads(src.read_text())
    # Every id the model can emit is a word the tokenizer decodes to visible text (toy_model.full_vocab), so
    # the client's first chunk is the first token; the specials sit at the ids config.json names.
    build_toy_model(out, name=hf_id, vocab_size=vocab_size_of(config), special_ids=special_ids_of(config))
    if json.loads((out / "config.json").read_text()) != config:
        (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    return out


def model_folder(hf_id: str, weights: str, cache_root: Path) -> Path:
    """The folder the engines load: config-only for random weights, else <cache_root>/models/<org>--<name>."""
    return (
        config_only_model(hf_id, cache_root) if weights == "dummy" else cache_root / "models" / hf_id.replace("/", "--")
    )
