"""The runtime in a site: where a model bundle's page files go, how a lab page names them, and
where a bundle comes from — a committed bundle folder or a checkpoint quantized at build.

Every kind that offers the in-page model goes through here, so that an attention lab, a tokens
lab and an embeddings lab that use the same bundle load the same files from the same place:

* :func:`site_files` — the files to return from ``LabKind.site_files``: the bundle's page files
  (:mod:`generator.runtime.pagefiles`) under ``assets/runtime/<bundle id>/``;
* :func:`page_ref` — what a lab page embeds to load them (URLs relative to ``labs/<slug>/``);
* :func:`bundle_at` — a committed bundle folder, read and checked once per process;
* :func:`bundle_from_checkpoint` — a checkpoint folder quantized into a bundle, kept in the build
  cache's ``store`` when there is one, so a warm build does not quantize again;
* :func:`decoder_site_files` and :func:`decoder_page_ref` — the same two for a decoder's GGUF
  (:mod:`generator.runtime.decoder`), under ``assets/runtime/<GGUF id>/``.

The bundle id is the first 16 hex digits of the SHA-256 of its ``bundle.json``, which records the
SHA-256 of every other file of the bundle: two bundles with one id are the same bundle, and a site
can carry several.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from generator.errors import BuildError, display_path
from generator.filepolicy import link_boundary  # noqa: F401  (the kinds' way to it: the folder a model's links may lead within)
from generator.runtime.bundle import BUNDLE_FILE, Bundle, export_bundle, file_sha256, read_bundle
from generator.runtime import decoder
from generator.runtime.pagefiles import PageFiles, page_files

SITE_FOLDER = "assets/runtime"  # in the site: <SITE_FOLDER>/<bundle id>/<file>
_FROM_LAB_PAGE = "../../"  # a lab page is labs/<slug>/index.html


def bundle_id(bundle: Bundle) -> str:
    """The bundle's name in the site: 16 hex digits of the SHA-256 of its bundle.json."""
    return _bundle_id(bundle.folder / BUNDLE_FILE)


def _bundle_id(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _stamp(folder: Path) -> tuple:
    """What changes when a bundle folder's files change: each file's kind, size and modification
    time, and where a link leads."""
    def one(p: Path) -> tuple:
        try:
            st = p.stat()
            return p.name, st.st_mode, st.st_size, st.st_mtime_ns, os.readlink(p) if p.is_symlink() else ""
        except OSError:  # a dangling link or a loop: read_bundle says what is wrong
            return p.name, 0, 0, 0, ""
    try:
        return tuple(sorted(one(p) for p in folder.iterdir()))
    except OSError:
        return ()


def bundle_at(folder: Path, inside: Path | None = None) -> Bundle:
    """The bundle in ``folder``, read and every byte checked (:func:`read_bundle`) once per process
    while its files stay the same. ``inside``: the folder its files' links may lead within (the
    site's content folder, as for every content file; None: the bundle's own folder). Raises
    BuildError naming the file for anything wrong."""
    folder = Path(folder).resolve()
    return _read(folder, Path(inside).resolve() if inside is not None else None, _stamp(folder))


@functools.lru_cache(maxsize=4)
def _read(folder: Path, inside: Path | None, stamp: tuple) -> Bundle:
    return read_bundle(folder, inside)


_PAGE_FILES: dict[tuple[Path, tuple], tuple[str, PageFiles]] = {}  # (folder, stamp) -> id, files or names only
_PAGE_FILES_MAX = 4


def _files_of(bundle: Bundle, keep: bool = True) -> tuple[str, PageFiles]:
    """The bundle's page files (``keep``), or only their names, made once per process while its
    files stay the same: every page of its labs names them (in a build worker, maybe), only the
    build's own process writes them (MiniLM's are 33 MB). Made with the files, the names serve
    both; a build that makes the files before forking its workers leaves them nothing to make."""
    folder = bundle.folder.resolve()
    key = (folder, _stamp(folder))
    found = _PAGE_FILES.get(key)
    if found is None or (keep and not found[1].files):
        found = (bundle_id(bundle), page_files(bundle, keep=keep))
        if len(_PAGE_FILES) >= _PAGE_FILES_MAX:
            _PAGE_FILES.pop(next(iter(_PAGE_FILES)))
        _PAGE_FILES[key] = found
    return found


def site_files(bundle: Bundle) -> dict[str, bytes]:
    """The bundle's page files by path in the site (made once per process per bundle)."""
    ident, files = _files_of(bundle)
    return {f"{SITE_FOLDER}/{ident}/{name}": data for name, data in files.files.items()}


def page_ref(bundle: Bundle) -> dict[str, Any]:
    """What a lab page needs to offer the bundle's model, JSON-ready: the URLs (relative to the lab
    page) of the runtime's code, the manifest ``Labs.runtime.load`` reads first and the model's
    licence; the bytes a first use downloads before its first run (vocabulary and layers; the
    token-embedding shards of a sentence come on top); the model's name and the bundle id."""
    ident, files = _files_of(bundle, keep=False)
    folder = f"{_FROM_LAB_PAGE}{SITE_FOLDER}/{ident}/"
    return {"id": ident, "model": bundle.meta["model"]["name"], "code": folder + files.code,
            "manifest": folder + files.manifest, "license": folder + files.license,
            "download_bytes": files.load_bytes}


def bundle_from_checkpoint(checkpoint: Path, store: Path | None) -> Bundle:
    """``checkpoint`` (a BERT folder: config.json, model.safetensors, vocab.txt) quantized into a
    bundle, exactly as ``export_bundle`` makes one (the same checkpoint gives the same bytes). With
    a ``store`` folder (the build cache's), the bundle is kept there under the checkpoint's
    SHA-256 and read back by later builds; without one, it is made in a temporary folder once per
    process. Raises BuildError naming the file for a bad checkpoint."""
    checkpoint = Path(checkpoint).resolve()
    weights = checkpoint / "model.safetensors"
    if not weights.is_file():
        raise BuildError("model.safetensors not found", path=display_path(weights))
    sha = file_sha256(weights)
    if store is None:
        return bundle_at(_quantized_once(checkpoint, sha))
    kept = Path(store) / "bundles" / sha
    if (kept / BUNDLE_FILE).is_file():
        try:
            bundle = bundle_at(kept)
            if bundle.meta["checkpoint"]["sha256"] == sha:
                return bundle
        except BuildError:  # a damaged cache entry is made again
            pass
    kept.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{sha[:8]}-", dir=kept.parent))
    try:
        export_bundle(checkpoint, fresh)
        shutil.rmtree(kept, ignore_errors=True)
        os.replace(fresh, kept)  # whole or not at all: a killed build leaves no half bundle under its name
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return bundle_at(kept)


@functools.lru_cache(maxsize=2)
def _quantized_once(checkpoint: Path, sha: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="labs-bundle-"))
    export_bundle(checkpoint, folder)
    return folder


