"""The site folder: written whole into a temporary folder beside the output, then swapped in.

A build never leaves a half-written site: :func:`site_folder` gives a new, empty folder beside
the output, marked as ours (:data:`MARKER`), and swaps it in for the output in one step where the
OS can (Linux ``renameat2``), in two renames elsewhere, only when the block that writes it ends
without an exception. A build stopped by SIGTERM or Ctrl-C (SIGINT) removes its new folder
before it exits (one stopped during the swap finishes the swap first). A build killed (SIGKILL)
on the way leaves ``.NAME-new-PID-*`` or ``.NAME-old-PID-*``
folders beside the output, which the next one removes (:func:`clean_litter`), putting the
previous site back first if the kill fell between the two renames. A folder that does not carry
our marker is never replaced (:func:`guard_output`).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import sys
import threading
import tempfile
import time
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path

from generator.errors import BuildError, display_path
from generator.speed.buildcache import process_running

log = logging.getLogger(__name__)

MARKER = ".labs-build"  # marks a folder as ours, so a rebuild may replace it
MARKER_TEXT = b"Built by Attention Labs (labs build). This folder is replaced by every build.\n"


def pause_for_tests(point: str) -> None:
    """Hold the build at ``point`` when ``LABS_TEST_PAUSE_AT`` names it (for
    ``LABS_TEST_PAUSE_SECONDS``, 60 by default), after saying so on stderr: the crash-safety
    tests kill or stop a real build there."""
    if os.environ.get("LABS_TEST_PAUSE_AT") == point:
        os.write(2, f"paused at {point}\n".encode())
        time.sleep(float(os.environ.get("LABS_TEST_PAUSE_SECONDS", "60")))


def guard_output(output: Path, content_dir: Path, theme_dir: Path | None) -> None:
    out = output.resolve()
    for name, folder in (("content", content_dir), ("theme", theme_dir)):
        if folder is None:
            continue
        f = folder.resolve()
        if out == f or out.is_relative_to(f) or f.is_relative_to(out):
            raise BuildError(f"the output folder must not contain or be inside the {name} folder "
                             f"{display_path(folder)}/", display_path(output))
    if out.exists() and not out.is_dir():
        raise BuildError("output exists and is not a folder", display_path(output))
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise BuildError(f"refusing to replace a folder that was not built by labs (no {MARKER} in it); "
                         "empty it or choose another --output", display_path(output))


_LITTER = re.compile(r"\.(?P<name>.+)-(?:new|old)-(?P<pid>[0-9]+)-[^/]*")


def _is_ours(folder: Path) -> bool:
    """A folder a build wrote: it holds our marker, or it is still empty (killed right after mkdtemp)."""
    try:
        if not any(folder.iterdir()):
            return True
        marker = folder / MARKER
        return marker.is_file() and not marker.is_symlink() and marker.read_bytes() == MARKER_TEXT
    except OSError:
        return False


def clean_litter(output: Path) -> None:
    """Remove the ``.NAME-new-PID-*`` and ``.NAME-old-PID-*`` folders that killed builds left beside
    ``output`` — only those whose build process is gone and that carry our marker. When the
    output itself is missing (a build killed between the two renames of the fallback swap), the
    previous site waiting in ``.NAME-old-*`` is put back first."""
    parent = output.resolve().parent
    if not parent.is_dir():
        return
    litter = []
    for entry in sorted(parent.iterdir()):
        m = _LITTER.fullmatch(entry.name)
        if m and m["name"] == output.name and entry.is_dir() and not entry.is_symlink() \
                and int(m["pid"]) != os.getpid() and not process_running(int(m["pid"])) and _is_ours(entry):
            litter.append(entry)
    if not os.path.lexists(output):
        old = [e for e in litter if "-old-" in e.name and (e / MARKER).is_file()]
        if old:
            os.rename(old[0], output)
            litter.remove(old[0])
            log.warning("put the previous site back from %s (a build was killed mid-swap)", old[0].name)
    for entry in litter:
        shutil.rmtree(entry, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if not sys.platform.startswith("linux") or os.environ.get("LABS_TEST_NO_EXCHANGE"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (38, 22, 95):  # ENOSYS, EINVAL (file system without it), EOPNOTSUPP
        return False
    raise OSError(errno, os.strerror(errno))


class Cancelled(Exception):
    """A write given up on request (:func:`write_site`'s ``cancel``); nothing of it is left."""


def write_site(files: dict[str, bytes], output: Path, cancel: threading.Event | None = None) -> None:
    """Write ``files`` into a temporary folder beside ``output``, then swap it in.

    The swap exchanges the two folders in one step where the OS can (Linux), so the output
    path is never missing; elsewhere it is two renames, and a build killed between them is
    repaired by the next one (:func:`clean_litter`). When ``cancel`` is set before the swap, the
    temporary folder is removed, ``output`` is left as it was, and :class:`Cancelled` is raised:
    a writer in another thread than the main one (``labs serve``'s copy on disk) stops this way."""
    with site_folder(output) as tmp:
        write_files(tmp, files, cancel)


# How many forks are under way in this process. Python runs os.fork's callbacks in the parent
# (logging's lock, for one) as plain functions whose exceptions it prints and drops, so a stop
# raised inside one would be lost, and raised before logging's lock is released, would leave it
# held. Registered after logging is imported (above), so these bracket its callbacks: "before"
# runs first and "after" last. (The only other parent-side ones in the standard library,
# concurrent.futures.thread's, are a lock's own methods: no Python code runs in them.)
_forking = 0


def _fork_begins() -> None:
    global _forking
    _forking += 1


def _fork_ends() -> None:
    global _forking
    _forking -= 1


def _forked() -> None:
    global _forking
    _forking = 0


os.register_at_fork(before=_fork_begins, after_in_parent=_fork_ends, after_in_child=_forked)


class Stopped(SystemExit):
    """SIGTERM during a build, raised in the main thread: exit status 128 + 15; or ``labs serve``
    stopped (its status, 0), so that :func:`generator.cli.run` leaves without the teardown."""


class _Stopping:
    """While a site folder is open in the main thread: SIGTERM raises SystemExit(128 + 15) and
    Ctrl-C KeyboardInterrupt, as anywhere in Python, so the folder is removed on the way out;
    during the swap (:meth:`critical`) either waits until the swap is done. Once one has been
    raised, another is ignored: the build is stopping already, and a second exception in the
    middle of its cleanup (ending the workers, removing the folder) would leave things behind.

    Python drops an exception raised where nothing can catch it (os.fork's callbacks, a
    ``__del__``, a weakref callback) after printing it, and a signal's handler can run in any of
    them. So a stop is never raised during a fork, and one that Python drops anyway is caught
    by :func:`sys.unraisablehook`: in both cases the keeper thread sends the signal again, 20 ms
    later, until it is raised where the build can act on it."""

    # Once a stop is asked for, the way out (ending workers, removing the folder, the interpreter's
    # own exit, which joins the process pool's threads) gets this long; then the keeper thread
    # removes the folder, kills this process's children and ends the process.
    DEADLINE = 1.5  # seconds
    AGAIN = 0.02  # seconds between a stop that could not be raised and the signal sent again

    def __init__(self) -> None:
        self.pending: int | None = None
        self.in_swap = False
        self.stopping = False
        self.again = False  # the stop could not be raised, or was dropped: send the signal again
        self.signum: int | None = None
        self.active = True
        self.keeper: threading.Thread | None = None
        self.raised: BaseException | None = None
        self.previous: dict[int, object] = {}
        self.previous_hook = None
        self.folder: Path | None = None  # the new site folder, once made

    def __enter__(self) -> _Stopping:
        if threading.current_thread() is threading.main_thread():
            self.previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._on_signal)
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not if someone else handles it
                self.previous[signal.SIGINT] = signal.signal(signal.SIGINT, self._on_signal)
            self.previous_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def __exit__(self, *exc) -> None:
        self.active = False  # the keeper sends nothing more: the handlers are about to go
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        if self.previous_hook is not None:
            sys.unraisablehook = self.previous_hook
        waiting = self.pending if self.pending is not None else self.signum if self.again else None
        if waiting is not None and not isinstance(exc[1], (KeyboardInterrupt, SystemExit)):
            self._raise(waiting)  # a stop that could not be raised yet is raised here, over any other error

    def _on_signal(self, signum: int, frame) -> None:
        if self.stopping:
            return
        if self.in_swap:
            self.pending = signum
            return
        self.signum = signum
        if self.keeper is None:  # the deadline counts from the first signal
            self.keeper = threading.Thread(target=self._keep, args=(signum,), name="labs-stop-keeper", daemon=True)
            self.keeper.start()
        if _forking:
            self.again = True
            return
        self.stopping = True
        self._raise(signum)

    def _unraisable(self, unraisable) -> None:
        if self.raised is not None and unraisable.exc_value is self.raised:  # our stop, dropped
            self.raised = None
            self.stopping = False
            self.again = True
            return
        self.previous_hook(unraisable)

    def _keep(self, signum: int) -> None:
        # The signals go to the main thread, the only one whose handler can raise the stop: a
        # thread that took them would leave the main thread asleep in a wait.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        end = time.monotonic() + self.DEADLINE
        while time.monotonic() < end:
            time.sleep(self.AGAIN)
            if self.again and self.active and not _forking:
                self.again = False
                os.kill(os.getpid(), signum)
        if self.in_swap:  # the swap finishes first; the folder is the site then
            return
        import multiprocessing

        for child in multiprocessing.active_children():
            try:
                child.kill()
            except (OSError, ValueError):
                pass
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(130 if signum == signal.SIGINT else 128 + signum)

    def _raise(self, signum: int) -> None:
        self.raised = KeyboardInterrupt() if signum == signal.SIGINT else Stopped(128 + signum)
        raise self.raised

    @contextmanager
    def critical(self):
        self.in_swap = True
        try:
            yield
        finally:
            self.in_swap = False


