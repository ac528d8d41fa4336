"""Worker processes for the labs of a large site: a build maps a function over its labs, in a
process pool on a machine with several cores, else in this process, with the same results.

A lab's work is independent of every other lab's, so the pool forks after the site is loaded
(each worker has it all already) and results come back in order. Each worker runs NumPy's BLAS
on one thread (one worker per core is the parallelism), and leaves signals to the build: a build
stopped by SIGTERM or Ctrl-C ends its workers at once, whatever lab they are on, instead of
waiting for the labs they hold.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from generator.content import lab_folders

# Below this many labs a process pool costs more than it saves.
PARALLEL_MIN_LABS = 16


def _die_with_parent() -> None:
    """Pool worker initializer: end this worker when the build that started it is gone.

    A build killed with SIGKILL cannot tear its pool down, and orphaned workers would hold
    its stdout and stderr open forever (a CI job or editor reading them would hang). On
    Linux the kernel is asked to send SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG:
    immediate, and it needs no cooperation from the dying parent). Everywhere, and as a
    second line on Linux (the signal follows the thread that forked, not the process), a
    daemon thread checks twice a second that the parent is still ours and exits if not."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="labs-parent-watch", daemon=True).start()


def _start_worker(initializer: Callable | None, initargs: tuple) -> None:
    _die_with_parent()
    # The build that forked this worker decides when to stop: a Ctrl-C at the terminal reaches the
    # whole process group, and a worker that raised KeyboardInterrupt into its lab would hand it
    # back as that lab's result and start the next. SIGTERM (inherited as the build's handler)
    # ends the worker at once, as the build's teardown means it to.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # One BLAS thread: OpenBLAS starts one per core in every process, so a pool of one worker per
    # core ran cores x cores threads spinning against each other (4x the CPU on 2 cores).
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    # The build pauses the cyclic collector (generator.build), and a forked worker inherits the
    # pause; but with no collector at all the reference cycles a lab leaves behind would stay, and
    # a worker's memory would grow with every lab it renders. A worker collects once per lab instead
    # (lab_done), the youngest generation only: what that lab made. Everything it inherited is
    # frozen, so no collection scans the site it was forked with.
    gc.freeze()
    global _IN_WORKER
    _IN_WORKER = True
    if initializer is not None:
        initializer(*initargs)


_IN_WORKER = False  # set in pool workers


def lab_done() -> None:
    """Call when a lab's work is done: in a pool worker, collects the reference cycles it left and
    gives the memory it freed back to the system (:func:`_trim`)."""
    if _IN_WORKER:
        gc.collect(0)
        _trim()


def _trim() -> None:
    """glibc keeps what a process freed for its next allocations, so a worker's size is the peak
    of any lab it computed (NumPy's temporaries of a lab's real heads, some 50 MB) and stays
    there, in every worker; ``malloc_trim`` hands the free pages back (a fraction of a
    millisecond). Elsewhere, nothing to do."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return getattr(ctypes.CDLL(None), "malloc_trim", None)  # glibc only; musl has none
    except OSError:
        return None


_MALLOC_TRIM = _malloc_trim()


@contextmanager
def lab_pool(content_dir: Path, n_labs: int | None = None, initializer: Callable | None = None,
             initargs: tuple = ()):
    """``map`` over labs: in worker processes for a large site on a machine with several cores,
    else in this process. Results come back in order, so the output is the same either way.
    ``n_labs``: how many labs it will map (default: the site's lab folders); ``initializer(*initargs)``
    runs once in each worker (in this process when there are none) before the first lab."""
    if n_labs is None:
        n_labs = len(lab_folders(Path(content_dir)))
    workers = min(os.cpu_count() or 1, 8)
    if workers < 2 or n_labs < PARALLEL_MIN_LABS or os.environ.get("LABS_SERIAL"):
        if initializer is not None:
            initializer(*initargs)
        yield map
        return
    # What this process freed goes back to the system before it forks: the workers would share it
    # for nothing, and fill it with their own objects page by page (each page so written a copy).
    _trim()
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker,
                               initargs=(initializer, initargs))
    try:
        # Chunks of at most 8 labs: a worker that draws the last chunk keeps the build waiting for at
        # most 8 labs, not a quarter of its share.
        yield lambda fn, items: _woken_map(pool, fn, items, max(1, min(8, n_labs // (workers * 4))))
    except BaseException:  # a signal, or a lab's mistake raised: nothing more the workers do is wanted
        end_workers(pool, set(multiprocessing.active_children()) - before)
        raise
    pool.shutdown(wait=True)


WAKE = 0.1  # seconds: how often a build waiting for its workers looks for a signal


def _chunk(fn: Callable, items: list) -> list:
    return [fn(item) for item in items]


def _woken_map(pool: ProcessPoolExecutor, fn: Callable, items, chunksize: int):
    """``pool.map(fn, items, chunksize=chunksize)``, whose waits wake every :data:`WAKE` seconds.

    Python runs a signal's handler in the main thread, between two steps of its bytecode. The
    kernel may hand SIGTERM or Ctrl-C to any thread of the process (the pool's own, a BLAS one);
    Python's C handler then only marks the signal, and a main thread asleep on a result that
    nothing wakes would not see it until a worker finished its chunk of labs, which can take
    minutes. Woken every 0.1 s, it runs the handler within that."""
    items = list(items)
    futures = [pool.submit(_chunk, fn, items[i:i + chunksize]) for i in range(0, len(items), chunksize)]

    def results():
        try:
            for future in futures:
                while True:
                    try:
                        chunk = future.result(timeout=WAKE)
                    except TimeoutError:
                        continue
                    break
                yield from chunk
        finally:
            for future in futures:
                future.cancel()

    return results()


def end_workers(pool: ProcessPoolExecutor, started: set | frozenset = frozenset()) -> None:
    """End ``pool`` now: its workers are killed whatever they are doing, the labs not started are
    dropped, and this returns once the workers are gone — a build stopping because of a signal must
    not wait for the chunks its workers hold (a chunk of labs can take minutes), and must not remove
    its new site folder while a worker still writes into it.

    ``started``: the processes this process started since the pool was made. A signal that lands
    while the pool forks a worker can leave one the executor has not recorded yet; unkilled, it
    computes its labs while the build's exit waits for the executor's thread."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # the executor's own handle on them
    processes += [p for p in started if p not in processes]
    for process in processes:
        try:
            process.kill()
        except (OSError, ValueError):  # gone already, or closed
            pass
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(1.0)
