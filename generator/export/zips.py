"""Zip files that are the same bytes for the same input: entries in path order, one fixed date,
the same permissions and compression for every entry (docs/lms.md)."""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: no build time leaks into a package


def zip_bytes(files: Mapping[str, bytes]) -> bytes:
    """A zip of ``files`` (path inside the zip → bytes), deterministic."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, date_time=FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so the permissions below mean the same everywhere
            info.external_attr = 0o100644 << 16
            zf.writestr(info, files[path], compresslevel=9)
    return out.getvalue()


def write_zip(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file beside it, renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        part.write_bytes(data)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
