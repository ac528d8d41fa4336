"""Reading and writing the safetensors format with NumPy alone.

The format (https://github.com/huggingface/safetensors, "Format" section) is tiny:

    [8 bytes]  N, the header length, unsigned 64-bit little-endian
    [N bytes]  a UTF-8 JSON object: {"<name>": {"dtype": "F32", "shape": [2, 3],
               "data_offsets": [begin, end]}, ..., "__metadata__": {"<str>": "<str>"}}
               (the writer pads it with spaces to a multiple of 8 bytes)
    [rest]     the byte buffer; a tensor's bytes are buffer[begin:end], little-endian, C order

Reading validates everything a broken or truncated download could get wrong and raises
:class:`~generator.errors.BuildError` naming the file: a short file, a header that is not
a JSON object, an unknown dtype, a shape that is not a list of non-negative integers,
offsets that fall outside the buffer or do not match ``prod(shape) * itemsize``.
Floating tensors (F16, BF16, F32, F64) come out as float32 (or float64 if asked);
integer and bool tensors keep their own NumPy dtype.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from generator.errors import BuildError, display_path
from generator.filepolicy import refused

# safetensors dtype name -> (little-endian NumPy dtype of the stored bytes, bytes per element).
# BF16 has no NumPy dtype: it is stored as "<u2" and widened to float32 by hand.
_STORED: dict[str, str] = {
    "BOOL": "|b1",
    "U8": "|u1",
    "I8": "|i1",
    "U16": "<u2",
    "I16": "<i2",
    "U32": "<u4",
    "I32": "<i4",
    "U64": "<u8",
    "I64": "<i8",
    "F16": "<f2",
    "BF16": "<u2",
    "F32": "<f4",
    "F64": "<f8",
}
FLOAT_DTYPES = frozenset({"F16", "BF16", "F32", "F64"})
_NAME_OF: dict[str, str] = {  # NumPy dtype.str -> safetensors name, for the writer
    "|b1": "BOOL", "|u1": "U8", "|i1": "I8", "<u2": "U16", "<i2": "I16", "<u4": "U32",
    "<i4": "I32", "<u8": "U64", "<i8": "I64", "<f2": "F16", "<f4": "F32", "<f8": "F64",
}
# The reference implementation refuses headers above 100 MB; so do we (a corrupt length
# field would otherwise make us try to read gigabytes).
MAX_HEADER_BYTES = 100_000_000


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor lives in a safetensors file. ``begin``/``end`` are absolute file offsets."""

    name: str
    dtype: str  # safetensors name, e.g. "F32"
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class SafetensorsHeader:
    """The parsed, validated header of a safetensors file."""

    path: Path
    tensors: Mapping[str, TensorInfo]
    metadata: Mapping[str, str]


def _fail(path: Path, message: str) -> BuildError:
    return BuildError(message, path=display_path(path))


