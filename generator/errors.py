"""The exceptions of a build, and the diagnostics they carry.

Every mistake in authored content becomes a :class:`Diagnostic` that prints as
``path:line:col: error: message`` — the form editors and terminals make clickable.
Validation gathers all diagnostics of a run before it fails, so an author sees every
slip at once, not one per build.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from generator.pickling import pickled_as_call


@pickled_as_call
@dataclass(frozen=True, order=True, slots=True)
class Diagnostic:
    """One error at one place in one file. ``line`` and ``column`` count from 1."""

    path: str
    line: int
    column: int
    message: str
    # The offending source line, for the live-reload overlay; not part of the printed form.
    source_line: str = field(default="", compare=False)

    def __str__(self) -> str:
        # One line per diagnostic: a message with line breaks (a math library's, say) is joined up;
        # other runs of spaces are the author's text, quoted as written.
        lines = self.message.splitlines()
        message = " ".join(part.strip() for part in lines) if len(lines) > 1 else self.message
        return f"{self.path}:{self.line}:{self.column}: error: {message}"


class SiteError(Exception):
    """Base of every error the generator reports to an author instead of a traceback."""


class ContentError(SiteError):
    """One or more mistakes in authored content, each with its file, line and column."""

    def __init__(self, diagnostics: list[Diagnostic]):
        assert diagnostics, "a ContentError needs at least one diagnostic"
        self.diagnostics = sorted(set(diagnostics))
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class BuildError(SiteError):
    """A failure that is not tied to a line of content (output folder, theme, I/O)."""

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        super().__init__(f"{path}: error: {message}" if path else f"error: {message}")


MAX_ERRORS_PER_FILE = 20  # more is noise: 10,000 untagged words would print 10,000 lines


@dataclass(frozen=True)
class MoreErrors:
    """Stands for the errors of one file left out after the first :data:`MAX_ERRORS_PER_FILE`."""

    path: str
    count: int

    def __str__(self) -> str:
        return f"{self.path}: … and {self.count} more error{'s' * (self.count != 1)} in this file"


def cap_per_file(diagnostics, limit: int = MAX_ERRORS_PER_FILE) -> list["Diagnostic | MoreErrors"]:
    """The diagnostics to show: at most ``limit`` per file, in order, each file's cut followed by
    one :class:`MoreErrors` saying how many were left out."""
    out: list[Diagnostic | MoreErrors] = []
    shown: dict[str, int] = {}
    left: dict[str, int] = {}
    for d in diagnostics:
        if shown.get(d.path, 0) < limit:
            shown[d.path] = shown.get(d.path, 0) + 1
            out.append(d)
        else:
            left[d.path] = left.get(d.path, 0) + 1
    for path, count in left.items():  # right after the file's last shown error
        last = max(i for i, d in enumerate(out) if isinstance(d, Diagnostic) and d.path == path)
        out.insert(last + 1, MoreErrors(path, count))
    return out


def display_path(path: Path | str, root: Path | None = None) -> str:
    """A path as an author would type it: relative to the cwd where possible, else to ``root``."""
    p = Path(path)
    try:
        resolved = p.resolve()
    except (OSError, RuntimeError):  # a loop of symbolic links: the path as written
        resolved = Path(os.path.abspath(p))
    for base in (os.getcwd(), root):  # the cwd first: that is where the author clicks from
        if base is None:
            continue
        try:
            return resolved.relative_to(_resolved(os.path.abspath(base))).as_posix()
        except ValueError:
            continue
        except (OSError, RuntimeError):  # a loop of symbolic links: show the path as written
            try:
                return Path(os.path.abspath(p)).relative_to(base.resolve()).as_posix()
            except ValueError:
                continue
    return p.as_posix()


@lru_cache(maxsize=64)
def _resolved(folder: str) -> Path:
    """``Path(folder).resolve()`` of an absolute path, remembered: the cwd and the content root
    are asked for again and again (a folder swapped for a symlink mid-run is not noticed; the
    result is only ever shown)."""
    return Path(folder).resolve()


def did_you_mean(word: str, choices) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Diagnostics:
    """Collects diagnostics during validation; :meth:`raise_if_any` turns them into one error."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def error(self, path: str, line: int, column: int, message: str, source_line: str = "") -> None:
        self.items.append(Diagnostic(path, line, column, message, source_line))

    def extend(self, other: "Diagnostics | ContentError") -> None:
        self.items.extend(other.items if isinstance(other, Diagnostics) else other.diagnostics)

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise ContentError(self.items)