# ---- a decoder's GGUF ------------------------------------------------------------------------------


def _file_stamp(path: Path) -> tuple:
    try:
        stat = path.stat()
    except OSError:
        return ()
    return (stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _decoder_files(path: Path, stamp: tuple) -> tuple[str, PageFiles]:
    model = decoder.read_decoder(path)
    return model.sha256[:16], decoder.page_files(model)


def _decoder_of(gguf: Path) -> tuple[str, PageFiles]:
    path = Path(gguf).resolve()
    return _decoder_files(path, _file_stamp(path))


def decoder_site_files(gguf: Path) -> dict[str, bytes]:
    """The page files of the decoder in ``gguf`` by path in the site, under the first 16 hex digits
    of the GGUF's SHA-256 (made once per process while the file stays the same). Raises
    BuildError naming the file for a GGUF the page cannot run (:func:`decoder.read_decoder`)."""
    ident, files = _decoder_of(gguf)
    return {f"{SITE_FOLDER}/{ident}/{name}": data for name, data in files.files.items()}


def decoder_page_ref(gguf: Path) -> dict[str, Any]:
    """What a lab page needs to offer the decoder, JSON-ready: the URLs (relative to the lab page)
    of the runtime's code, the manifest ``Labs.runtime.load`` reads first, the tokenizer's script
    (``Labs.runtime.tokenizer`` loads it alone) and the licence; the bytes a first use downloads
    (the tokenizer and every weight shard: the unembedding reads every token's row) and the
    tokenizer's alone; the model's name and the GGUF id."""
    ident, files = _decoder_of(gguf)
    folder = f"{_FROM_LAB_PAGE}{SITE_FOLDER}/{ident}/"
    return {"id": ident, "model": files.manifest_data["model"]["name"], "code": folder + files.code,
            "manifest": folder + files.manifest, "tokenizer": folder + files.tokenizer,
            "license": folder + files.license, "download_bytes": files.load_bytes,
            "tokenizer_bytes": files.manifest_data["tokenizer"]["size"]}


def fetched_decoder(name: str) -> Path | None:
    """The GGUF of the decoder ``name`` when it is fetched and pinned-exact, else None: a site
    built without it still builds (its stored numbers need no model), and a page that offers the
    model in the page says instead why it cannot."""
    from generator.models import store

    try:
        return store.locate(name)
    except BuildError:
        return None
