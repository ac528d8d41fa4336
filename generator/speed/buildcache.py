"""The persistent build cache: each lab's loaded content and rendered files, kept between builds.

``labs build`` keeps it in ``.labs-cache/`` beside the content folder (``--no-cache`` to do
without it, ``labs clean`` to remove it). An entry is one lab: its loaded :class:`Lab`, the
notes its computation gave, the files its page is made of, and the ids and links of its page
(so links are checked without parsing the page again). Its key is a SHA-256 of everything
those depend on:

- the generator: its version and the bytes of its own source, and the versions of the
  libraries that shape the output (Markdown, Pygments, latex2mathml, nh3, Jinja2, NumPy, YAML);
- every installed lab kind: its name, its ``version`` and the bytes of its package folder;
- the site: site.yaml's bytes, the labs in order, the theme's files, the base URL, the kinds'
  build options, the working folder (error messages name files relative to it), and which
  models ``labs models fetch`` has put in the model cache (a lab gains its model's part once it is
  fetched);
- the lab: every file in its folder, and its neighbours' (its page names the previous and
  next lab).

An entry is trusted only when its header names the format and its own key and the SHA-256 of
its body matches: a corrupt, truncated, foreign or older entry is ignored (and rebuilt and
replaced by the build). Writes go to a temporary file renamed into place, so a killed build
leaves no half-written entry. A lab is stored once it computed and rendered without a problem of
its own; its links are checked again by every build, against the pages of that build.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import shutil
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from generator.errors import Diagnostic
from generator.filepolicy import walk_files

log = logging.getLogger(__name__)

CACHE_DIR_NAME = ".labs-cache"
FORMAT = b"attention-labs/build-cache 1\n"
# The standard tag that tells backup tools a folder holds only a cache; it is also how
# `labs clean` knows the folder is ours to remove.
TAG_NAME = "CACHEDIR.TAG"
TAG_TEXT = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
            b"# This folder is the build cache of Attention Labs (labs build); `labs clean` removes it.\n")
_LIBRARIES = ("markdown", "pygments", "latex2mathml", "nh3", "jinja2", "markupsafe", "numpy", "pyyaml",
              "rjsmin", "rcssmin")


def files_under(folder: Path, inside: Path | None = None) -> list[tuple[str, Path]]:
    """Every file below ``folder`` (recursively, following symlinks as the loader does, each
    folder once: a loop of links is not walked forever), sorted. With ``inside`` (the content
    folder), under the file policy (:mod:`generator.filepolicy`): a link out of it, a FIFO or a
    device is neither followed nor read, but counted by its name (the loader reports it)."""
    out: list[tuple[str, Path]] = []
    refused: list[Diagnostic] = []
    for rel, path in walk_files(folder, inside, None, refused):
        out.append((rel, path))
    out += [(f"\0refused\0{d.path}\0{d.message}", folder) for d in refused]
    return sorted(out)


def digest_files(paths: Iterable[tuple[str, Path]]) -> str:
    """SHA-256 over the names and bytes of ``paths`` (an unreadable file counts as a marker;
    anything but a regular file is never opened: a FIFO would block, /dev/zero never end)."""
    h = hashlib.sha256()
    for rel, path in paths:
        try:
            if path.is_file():
                with open(path, "rb") as f:  # in blocks: a 2 GB file in a lab folder is never held whole
                    data = hashlib.file_digest(f, "sha256").digest() + str(f.tell()).encode()
            else:
                data = b"\0not a file"
        except OSError:  # vanished or unreadable mid-scan: the loader will say so
            data = b"\0unreadable"
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


@cache
def generator_fingerprint() -> str:
    """The generator's version, its source files' bytes and its libraries' versions, hashed."""
    from generator import __version__

    package = Path(__file__).resolve().parent.parent  # generator/, every module of it
    sources = [(rel, p) for rel, p in files_under(package) if rel.endswith(".py") and "__pycache__" not in rel]
    versions = []
    for name in _LIBRARIES:
        try:
            versions.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name}=?")
    text = "\n".join([__version__, sys.version, *versions, digest_files(sources)])
    return hashlib.sha256(text.encode()).hexdigest()


