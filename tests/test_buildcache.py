"""The persistent build cache: warm builds give the cold build's bytes, bad entries are rebuilt,
`labs build --no-cache` and `labs clean`.

Builds the fixture content (tests/fixtures/content) through the CLI, in a fresh working folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import tree

from generator.speed.buildcache import TAG_NAME
from generator.cli import main


def entries(project: Path) -> list[Path]:
    return sorted((project / ".labs-cache").rglob("*.pickle"))


def build(capsys, *args: str) -> str:
    assert main(["build", *args]) == 0
    return capsys.readouterr().out


def test_a_warm_build_is_byte_identical_to_a_cold_one_and_loads_nothing(project, capsys):
    out = build(capsys, "--no-cache", "--output", "cold")
    assert not (project / ".labs-cache").exists(), "--no-cache writes no cache"
    assert "from the build cache" not in out
    build(capsys, "--output", "first")
    assert len(entries(project)) == 2, "one entry per lab"
    out = build(capsys, "--output", "warm")
    assert "2 from the build cache" in out and "computed 0 labs " in out
    assert tree(project / "warm") == tree(project / "cold") == tree(project / "first")


def test_an_edited_lab_and_its_neighbours_are_built_again(project, capsys):
    build(capsys, "--output", "site")
    gist = project / "content/labs/beta/gist.md"
    gist.write_text(gist.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
    out = build(capsys, "--output", "site")
    assert "from the build cache" not in out, "alpha's page names beta as its next lab: both are built"
    build(capsys, "--no-cache", "--output", "cold")
    assert tree(project / "site") == tree(project / "cold")


@pytest.mark.parametrize("damage", [
    pytest.param(lambda data: data[:-10], id="truncated"),
    pytest.param(lambda data: data[:-1] + bytes([data[-1] ^ 1]), id="flipped-bit"),
    pytest.param(lambda data: b"not a cache entry at all", id="garbage"),
    pytest.param(lambda data: data.replace(b"build-cache 1", b"build-cache 9", 1), id="foreign-format"),
])
def test_a_corrupt_or_foreign_entry_is_ignored_and_rebuilt(project, capsys, damage):
    build(capsys, "--output", "site")
    cold = tree(project / "site")
    victim = entries(project)[0]
    victim.write_bytes(damage(victim.read_bytes()))
    out = build(capsys, "--output", "site")
    assert "1 from the build cache" in out, "the damaged entry is not trusted"
    assert tree(project / "site") == cold
    out = build(capsys, "--output", "site")
    assert "2 from the build cache" in out, "the damaged entry was replaced by a good one"


def test_an_entry_stored_under_another_key_is_not_trusted(project, capsys):
    build(capsys, "--output", "site")
    first, second = entries(project)
    first.write_bytes(second.read_bytes())  # a valid entry, but of the other lab
    out = build(capsys, "--output", "site")
    assert "1 from the build cache" in out


def test_clean_removes_the_cache_and_nothing_else(project, capsys):
    build(capsys, "--output", "site")
    before = tree(project / "content"), tree(project / "site")
    assert main(["clean"]) == 0
    assert "removed the build cache .labs-cache/" in capsys.readouterr().out
    assert not (project / ".labs-cache").exists()
    assert (tree(project / "content"), tree(project / "site")) == before
    assert main(["clean"]) == 0
    assert "no build cache" in capsys.readouterr().out


def test_clean_refuses_a_folder_that_is_not_a_build_cache(project, capsys):
    folder = project / ".labs-cache"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["clean"]) == 1
    assert "not a build cache" in capsys.readouterr().err
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"
    (folder / TAG_NAME).write_text("Signature: something else\n", encoding="utf-8")
    assert main(["clean"]) == 1
    assert (folder / "notes.txt").exists()


def test_opening_the_cache_removes_the_temporary_files_of_writers_no_longer_running(tmp_path):
    """A writer killed between writing an entry's temporary file and renaming it (a pool worker
    whose build got SIGKILL) leaves the file; the next build's cache removes it, and leaves a
    running writer's file alone."""
    import subprocess
    import sys

    from generator.speed.buildcache import BuildCache

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    folder = tmp_path / "cache" / "labs" / "ab"
    folder.mkdir(parents=True)
    left = folder / f".tmp-{gone.pid}-k3x9q"
    writing = folder / f".tmp-{os.getpid()}-p2m4z"
    for path in (left, writing):
        path.write_bytes(b"half an entry")
    BuildCache(tmp_path / "cache")
    assert not left.exists() and writing.exists()
