"""The file policy: what the build may read under ``content/`` (and a custom theme folder),
checked *before* anything opens, reads or hashes a file.

- A symbolic link is followed only while it stays inside the folder (content/ or the theme);
  one that leads out of it, or loops, is refused, naming the link.
- Only regular files and folders are read. A named pipe (FIFO), a device or a socket — itself, or
  where a link inside the folder points — is refused: reading one could block for ever (a FIFO
  with no writer) or never end (``/dev/zero``).

- A file's size is compared with what the reader can use (:func:`read_limited`) before a byte of
  it is read: a 2 GB ``weights.bin`` or a sparse file is refused on its ``stat``, never read whole.

:func:`file_problem` is the one check every reader calls (the loader, ``content/static/``, the
theme, the build cache's hashing, ``labs serve``'s watcher); :func:`read_limited` is that check,
then the size, then the bytes, for the files that models and vocabularies are made of (a model
bundle, a vocabulary, stored vectors); :func:`walk_files` walks a folder under the policy without
reading anything.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from generator.errors import BuildError, Diagnostic, display_path

_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def link_outside(path: Path, inside: Path) -> tuple[Path, Path | None] | None:
    """The first symbolic link on the way from ``inside`` down to ``path`` that leads out of
    ``inside`` (or loops): the link and where it leads (None for a loop); None if every link on
    the way stays inside. ``path`` is taken as written (below ``inside``), not resolved."""
    try:
        parts = Path(path).relative_to(inside).parts
    except (ValueError, OSError, RuntimeError):
        return None
    current = Path(inside)
    for part in parts:
        current = current / part
        if current.is_symlink():
            try:
                boundary = inside.resolve()  # (only once there is a link: it costs a system call a folder)
            except (ValueError, OSError, RuntimeError):
                return None
            try:
                target = current.resolve(strict=False)
            except (OSError, RuntimeError):  # a loop of links
                return current, None
            if not target.is_relative_to(boundary):
                return current, target
    return None


def link_boundary(folder: Path, inside: Path | None) -> Path:
    """The folder that links under ``folder`` (a resolved path) may lead within: ``inside`` (the
    content folder, resolved) when it holds ``folder``, as for every other content file; else
    ``folder`` itself (a model folder outside any site, or a loop of links on the way)."""
    if inside is not None:
        try:
            boundary = Path(inside).resolve()
        except (OSError, RuntimeError):
            return folder
        if folder.is_relative_to(boundary):
            return boundary
    return folder


def _shown_link(link: Path, root: Path | None) -> str:
    """Like :func:`display_path`, for the link itself (display_path would show where it leads)."""
    absolute = link.parent.resolve() / link.name
    for base in (Path.cwd(), root):
        if base is not None and absolute.is_relative_to(base.resolve()):
            return absolute.relative_to(base.resolve()).as_posix()
    return absolute.as_posix()


def walk_once(folder: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(folder)`` following symbolic links, as the loader does, but each real folder
    once: a loop of links is not walked forever. Prune ``dirnames`` in place as with os.walk."""
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        yield dirpath, dirnames, filenames


def outside_problem(path: Path, inside: Path, root: Path | None = None) -> Diagnostic | None:
    """The symlink policy, as a diagnostic naming the link: nothing is read through a link that
    leads out of the content (or theme) folder ``inside``; links that stay inside are fine."""
    found = link_outside(path, inside)
    if found is None:
        return None
    link, target = found
    shown = _shown_link(link, root)
    if target is None:
        return Diagnostic(shown, 1, 1, f"{shown} is a symbolic link that loops back on itself")
    return Diagnostic(shown, 1, 1, f"{shown} is a symbolic link to {display_path(target, root)}, "
                                   f"outside {display_path(inside, root)}/")


def named_folder(written: str, base: Path, content: Path | None, what: str) -> tuple[Path | None, str | None]:
    """The folder a lab names (``written``, relative to ``base``), resolved, or what is wrong with
    it: no such folder, a loop of links, or a place outside ``content`` (by ``..`` or through a
    link) — what a lab names there is read and may be published with the site, and nothing
    outside content/ is. ``content`` None: not checked."""
    try:
        folder = (base / written).resolve()
        inside = content.resolve() if content is not None else None
    except (OSError, RuntimeError):  # a loop of links
        return None, f"{what} {written!r} is a symbolic link that loops back on itself"
    if inside is not None and not folder.is_relative_to(inside):
        shown = display_path(content)
        return None, (f"{what} {written!r} is outside {shown}/ ({display_path(folder)}); a lab reads and publishes "
                      f"only what is inside {shown}/ — copy the folder into it, e.g. {shown}/models/")
    if not folder.is_dir():
        return None, f"no {what} at {written!r}: no such folder ({display_path(folder)}), relative to the lab's folder"
    return folder, None


