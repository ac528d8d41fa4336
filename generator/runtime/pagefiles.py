"""A model bundle as the files a site serves: classic scripts only, so that pages run from
``file://`` and under a strict CSP (no ``fetch`` of local files, no ``eval``, no inline script).

Every data file is a script that registers one value::

    (function(L){(L.runtimeData=L.runtimeData||{})["<its own file name>"]=<value>;})(self.Labs=self.Labs||{});

``static/loader.js`` adds it with ``<script src>``, takes the value, deletes the key and removes the
element. The files (all in one folder; names fingerprinted):

* ``model-manifest.<hash>.js`` — read first: the model's config and tensor table, every other
  file's name, size in bytes (for the progress bar), decoded length and CRC-32 (a truncated or
  corrupt file is refused), and the shard map;
* ``model-layers-NN.<hash>.js`` — everything a forward pass always needs (all layers, position
  and type embeddings, LayerNorms: the prefix of weights.bin before the token embeddings), cut
  into chunks of :data:`CHUNK_BYTES`, base64;
* ``model-words-NNNN.<hash>.js`` — the token embeddings of :data:`SHARD_ROWS` consecutive ids
  each (int8 rows, then their float16 scales), base64; a sentence loads only the shards of its ids;
* ``model-vocab.<hash>.js`` — the tokenizer's data (:func:`generator.runtime.vocab.tokenizer_data`);
* ``model-license.<hash>.txt`` — the bundle's LICENSE, for the page to link to;
* ``runtime.<hash>.js`` — the code: ``static/forward.js``, ``static/wordpiece.js``,
  ``static/bpe.js``, ``static/decoder-kernels.js``, ``static/decoder-sampling.js``,
  ``static/decoder.js``, ``static/loader.js``, ``static/loader-encoder.js`` and
  ``static/loader-decoder.js``, minified: one runtime for both models
  (:mod:`generator.runtime.decoder` writes a decoder's files).

Base64 in a string literal is the encoding: measured on all-MiniLM-L6-v2, its gzip is 5% above
gzip of the raw bytes, while one character per byte (any mapping of bytes to characters) is 13-20%
above, since UTF-8 spends two bytes on half the byte values. docs/runtime.md has the figures.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.webfiles import fingerprint, json_for_script, minified
from generator.runtime.bundle import LICENSE_FILE, Bundle
from generator.runtime.tensors import layout
from generator.runtime.vocab import tokenizer_data

FORMAT = "attention-labs-runtime"
VERSION = 1
# ~1 MB of weights per script: 12 progress steps for MiniLM, each decoded in a few milliseconds.
CHUNK_BYTES = 1 << 20
# Token embeddings per shard: 64 rows of MiniLM are a 35 KB script. A 20-word sentence has 20-40
# word pieces; over generated ones (a fifth of their words rare or made up) it needs 21 shards
# at the median, 31 at most: 0.7-1.1 MB. Common words have neighbouring ids and share shards.
SHARD_ROWS = 64
STATIC = Path(__file__).resolve().parent / "static"
CODE_FILES = ("forward.js", "wordpiece.js", "bpe.js", "decoder-kernels.js", "decoder-sampling.js", "decoder.js", "loader.js",
              "loader-encoder.js", "loader-decoder.js")  # concatenated in this order into runtime.<hash>.js
WORD_TENSORS = ("embeddings.word.q", "embeddings.word.scales")


@dataclass(frozen=True)
class PageFiles:
    """The files of one model for a site, and what a page needs to name them."""

    files: Mapping[str, bytes]  # file name -> bytes, every file for one folder
    code: str  # the runtime script: add it before calling Labs.runtime.load
    manifest: str  # the manifest script: Labs.runtime.load({manifestSrc: <folder>/<manifest>})
    license: str  # the model's licence, to link from the page
    load_bytes: int  # bytes Labs.runtime.load downloads before the first run (vocabulary and layer chunks)
    manifest_data: Mapping  # what the manifest script registers (docs/runtime.md)
    tokenizer: str = ""  # the tokenizer's data script, which loads on its own (Labs.runtime.tokenizer)


def data_script(name: str, value: str) -> bytes:
    """The script registering ``value`` (JavaScript source of a value) as ``runtimeData[name]``."""
    return (f'(function(L){{(L.runtimeData=L.runtimeData||{{}})["{name}"]={value};}})'
            f"(self.Labs=self.Labs||{{}});\n").encode("utf-8")


def binary_script(stem: str, data: bytes) -> tuple[str, bytes, dict]:
    """A fingerprinted data script holding ``data`` as base64, and its manifest entry."""
    encoded = base64.b64encode(data).decode("ascii")
    name = fingerprint(f"{stem}.js", encoded.encode("ascii"))
    script = data_script(name, f'"{encoded}"')
    return name, script, {"src": name, "size": len(script), "bytes": len(data), "crc32": zlib.crc32(data)}


def code_script() -> tuple[str, bytes]:
    """``runtime.<hash>.js``: the engine and the loader, minified, one classic script."""
    source = "\n".join(minified(STATIC / name) for name in CODE_FILES) + "\n"
    data = source.encode("utf-8")
    return fingerprint("runtime.js", data), data


def page_files(bundle: Bundle, chunk_bytes: int = CHUNK_BYTES, shard_rows: int = SHARD_ROWS) -> PageFiles:
    """Every file a site serves for ``bundle`` (checked by ``read_bundle``); deterministic."""
    assert chunk_bytes > 0 and shard_rows > 0
    meta, config = bundle.meta, bundle.config
    weights = (bundle.folder / "weights.bin").read_bytes()  # read_bundle checked its SHA-256
    table = meta["tensors"]
    dense_end = min(table[name]["offset"] for name in WORD_TENSORS)
    assert all(entry["offset"] + entry["bytes"] <= dense_end
               for name, entry in table.items() if name not in WORD_TENSORS), "token embeddings must come last"
    files: dict[str, bytes] = {}

    chunks = []
    for i, start in enumerate(range(0, dense_end, chunk_bytes)):
        name, script, entry = binary_script(f"model-layers-{i:02d}", weights[start:min(start + chunk_bytes, dense_end)])
        files[name] = script
        chunks.append({**entry, "offset": start})

    words, scales = bundle.tensors["embeddings.word.q"], bundle.tensors["embeddings.word.scales"]
    shards = []
    for index, first in enumerate(range(0, config.vocab_size, shard_rows)):
        rows = slice(first, min(first + shard_rows, config.vocab_size))
        q = words[rows].tobytes()
        scales_offset = len(q) + (-len(q) % 4)  # the scales' Uint16Array needs an even offset; 4 to be safe
        data = q + bytes(scales_offset - len(q)) + scales[rows].tobytes()
        name, script, entry = binary_script(f"model-words-{index:04d}", data)
        files[name] = script
        shards.append({**entry, "count": rows.stop - rows.start, "scales_offset": scales_offset})

    vocab = json_for_script(tokenizer_data(bundle.tokenizer))
    vocab_name = fingerprint("model-vocab.js", vocab.encode("utf-8"))
    files[vocab_name] = data_script(vocab_name, vocab)
    vocab_entry = {"src": vocab_name, "size": len(files[vocab_name])}

    license_bytes = (bundle.folder / LICENSE_FILE).read_bytes()
    license_name = fingerprint("model-license.txt", license_bytes)
    files[license_name] = license_bytes

    dense_tensors = {name: table[name] for name in layout(config) if name not in WORD_TENSORS}
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "model": {**meta["model"], "checkpoint_sha256": meta["checkpoint"]["sha256"], "license_src": license_name},
        "spec": {"config": meta["config"], "group": meta["quantization"]["group"], "tensors": dense_tensors,
                 "shard_rows": shard_rows},
        "dense": {"bytes": dense_end, "chunks": chunks},
        "shards": shards,
        "vocab": vocab_entry,
        "load_bytes": vocab_entry["size"] + sum(chunk["size"] for chunk in chunks),
    }
    return finished(files, manifest, license_name, vocab_name)


def finished(files: dict[str, bytes], manifest: Mapping, license: str, tokenizer: str) -> PageFiles:
    """``files`` with the manifest's script and the runtime's code added: a model's page files."""
    encoded = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    manifest_name = fingerprint("model-manifest.js", encoded.encode("ascii"))
    files[manifest_name] = data_script(manifest_name, encoded)
    code_name, code = code_script()
    files[code_name] = code
    return PageFiles(files=files, code=code_name, manifest=manifest_name, license=license,
                     load_bytes=manifest["load_bytes"], manifest_data=manifest, tokenizer=tokenizer)


def write_page_files(page: PageFiles, folder: Path) -> None:
    """Write every file of ``page`` into ``folder`` (for tests and benchmarks; a build writes its own)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in page.files.items():
        (folder / name).write_bytes(data)
