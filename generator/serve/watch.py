"""Watching ``content/`` and ``theme/`` for ``labs serve``: native file events (watchdog), editor
noise left out, handed over in debounced batches.

A burst of file events (truncate + write + close, or write-temp + rename) ends within a few
milliseconds; :class:`ChangeQueue` hands a batch over once :data:`QUIET_SECONDS` passed without a
new event, or :data:`MAX_WAIT_SECONDS` after its first, so a steady stream of events (a checkout
rewriting every file) never keeps the site waiting.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

QUIET_SECONDS = 0.02  # catches a burst without being felt
MAX_WAIT_SECONDS = 0.5

_SWAP_SUFFIXES = (".swp", ".swo", ".swx", ".swpx", ".tmp", ".temp", ".bak", ".orig", ".part",
                  ".crdownload", ".kate-swp", "~")


def is_editor_noise(path: str | os.PathLike, root: str | os.PathLike | None = None) -> bool:
    """True for editor swap, backup and temp files and anything inside a dot-folder."""
    p = Path(path)
    parts = p.relative_to(root).parts if root is not None and p.is_relative_to(root) else (p.name,)
    name = p.name
    return (
        any(part.startswith(".") for part in parts)  # .lab.yaml.swp, .#lab.yaml, .git/, .goutputstream-*
        or name.startswith(("#", "~$"))  # Emacs autosave, Office lock files
        or name.endswith(_SWAP_SUFFIXES)
        or name == "4913"  # Vim's "can I write here?" probe
        or "___jb_" in name  # JetBrains safe-write
    )


RESCAN = ""  # in a batch: look at every file, not only the paths reported


class ChangeQueue:
    """Changed paths from the watcher, handed over in debounced batches."""

    def __init__(self, quiet: float = QUIET_SECONDS, max_wait: float = MAX_WAIT_SECONDS):
        self.quiet, self.max_wait = quiet, max_wait
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._last = 0.0
        self._closed = False

    def add(self, path: str) -> None:
        with self._cond:
            self._paths.add(path)
            self._last = time.monotonic()
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def take(self) -> set[str] | None:
        """Wait for changes, then for a quiet moment; the batch, or None once closed."""
        with self._cond:
            while not self._paths and not self._closed:
                self._cond.wait()
            first = time.monotonic()
            while not self._closed:
                now = time.monotonic()
                wait = min(self._last + self.quiet, first + self.max_wait) - now
                if wait <= 0:
                    break
                self._cond.wait(wait)
            if self._closed:
                return None
            batch, self._paths = self._paths, set()
            return batch


def watch(folders: Iterable[Path], queue: ChangeQueue):
    """Start watching ``folders`` (recursively) into ``queue``; returns the observer to stop and join."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    class Handler(FileSystemEventHandler):
        def __init__(self, root: Path):
            self.root = root

        def on_any_event(self, event) -> None:
            if event.event_type not in ("created", "modified", "deleted", "moved", "closed"):
                return  # opened, closed without writing
            if event.is_directory and event.event_type in ("modified", "closed"):
                return  # comes with the event for the file inside
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                path = os.fsdecode(raw) if raw else ""
                if path and not is_editor_noise(path, self.root):
                    queue.add(path)

    observer = Observer()
    for folder in folders:
        observer.schedule(Handler(folder), str(folder), recursive=True)
    observer.start()
    return observer
