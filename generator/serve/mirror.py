"""The disk copy of ``labs serve``: the latest good site written to ``--output`` in the
background, a moment after it was built, so a page reloads without waiting for the disk."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from generator import sitefolder
from generator.errors import SiteError

# Writing a large site to disk takes a while; waiting for the author to pause keeps it out
# of the way of the next rebuild.
MIRROR_DELAY_SECONDS = 0.3
# How long a whole-site write that was told to stop may take to remove its folder.
CANCEL_SECONDS = 0.3


class Mirror:
    """Writes the latest good site to ``output`` after a short pause, one write at a time.

    The first write is a whole site swapped in (:func:`generator.sitefolder.write_site`); after it,
    only the files that changed since the last write are written (each one atomically: a
    temporary file beside it, renamed over it) and the files that went away are removed, so
    a save does not rewrite a large site. Should the output stop being the folder this mirror
    wrote (its marker gone, or a write failed), the next write is a whole site again."""

    def __init__(self, output: Path, warn: Callable[[str], None], delay: float = MIRROR_DELAY_SECONDS):
        self.output, self.warn, self.delay = output, warn, delay
        self._cond = threading.Condition()
        self._pending: dict[str, bytes] | None = None
        self._due = 0.0
        self._closed = False
        self._on_disk: dict[str, bytes] | None = None  # what the last write left in output
        self._cancel = threading.Event()  # set by close() when time is up: a whole-site write stops
        self._thread = threading.Thread(target=self._run, name="labs-mirror", daemon=True)
        self._thread.start()

    def submit(self, files: dict[str, bytes], now: bool = False) -> None:
        with self._cond:
            self._pending = files
            self._due = time.monotonic() + (0 if now else self.delay)
            self._cond.notify_all()

    def close(self, timeout: float | None = None) -> bool:
        """Write what is pending now, then stop; False if that took longer than ``timeout``. A
        whole site still being written then is given up (:data:`CANCEL_SECONDS`): its temporary
        folder is removed and ``output`` keeps the previous site, never half of the new one."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._cancel.set()
            self._thread.join(CANCEL_SECONDS)
            return False
        return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                while self._pending is not None and not self._closed and time.monotonic() < self._due:
                    self._cond.wait(self._due - time.monotonic())
                files, self._pending = self._pending, None
                if files is None:
                    return
            try:
                self._write(files)
            except sitefolder.Cancelled:
                return
            except SiteError as exc:
                self._on_disk = None
                self.warn(f"could not write the site to disk (still serving it): {exc}")

    def _write(self, files: dict[str, bytes]) -> None:
        previous, self._on_disk = self._on_disk, None
        target = self.output.resolve()
        marker = target / sitefolder.MARKER
        if previous is None or not marker.is_file() or marker.read_bytes() != sitefolder.MARKER_TEXT:
            sitefolder.write_site(files, self.output, self._cancel)
            self._on_disk = files
            return
        try:
            for rel, data in files.items():
                old = previous.get(rel)
                if old is data or old == data:
                    continue
                path = target / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                temporary = path.with_name(f".{path.name}.labs-tmp")
                temporary.write_bytes(data)
                os.replace(temporary, path)
            for rel in sorted(set(previous) - set(files), reverse=True):
                path = target / rel
                path.unlink(missing_ok=True)
                for folder in path.parents:  # drop folders left empty, up to the site's own
                    if folder == target or any(folder.iterdir()):
                        break
                    folder.rmdir()
        except OSError as exc:
            raise SiteError(f"cannot write the site: {exc.strerror or exc}") from None
        self._on_disk = files