@contextmanager
def site_folder(output: Path):
    """A new, empty site folder beside ``output`` (holding only our marker) to write the site into;
    swapped in for ``output`` when the block ends without an exception, removed if it raises or
    the build is stopped by SIGTERM or Ctrl-C."""
    output = Path(output)
    parent = output.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    clean_litter(output)
    with _Stopping() as stopping:
        with _removed_unless_swapped(output, parent, stopping) as tmp:
            yield tmp


@contextmanager
def _removed_unless_swapped(output: Path, parent: Path, stopping: _Stopping):
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}-new-{os.getpid()}-", dir=parent))
    try:
        (tmp / MARKER).write_bytes(MARKER_TEXT)  # first, so a killed build's folder is provably ours
        stopping.folder = tmp
        yield tmp
        os.chmod(tmp, 0o755)
        with stopping.critical():
            _swap_in(tmp, output, parent)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BuildError(f"cannot write the site: {exc.strerror or exc}", display_path(output)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_files(folder: Path, files: Mapping[str, bytes], cancel: threading.Event | None = None) -> None:
    """Write ``files`` (output path -> bytes) into ``folder``, in path order; raise
    :class:`Cancelled` before the next file once ``cancel`` is set."""
    made: set[Path] = set()
    for rel, data in sorted(files.items()):
        if cancel is not None and cancel.is_set():
            raise Cancelled("the write was cancelled")
        target = folder / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        target.write_bytes(data)
        pause_for_tests("write")


def _swap_in(tmp: Path, output: Path, parent: Path) -> None:
    target = output.resolve() if output.is_symlink() else output
    if target.exists() and _exchange(tmp, target):
        shutil.rmtree(tmp, ignore_errors=True)  # now the previous site
        return
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{output.name}-old-{os.getpid()}-", dir=parent))
        os.rmdir(old)
        os.replace(target, old)
        pause_for_tests("swap")
    try:
        os.replace(tmp, target)
    except OSError:
        if old is not None:
            os.replace(old, target)  # put the previous site back
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


class SiteFiles(Mapping):
    """A built site's files by output path, read from its folder when asked for (a large site's
    bytes are not held in memory after the build)."""

    def __init__(self, folder: Path, paths: Iterable[str]):
        self.folder = Path(folder)
        self._paths = sorted(paths)
        self._known = set(self._paths)

    def __getitem__(self, path: str) -> bytes:
        if path not in self._known:
            raise KeyError(path)
        return (self.folder / path).read_bytes()

    def __contains__(self, path: object) -> bool:
        return path in self._known

    def __iter__(self):
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)
