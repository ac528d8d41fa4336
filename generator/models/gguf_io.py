"""GGUF files — llama.cpp's model format — read with the ``gguf`` library, and the Llama config in them.

A GGUF file is a header (the magic ``GGUF``, a version, key/value metadata such as
``llama.block_count`` or ``tokenizer.ggml.tokens``), a table of tensors (name, type, dimensions,
offset) and the tensor data. The ``gguf`` package is the llama.cpp project's own reader: it
memory-maps the file and parses the header; :func:`read_gguf` wraps it so that a file that is not
GGUF, is truncated or damaged, or is a named pipe or a device gives a :class:`BuildError` naming
the file, never a traceback or a hang.

Shapes here are NumPy's: GGUF lists a tensor's dimensions fastest-first (``ne0`` is the row
length), so a matrix GGUF calls ``[576, 1536]`` is ``[1536, 576]`` here — ``[out, in]``, the layout
Hugging Face's ``nn.Linear`` uses, each row being what one output sums over.

Quantized types (ggml's block formats; each row is cut into blocks of 32 consecutive values)::

    Q8_0  34 bytes a block: d (float16), then 32 int8 q        x = d · q
    Q4_1  20 bytes a block: d (float16), m (float16), then 16 bytes; byte j holds value j in its
          low nibble and value j + 16 in its high nibble        x = d · q + m,  q in 0..15
    F16, F32  plain little-endian values

:func:`dequantize` turns any of them into float32 with the library's ``gguf.quants.dequantize``
(tests/test_llama.py checks it against a slow block-by-block decoding of the bytes). Both
products are computed in float32, as ggml and transformers' GGUF loader do.
"""

from __future__ import annotations

import functools
import math
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from generator.errors import BuildError, display_path
from generator.filepolicy import special_kind

MAGIC = b"GGUF"
# The types this reader dequantizes (and the tests check): what SmolLM2's GGUF holds (Q4_1 layers,
# a Q8_0 embedding table, F32 norms) and plain float16.
SUPPORTED_TYPES = ("F32", "F16", "Q8_0", "Q4_1")

# Far beyond any Llama-family model a page could run (SmolLM2-135M: 30 layers, d = 576, f = 1536,
# 49,152 tokens), but small enough that a crafted header cannot make us build millions of tensor
# names or allocate gigabytes before the tensor table is checked.
LIMITS = {
    "vocab_size": 1_000_000,
    "hidden_size": 16_384,
    "n_layers": 256,
    "n_heads": 256,
    "n_kv_heads": 256,
    "intermediate_size": 65_536,
    "context_length": 1 << 20,
}


@dataclass(frozen=True, eq=False)
class GGUFTensor:
    """One tensor as stored: its type and NumPy shape, and its bytes (a view into the file's map)."""

    name: str
    type: str  # ggml's type name: "F32", "F16", "Q8_0", "Q4_1", ...
    shape: tuple[int, ...]  # NumPy order: [rows, row length] for a matrix
    raw: np.ndarray  # F32/F16: the values; quantized: uint8 [rows, bytes per row]


@dataclass(frozen=True, eq=False)
class GGUFFile:
    """A parsed GGUF: its metadata as Python values and its tensors by name."""

    path: Path
    metadata: Mapping[str, Any]  # key -> str, int, float, bool or a list of them
    tensors: Mapping[str, GGUFTensor]