def kinds_fingerprint() -> str:
    """Every installed kind's name, version and package files, hashed."""
    from generator.kinds import all_kinds

    parts = []
    for kind in all_kinds():
        files = [(rel, p) for rel, p in files_under(kind.folder) if "__pycache__" not in rel]
        parts.append(f"{kind.name}\0{type(kind).__module__}.{type(kind).__qualname__}\0{kind.version}\0"
                     f"{digest_files(files)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def key_of(*parts: Any) -> str:
    """SHA-256 of ``parts`` as text (each part a string, or something with a stable repr)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(str(part).encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class LabEntry:
    """One lab as a build left it."""

    lab: Any  # generator.model.Lab
    notes: tuple[str, ...]  # what its computation said to the author
    files: dict[str, bytes]  # its page and the files beside it, by output path
    links: dict[str, tuple[list[str], list[str]]]  # page path -> (ids in order, hrefs)


class BuildCache:
    """Lab entries on disk under ``folder`` (see the module docstring)."""

    def __init__(self, folder: Path):
        """Open the cache in ``folder``, removing what killed builds left in it: an entry is written
        to a temporary file named after its writer's process and renamed into place, and a writer
        killed in between (SIGKILL, a pool worker whose build died) leaves that file behind."""
        self.folder = Path(folder)
        self.hits = self.misses = self.rejected = 0
        for tmp in self.folder.glob("labs/*/.tmp-*"):
            writer = tmp.name.split("-")[1]
            if writer.isdigit() and not process_running(int(writer)):
                tmp.unlink(missing_ok=True)

    def _path(self, key: str) -> Path:
        return self.folder / "labs" / key[:2] / f"{key}.pickle"

    def get(self, key: str) -> LabEntry | None:
        """The entry stored under ``key``, or None when there is none or it cannot be trusted."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        header = FORMAT + key.encode() + b"\n"
        body = data[len(header) + 65:]
        if (not data.startswith(header) or data[len(header) + 64:len(header) + 65] != b"\n"
                or data[len(header):len(header) + 64] != hashlib.sha256(body).hexdigest().encode()):
            self.rejected += 1
            log.info("ignoring build cache entry %s: not one this build wrote", path)
            return None
        try:
            entry = pickle.loads(body)
        except Exception:  # a checksum-valid body that does not unpickle (a class that changed shape)
            entry = None
        if not isinstance(entry, LabEntry):
            self.rejected += 1
            return None
        self.hits += 1
        return entry

    def put(self, key: str, entry: LabEntry) -> None:
        """Store ``entry``; a cache that cannot be written is skipped with a log line, never an error."""
        body = pickle.dumps(entry, pickle.HIGHEST_PROTOCOL)
        path = self._path(key)
        try:
            self._tag()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".tmp-{os.getpid()}-", dir=path.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(FORMAT + key.encode() + b"\n" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("cannot write the build cache in %s: %s", self.folder, exc.strerror or exc)

    def _tag(self) -> None:
        tag = self.folder / TAG_NAME
        if not tag.is_file():
            self.folder.mkdir(parents=True, exist_ok=True)
            tag.write_bytes(TAG_TEXT)


def process_running(pid: int) -> bool:
    """Whether process ``pid`` is still running (someone else's counts): a killed build's leftovers
    are removed only once their writer is gone (here, and beside the site: generator.sitefolder)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: someone else's process
        return True
    return True


def clean(folder: Path) -> bool:
    """Remove the build cache ``folder``; False when there is none. Raises ValueError for a
    folder that is not a build cache (no tag of ours in it): nothing else is ever removed."""
    folder = Path(folder)
    if not os.path.lexists(folder):
        return False
    tag = folder / TAG_NAME
    if folder.is_symlink() or not folder.is_dir() or not tag.is_file() or tag.read_bytes() != TAG_TEXT:
        raise ValueError(f"{folder} is not a build cache of labs (no {TAG_NAME} of ours in it); not removing it")
    shutil.rmtree(folder)
    return True