def read_header(path: Path) -> SafetensorsHeader:
    """Parse and validate the header of ``path``; reads only the first 8 + N bytes.

    Raises :class:`BuildError` naming the file for a missing/unreadable file or any
    violation of the format described in the module docstring.
    """
    path = Path(path)
    problem = refused(path, None)  # before it is opened: a FIFO would block, /dev/zero never end
    if problem is not None:
        raise problem
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            prefix = f.read(8)
            if len(prefix) < 8:
                raise _fail(path, f"not a safetensors file: {size} bytes, too short for the 8-byte header length")
            (header_len,) = struct.unpack("<Q", prefix)
            if header_len > MAX_HEADER_BYTES or 8 + header_len > size:
                raise _fail(path, f"not a safetensors file: header length {header_len} does not fit in a file of {size} bytes")
            raw = f.read(header_len)
    except FileNotFoundError:
        raise _fail(path, "file not found") from None
    except IsADirectoryError:
        raise _fail(path, "expected a file but found a folder") from None
    except OSError as exc:
        raise _fail(path, f"cannot read file: {exc.strerror}") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:  # ValueError: also an integer of thousands of digits
        raise _fail(path, f"safetensors header is not valid UTF-8 JSON ({exc})") from None
    except RecursionError:
        raise _fail(path, "safetensors header is nested too deeply to be a safetensors header") from None
    if not isinstance(header, dict):
        raise _fail(path, "safetensors header is not a JSON object")

    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _fail(path, "safetensors __metadata__ must map strings to strings")

    data_start = 8 + header_len
    data_len = size - data_start
    tensors: dict[str, TensorInfo] = {}
    for name, entry in header.items():
        if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
            raise _fail(path, f"tensor {name!r}: header entry needs 'dtype', 'shape' and 'data_offsets'")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if dtype not in _STORED:
            raise _fail(path, f"tensor {name!r}: unknown dtype {dtype!r} (known: {', '.join(sorted(_STORED))})")
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise _fail(path, f"tensor {name!r}: shape {shape!r} is not a list of non-negative integers")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(type(o) is int for o in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= data_len
        ):
            raise _fail(path, f"tensor {name!r}: data_offsets {offsets!r} fall outside the {data_len}-byte data buffer")
        expected = math.prod(shape) * np.dtype(_STORED[dtype]).itemsize
        if offsets[1] - offsets[0] != expected:
            raise _fail(
                path,
                f"tensor {name!r}: {dtype} {shape} needs {expected} bytes but data_offsets {offsets} span {offsets[1] - offsets[0]}",
            )
        tensors[name] = TensorInfo(name, dtype, tuple(shape), data_start + offsets[0], data_start + offsets[1])
    spans = sorted((t.begin, t.end, t.name) for t in tensors.values() if t.end > t.begin)
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start < end:
            raise _fail(path, f"tensors {first!r} and {second!r} overlap in the data buffer")
    return SafetensorsHeader(path, tensors, metadata)


def _decode(raw: np.ndarray, info: TensorInfo, float_dtype: type | None) -> np.ndarray:
    """Bytes of one tensor -> a fresh, owned, native-endian array of ``info.shape``."""
    stored = raw.view(_STORED[info.dtype])
    if info.dtype == "BF16":  # bfloat16 is the top half of a float32
        stored = (stored.astype(np.uint32) << 16).view(np.float32)
    if info.dtype in FLOAT_DTYPES:
        target = float_dtype or (np.float64 if info.dtype == "F64" else np.float32)
        return stored.astype(target).reshape(info.shape)  # astype copies: the result owns its memory
    return stored.astype(stored.dtype.newbyteorder("=")).reshape(info.shape)


def load_safetensors(
    path: Path,
    names: list[str] | None = None,
    float_dtype: type | None = None,
) -> dict[str, np.ndarray]:
    """Read tensors from ``path``: all of them, or only ``names`` (in the given order).

    ``float_dtype`` (``np.float32`` or ``np.float64``) converts every floating tensor to it;
    by default F16/BF16/F32 become float32 and F64 stays float64. The file is memory-mapped,
    so reading a few tensors of a large file touches only their bytes; the returned arrays
    are copies and keep nothing open. Raises :class:`BuildError` naming the file for a bad
    header or a requested name that is absent.
    """
    header = read_header(path)
    wanted = list(header.tensors) if names is None else names
    missing = [n for n in wanted if n not in header.tensors]
    if missing:
        raise _fail(header.path, f"missing tensor(s): {', '.join(missing)}")
    out: dict[str, np.ndarray] = {}
    if not wanted:
        return out
    mapped = np.memmap(header.path, dtype=np.uint8, mode="r")
    try:
        for name in wanted:
            info = header.tensors[name]
            out[name] = _decode(mapped[info.begin : info.end], info, float_dtype)
    finally:
        del mapped
    return out


def save_safetensors(path: Path, tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None) -> None:
    """Write ``tensors`` to ``path`` in the safetensors format, deterministically.

    Tensors are laid out in sorted name order (as the reference writer does) and the header
    is space-padded to a multiple of 8 bytes. Supports bool, (u)int8..64 and float16/32/64;
    there is no NumPy bfloat16, so BF16 is read-only here.
    """
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(tensors):
        array = np.asarray(tensors[name])
        little = array.astype(array.dtype.newbyteorder("<"), copy=False)
        dtype_name = _NAME_OF.get(little.dtype.str)
        assert dtype_name is not None, f"tensor {name!r}: dtype {array.dtype} has no safetensors equivalent"
        blob = np.ascontiguousarray(little).tobytes()
        header[name] = {"dtype": dtype_name, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    with Path(path).open("wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)