@dataclass(frozen=True)
class LlamaConfig:
    """The numbers of a Llama-family decoder, read from a GGUF's ``llama.*`` metadata."""

    vocab_size: int  # V: tokens, rows of the embedding table
    hidden_size: int  # d: width of the residual stream
    n_layers: int  # L
    n_heads: int  # query heads
    n_kv_heads: int  # key/value heads; each serves n_heads / n_kv_heads query heads (grouped-query attention)
    head_dim: int  # width of one head's query, key and value
    intermediate_size: int  # f: width of the SwiGLU MLP
    context_length: int  # the longest sequence the model was trained on
    rope_theta: float = 10_000.0  # RoPE base; llama.cpp's default when the file names none
    rms_norm_eps: float = 1e-5  # added to the mean square in every RMSNorm
    tied_embeddings: bool = True  # no output.weight: the unembedding is the token embedding table

    @property
    def group_size(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads


def _fail(path: Path, message: str) -> BuildError:
    return BuildError(message, path=display_path(path))


def _field_value(field) -> Any:
    value = field.contents()
    if isinstance(value, np.generic):  # a scalar the library left as a NumPy value
        value = value.item()
    return value


def read_gguf(path: Path) -> GGUFFile:
    """Parse a GGUF file's metadata and tensor table; the tensor data stays memory-mapped.

    Raises :class:`BuildError` naming the file: missing, a folder, a FIFO or a device (refused
    before anything opens it), not GGUF (wrong magic), a version the library does not read,
    truncated or damaged (the header or a tensor runs past the end of the file).

    A regular file is parsed once a process while its size and modification time stay the same:
    the library reads the tokenizer's 98,000 strings one by one (about a second of CPU), and a
    build asks for the decoder from several kinds (the page's engine, lab 03's BPE tokenizer).
    The result is shared: callers must not change it.
    """
    path = Path(path)
    if special_kind(path) is None:
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode):
            return _read_gguf_once(str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return _read_gguf(path)


@functools.lru_cache(maxsize=2)
def _read_gguf_once(path: str, dev: int, ino: int, size: int, mtime_ns: int) -> GGUFFile:
    return _read_gguf(Path(path))


def _read_gguf(path: Path) -> GGUFFile:
    import gguf  # the llama.cpp project's reader; imported here so the rest of the package loads without it

    what = special_kind(path)  # before anything opens it: a FIFO with no writer would block for ever
    if what is not None:
        raise _fail(path, f"this is {what}, not a regular file; a model is read only from a file")
    try:
        with path.open("rb") as f:
            head = f.read(8)
    except FileNotFoundError:
        raise _fail(path, "file not found") from None
    except IsADirectoryError:
        raise _fail(path, "expected a GGUF file but found a folder") from None
    except OSError as exc:
        raise _fail(path, f"cannot read file: {exc.strerror}") from None
    if head[:4] != MAGIC:
        raise _fail(path, f"not a GGUF file: its first bytes are {head[:4]!r}, not {MAGIC!r}" if head
                    else "not a GGUF file: it is empty")
    try:
        reader = gguf.GGUFReader(path)
    except ValueError as exc:
        if "version" in str(exc):
            raise _fail(path, f"a GGUF version the gguf library cannot read ({exc})") from None
        if "duplicate" in str(exc).lower():
            raise _fail(path, f"the file is damaged: {exc}") from None
        # The library's own words here are about array shapes ("cannot reshape array of size ...").
        raise _fail(path, "the file is truncated or damaged: its header or tensor data runs past its end "
                          f"({path.stat().st_size:,} bytes)") from None
    except (IndexError, KeyError, OverflowError, TypeError, UnicodeDecodeError, MemoryError) as exc:
        raise _fail(path, f"the file is damaged: its header cannot be parsed ({type(exc).__name__}: {exc})") from None
    except OSError as exc:
        raise _fail(path, f"cannot read file: {exc.strerror}") from None
    try:
        metadata = {name: _field_value(field) for name, field in reader.fields.items()}
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise _fail(path, f"the file is damaged: a metadata value cannot be decoded ({exc})") from None
    tensors = {}
    for t in reader.tensors:
        shape = tuple(int(n) for n in reversed(t.shape.tolist()))
        tensors[t.name] = GGUFTensor(name=t.name, type=t.tensor_type.name, shape=shape, raw=t.data)
    return GGUFFile(path=path, metadata=metadata, tensors=tensors)


def dequantize(tensor: GGUFTensor) -> np.ndarray:  # -> float32 [*tensor.shape]
    """The tensor's values as a new float32 array of its shape (never a view of the file).

    Raises :class:`BuildError` for a type outside :data:`SUPPORTED_TYPES`.
    """
    import gguf

    if tensor.type not in SUPPORTED_TYPES:
        raise BuildError(f"tensor {tensor.name!r} is {tensor.type}; this reader dequantizes "
                         f"{', '.join(SUPPORTED_TYPES)}")
    with np.errstate(all="ignore"):  # a damaged scale gives NaN or inf here; the loader checks and says so
        values = gguf.dequantize(tensor.raw, gguf.GGMLQuantizationType[tensor.type])
    out = np.array(values, dtype=np.float32, copy=True).reshape(tensor.shape)
    assert out.shape == tensor.shape, f"{tensor.name}: {out.shape} != {tensor.shape}"
    return out


# ---- the Llama config --------------------------------------------------------------------------


def _metadata_int(gg: GGUFFile, key: str, limit: int | None = None, default: int | None = None) -> int:
    value = gg.metadata.get(key, default)
    if value is None:
        raise _fail(gg.path, f"the metadata has no {key!r}: not a complete Llama GGUF")
    if type(value) is not int or value <= 0:
        raise _fail(gg.path, f"metadata {key!r} must be a positive whole number, not {value!r}")
    if limit is not None and value > limit:
        raise _fail(gg.path, f"metadata {key!r} is {value:,}, more than this reader accepts ({limit:,})")
    return value


def _metadata_float(gg: GGUFFile, key: str, default: float, low: float, high: float) -> float:
    value = gg.metadata.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value < high:
        raise _fail(gg.path, f"metadata {key!r} must be a number between {low:g} and {high:g}, not {value!r}")
    return float(value)


def llama_config(gg: GGUFFile) -> LlamaConfig:
    """The :class:`LlamaConfig` of a GGUF, checked against its own tensor table.

    Raises :class:`BuildError` naming the file: another architecture than ``llama``; missing or
    out-of-range numbers; heads that do not divide the width or each other; RoPE scaling, partial
    RoPE or experts (not in this forward pass); a tensor that is missing, has another shape than
    the numbers imply, or is not one of the plain Llama's; a type this reader cannot dequantize.
    """
    arch = gg.metadata.get("general.architecture")
    if arch != "llama":
        raise _fail(gg.path, f"architecture {arch!r} is not Llama; this reader runs 'llama' models "
                             "(such as SmolLM2)")
    p = "llama."
    d = _metadata_int(gg, p + "embedding_length", LIMITS["hidden_size"])
    n_layers = _metadata_int(gg, p + "block_count", LIMITS["n_layers"])
    n_heads = _metadata_int(gg, p + "attention.head_count", LIMITS["n_heads"])
    n_kv = _metadata_int(gg, p + "attention.head_count_kv", LIMITS["n_kv_heads"], default=n_heads)
    f = _metadata_int(gg, p + "feed_forward_length", LIMITS["intermediate_size"])
    context = _metadata_int(gg, p + "context_length", LIMITS["context_length"])
    if d % n_heads:
        raise _fail(gg.path, f"embedding_length {d} is not divisible by head_count {n_heads}")
    if n_heads % n_kv:
        raise _fail(gg.path, f"head_count {n_heads} is not a multiple of head_count_kv {n_kv}")
    head_dim = d // n_heads
    if head_dim % 2:
        raise _fail(gg.path, f"the head width {head_dim} is odd; RoPE rotates pairs of dimensions")
    rope_dims = _metadata_int(gg, p + "rope.dimension_count", default=head_dim)
    if rope_dims != head_dim:
        raise _fail(gg.path, f"rope.dimension_count {rope_dims} differs from the head width {head_dim}: "
                             "partial RoPE is not supported")
    scaling = gg.metadata.get(p + "rope.scaling.type", "none")
    if scaling != "none":
        raise _fail(gg.path, f"RoPE scaling {scaling!r} is not supported (only plain RoPE)")
    if gg.metadata.get(p + "expert_count", 0):
        raise _fail(gg.path, "a mixture-of-experts model is not supported")
    embedding = gg.tensors.get("token_embd.weight")
    if embedding is None:
        raise _fail(gg.path, "tensor 'token_embd.weight' is missing")
    vocab = embedding.shape[0] if len(embedding.shape) == 2 else 0
    if not 0 < vocab <= LIMITS["vocab_size"]:
        raise _fail(gg.path, f"tensor 'token_embd.weight' has shape {list(embedding.shape)}; expected [tokens, {d}]")
    declared = gg.metadata.get(p + "vocab_size", vocab)
    if declared != vocab:
        raise _fail(gg.path, f"metadata 'llama.vocab_size' is {declared!r} but 'token_embd.weight' has {vocab} rows")
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=d, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim,
        intermediate_size=f, context_length=context,
        rope_theta=_metadata_float(gg, p + "rope.freq_base", 10_000.0, 0.0, 1e12),
        rms_norm_eps=_metadata_float(gg, p + "attention.layer_norm_rms_epsilon", 1e-5, 0.0, 1.0),
        tied_embeddings="output.weight" not in gg.tensors,
    )
    check_tensors(gg, config)
    return config


