"""Fuzz over the files themselves: a named pipe, a socket, a link to a device, to an outside
FIFO, to an outside folder or to the root, put in place of (or beside) each file and folder of
the fixture site. Every case ends in exit 0 or exit 1 with ``path:line:col: error:`` lines —
never a traceback, never a hang (a FIFO is never opened) — with and without the build cache."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
from pathlib import Path

import pytest
from conftest import run_labs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
POSITIONED = re.compile(r"^\S[^:]*:\d+:\d+: error: \S")
PLACES = ("content/site.yaml", "content/labs/alpha/gist.md", "content/labs/alpha/quiz.yaml", "content/labs/beta",
          "content/labs/alpha/extra", "content/static/file", "content/static", "theme/templates/x.html")
SPECIALS = ("fifo", "socket", "dev-zero", "dev-null", "outside-fifo", "outside-folder", "root")


def _make(path: Path, special: str, outside: Path) -> socket.socket | None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if special == "fifo":
        os.mkfifo(path)
    elif special == "socket":
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.bind(str(path))
        except OSError:  # too long a path for a socket: a FIFO stands in
            sock.close()
            os.mkfifo(path)
            return None
        return sock
    elif special == "dev-zero":
        path.symlink_to("/dev/zero")
    elif special == "dev-null":
        path.symlink_to("/dev/null")
    elif special == "outside-fifo":
        fifo = outside / f"pipe-{abs(hash(str(path)))}"
        if not fifo.exists():
            os.mkfifo(fifo)
        path.symlink_to(fifo)
    elif special == "outside-folder":
        path.symlink_to(outside, target_is_directory=True)
    else:
        path.symlink_to("/", target_is_directory=True)
    return None


@pytest.fixture(autouse=True)
def _no_hang():
    def stop(*_):
        raise TimeoutError("the build hung")
    previous = signal.signal(signal.SIGALRM, stop)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("special", SPECIALS)
def test_special_files_build_or_fail_cleanly(tmp_path, monkeypatch, capsys, special):
    monkeypatch.chdir(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("not for the site\n", encoding="utf-8")
    for place in PLACES:
        for folder in ("content", "theme", "site", ".labs-cache"):
            shutil.rmtree(tmp_path / folder, ignore_errors=True)
        shutil.copytree(FIXTURES / "content", tmp_path / "content")
        shutil.copytree(FIXTURES / "theme", tmp_path / "theme")
        sock = _make(tmp_path / place, special, outside)
        try:
            for argv in (("build",), ("build",), ("build", "--no-cache"), ("check",)):
                signal.alarm(60)
                code, out, err = run_labs(capsys, *argv, "--theme", "theme")
                signal.alarm(0)
                case = f"{special} at {place}, labs {' '.join(argv)}"
                assert code in (0, 1), f"{case}: exit {code}; {err[-5:]}"
                assert not any("Traceback" in line for line in out + err), f"{case}: {err}"
                if code == 1:
                    errors = [line for line in err if ": error: " in line]
                    assert errors and all(POSITIONED.match(line) for line in errors), f"{case}: {err}"
        finally:
            if sock is not None:
                sock.close()


def test_the_build_cache_hashes_a_huge_file_in_blocks_never_whole(tmp_path, monkeypatch):
    """A 2 GB (sparse) file in a lab folder was read into memory whole to key the build cache
    (4 GB of RSS) before the loader refused it; it is hashed in blocks, and still keys on every byte."""
    from generator.speed import buildcache

    big = tmp_path / "embeddings.json"
    with open(big, "wb") as f:
        f.truncate(2 * 10 ** 9)
    small = tmp_path / "small.txt"
    small.write_bytes(b"abc")
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self.name} read whole"))
    first = buildcache.digest_files([("embeddings.json", big), ("small.txt", small)])
    small.write_bytes(b"abd")  # one byte, same size
    assert buildcache.digest_files([("embeddings.json", big), ("small.txt", small)]) != first
