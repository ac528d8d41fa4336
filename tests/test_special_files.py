"""The file policy (generator.filepolicy) applied before anything reads or hashes a file: a named
pipe, a device or a socket — in a lab folder, as a lab's gist, in content/static/, in a custom
theme, or where a symbolic link points — and links out of content/ are refused with an error
naming the file, by ``labs build`` (with and without the build cache) and ``labs check``. A FIFO
never opened for reading is what keeps these from hanging: each case runs under a timeout."""

from __future__ import annotations

import os
import re
import signal
import socket
from pathlib import Path

import pytest
from conftest import run_labs

POSITIONED = re.compile(r"^\S[^:]*:\d+:\d+: error: \S")
COMMANDS = (("build",), ("build", "--no-cache"), ("check",))


@pytest.fixture(autouse=True)
def _no_hang():
    """A read of a FIFO blocks for ever: fail the test instead."""
    def stop(*_):
        raise TimeoutError("the build hung")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _fails_naming(capsys, argv, name: str, what: str) -> list[str]:
    code, _, err = run_labs(capsys, *argv)
    errors = [line for line in err if ": error: " in line]
    assert code == 1, err
    assert errors and all(POSITIONED.match(line) for line in errors), err
    assert any(name in line and what in line for line in errors), err
    assert not any("Traceback" in line for line in err)
    return errors


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_fifo_as_the_gist_is_refused(project, capsys, argv):
    gist = project / "content/labs/alpha/gist.md"
    gist.unlink()
    os.mkfifo(gist)
    _fails_naming(capsys, argv, "content/labs/alpha/gist.md", "named pipe")
    assert not (project / "site").exists()


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_fifo_anywhere_in_a_lab_folder_is_refused(project, capsys, argv):
    os.mkfifo(project / "content/labs/alpha/notes.fifo")
    _fails_naming(capsys, argv, "content/labs/alpha/notes.fifo", "named pipe")


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_link_to_an_outside_fifo_is_refused(project, tmp_path_factory, capsys, argv):
    fifo = tmp_path_factory.mktemp("outside") / "pipe"
    os.mkfifo(fifo)
    (project / "content/labs/alpha/extra.md").symlink_to(fifo)
    _fails_naming(capsys, argv, "content/labs/alpha/extra.md", "symbolic link")


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_link_to_dev_zero_is_refused(project, capsys, argv):
    (project / "content/labs/alpha/gist.md").unlink()
    (project / "content/labs/alpha/gist.md").symlink_to("/dev/zero")
    _fails_naming(capsys, argv, "content/labs/alpha/gist.md", "symbolic link")


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_lab_folder_linked_to_the_root_is_refused_at_once(project, capsys, argv):
    (project / "content/labs/x").symlink_to("/")
    _fails_naming(capsys, argv, "content/labs/x", "symbolic link")


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_link_inside_content_to_a_fifo_inside_content_is_refused(project, capsys, argv):
    os.mkfifo(project / "content/pipe")
    (project / "content/labs/alpha/gist.md").unlink()
    (project / "content/labs/alpha/gist.md").symlink_to(project / "content/pipe")
    _fails_naming(capsys, argv, "content/labs/alpha/gist.md", "named pipe")


@pytest.mark.parametrize("argv", COMMANDS[:2], ids=" ".join)
def test_a_fifo_in_content_static_is_refused(project, capsys, argv):
    (project / "content/static").mkdir()
    (project / "content/static/CNAME").write_text("example.org\n")
    os.mkfifo(project / "content/static/feed")
    _fails_naming(capsys, argv, "content/static/feed", "named pipe")
    assert not (project / "site").exists()


@pytest.mark.parametrize("argv", COMMANDS[:2], ids=" ".join)
def test_a_socket_in_content_static_is_refused(project, capsys, argv):
    (project / "content/static").mkdir()
    path = project / "content/static/s"
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.bind(str(path))
        except OSError:  # a path too long for a socket address
            pytest.skip("cannot bind a Unix socket here")
        _fails_naming(capsys, argv, "content/static/s", "socket")


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_fifo_in_a_custom_theme_is_refused(project, capsys, argv):
    (project / "theme/templates").mkdir(exist_ok=True)
    os.mkfifo(project / "theme/templates/pipe.html")
    _fails_naming(capsys, argv + ("--theme", "theme"), "theme/templates/pipe.html", "named pipe")