def expected_tensors(config: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """GGUF tensor name -> NumPy shape that ``config`` implies (matrices [out, in])."""
    d, hd, f = config.hidden_size, config.head_dim, config.intermediate_size
    shapes: dict[str, tuple[int, ...]] = {"token_embd.weight": (config.vocab_size, d), "output_norm.weight": (d,)}
    if not config.tied_embeddings:
        shapes["output.weight"] = (config.vocab_size, d)
    for i in range(config.n_layers):
        b = f"blk.{i}."
        shapes.update({
            b + "attn_norm.weight": (d,),
            b + "attn_q.weight": (config.n_heads * hd, d),
            b + "attn_k.weight": (config.n_kv_heads * hd, d),
            b + "attn_v.weight": (config.n_kv_heads * hd, d),
            b + "attn_output.weight": (d, config.n_heads * hd),
            b + "ffn_norm.weight": (d,),
            b + "ffn_gate.weight": (f, d),
            b + "ffn_up.weight": (f, d),
            b + "ffn_down.weight": (d, f),
        })
    return shapes


def check_tensors(gg: GGUFFile, config: LlamaConfig) -> None:
    """Every tensor ``config`` calls for, with its shape and a supported type, and nothing else."""
    expected = expected_tensors(config)
    for name, shape in expected.items():
        tensor = gg.tensors.get(name)
        if tensor is None:
            raise _fail(gg.path, f"tensor {name!r} is missing (the metadata says {config.n_layers} layers)")
        if tensor.shape != shape:
            raise _fail(gg.path, f"tensor {name!r} has shape {list(tensor.shape)} but the metadata implies {list(shape)}")
        if tensor.type not in SUPPORTED_TYPES:
            raise _fail(gg.path, f"tensor {name!r} is {tensor.type}; this reader dequantizes {', '.join(SUPPORTED_TYPES)}")
    extra = sorted(set(gg.tensors) - set(expected))
    if extra:
        raise _fail(gg.path, f"unexpected tensor {extra[0]!r}: not part of the plain Llama architecture this "
                             f"reader runs ({len(extra)} such tensor{'s' * (len(extra) != 1)})")


def n_parameters(config: LlamaConfig) -> int:
    """Weights in the model, the tied embedding table counted once."""
    return int(sum(math.prod(shape) for shape in expected_tensors(config).values()))
