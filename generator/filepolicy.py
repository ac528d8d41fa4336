"""The file policy: what the build may read under ``content/`` (and a custom theme folder),
checked *before* anything opens, reads or hashes a file.

- A symbolic link is followed only while it stays inside the folder (content/ or the theme);
  one that leads out of it, or loops, is refused, naming the link.
- Only regular files and folders are read. A named pipe (FIFO), a device or a socket — itself, or
  where a link inside the folder points — is refused: reading one could block for ever (a FIFO
  with no writer) or never end (``/dev/zero``).

:func:`file_problem` is the one check every reader calls (the loader, ``content/static/``, the
theme, the build cache's hashing, ``labs serve``'s watcher); :func:`walk_files` walks a folder
under the policy without reading anything.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from generator.errors import Diagnostic, display_path

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