def special_kind(path: Path) -> str | None:
    """What ``path`` is (following links) when it is neither a regular file nor a folder: "a named
    pipe (FIFO)", "a character device", …; None for a file, a folder or nothing there."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a dangling link or a loop: the reader says so
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((name for test, name in _SPECIAL if test(mode)), "not a regular file")


def regular_problem(path: Path, root: Path | None = None) -> Diagnostic | None:
    """A diagnostic if ``path`` (or what it links to) is a FIFO, a device or a socket: never opened."""
    what = special_kind(path)
    if what is None:
        return None
    shown = _shown_link(path, root) if os.path.islink(path) else display_path(path, root)
    via = " (through a symbolic link)" if os.path.islink(path) else ""
    return Diagnostic(shown, 1, 1, f"{shown} is {what}{via}, not a regular file; only files and folders are "
                                   "read — replace it with a file or remove it")


def file_problem(path: Path, inside: Path | None, root: Path | None = None) -> Diagnostic | None:
    """The file policy for ``path`` below ``inside`` (content/ or a theme folder; None: links are
    not checked): a link out of ``inside`` or a loop, then anything that is not a regular file
    or folder. Call it before opening, reading or hashing the path."""
    if inside is not None:
        problem = outside_problem(path, inside, root)
        if problem is not None:
            return problem
    return regular_problem(path, root)


def walk_files(folder: Path, inside: Path | None, root: Path | None = None,
               problems: list[Diagnostic] | None = None) -> Iterator[tuple[str, Path]]:
    """Every file below ``folder`` as (path relative to ``folder``, path), sorted by folder, under
    the policy: links are followed while they stay inside ``inside``, each real folder once;
    whatever breaks the policy is left out (nothing of it is read) and reported in ``problems``.
    Dot-files are included."""
    problem = file_problem(folder, inside, root)
    if problem is not None:
        if problems is not None:
            problems.append(problem)
        return
    for dirpath, dirnames, filenames in walk_once(folder):
        here = Path(dirpath)
        kept = []
        for name in sorted(dirnames):
            problem = file_problem(here / name, inside, root)
            if problem is None:
                kept.append(name)
            elif problems is not None:
                problems.append(problem)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = here / name
            problem = file_problem(path, inside, root)
            if problem is None:
                yield path.relative_to(folder).as_posix(), path
            elif problems is not None:
                problems.append(problem)


def refused(path: Path, inside: Path | None, root: Path | None = None) -> BuildError | None:
    """:func:`file_problem` as the :class:`BuildError` a model's reader raises: naming the file,
    saying what it is instead (a link out of ``inside``, a loop, a FIFO, a device)."""
    problem = file_problem(path, inside, root)
    if problem is None:
        return None
    return BuildError(problem.message.removeprefix(f"{problem.path} is ").removeprefix(f"{problem.path} "),
                      path=problem.path)


def _size_words(n: int) -> str:
    return f"{n:,} bytes" if n < 10_000 else f"{n / 1e6:,.1f} MB" if n < 10 ** 9 else f"{n / 1e9:,.2f} GB"


def read_limited(path: Path, inside: Path | None, limit: int, root: Path | None = None, *,
                 size: int | None = None, what: str = "the file") -> bytes:
    """The bytes of ``path``, under the policy, with its size compared before it is read.

    Raises :class:`BuildError` naming the file, before reading a byte: for a link out of
    ``inside`` or a loop, a FIFO, a device, a socket or a folder (:func:`refused`); when it is
    larger than ``limit`` bytes (what the reader can use; ``what`` names it in the message); and,
    with ``size``, when it is not exactly ``size`` bytes (the size a description of it lists: a
    shorter file is called truncated). The file is opened without blocking and checked again on
    the open descriptor, so a FIFO put in its place after the check is still refused, and at most
    ``limit`` bytes are read, so a file that grows meanwhile is too."""
    problem = refused(path, inside, root)
    if problem is not None:
        raise problem
    shown = display_path(path, root)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise BuildError("file not found", path=shown) from None
    except IsADirectoryError:
        raise BuildError("expected a file but found a folder", path=shown) from None
    except OSError as exc:
        raise BuildError(f"cannot read file: {exc.strerror}", path=shown) from None
    mode = os.fstat(fd)
    if not stat.S_ISREG(mode.st_mode):  # checked before fdopen, which refuses a folder with a traceback
        os.close(fd)
        raise BuildError("expected a file but found a folder" if stat.S_ISDIR(mode.st_mode) else
                         "not a regular file; only regular files are read", path=shown)
    with os.fdopen(fd, "rb") as f:
        if size is not None and mode.st_size != size:
            state = "truncated" if mode.st_size < size else "corrupt"
            raise BuildError(f"{mode.st_size:,} bytes where {size:,} are listed: the file is {state}", path=shown)
        if mode.st_size > limit:
            raise BuildError(f"{_size_words(mode.st_size)}: larger than {what} can be (at most {_size_words(limit)}); "
                             f"it is not read", path=shown)
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise BuildError(f"cannot read file: {exc.strerror}", path=shown) from None
    if len(data) > limit or (size is not None and len(data) != size):
        raise BuildError(f"changed while it was read (now over {_size_words(len(data))})", path=shown)
    return data
