"""A model bundle's files under the same file policy as every other content file: a link that
stays inside content/ (a LICENSE kept once in content/models/ and linked from the bundle) is
followed; one that leads out of content/ (to /etc/passwd or elsewhere), a loop of links and a
FIFO are refused, at the ``path:line:col`` of each lab key that names the bundle."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_labs

from generator.errors import BuildError
from generator.models.bert import BertConfig, write_random_checkpoint
from generator.runtime.bundle import export_bundle, read_bundle

ROOT = Path(__file__).resolve().parents[1].parent
THEME = ROOT / "theme"
BUNDLE = Path("content/models/all-minilm-l6-v2")
TINY = BertConfig(vocab_size=60, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=128, max_position_embeddings=40, type_vocab_size=2)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "##s"]


def relink(path: Path, how: str) -> None:
    """Put something else where ``path`` (a bundle's file) was: a link inside content/ to the same
    bytes, a link out of content/, a loop of links or a FIFO."""
    if how == "inside":
        kept = path.parent.parent / f"{path.name}-kept"  # content/models/<name>-kept
        path.rename(kept)
        path.symlink_to(os.path.relpath(kept, path.parent))
        return
    path.unlink()
    if how == "passwd":
        path.symlink_to("/etc/passwd")
    elif how == "outside":
        outside = Path("outside.txt").resolve()
        outside.write_text("not part of the site\n", encoding="utf-8")
        path.symlink_to(outside)
    elif how == "loop":
        path.symlink_to(path.name)
    elif how == "fifo":
        os.mkfifo(path)  # no writer: opening it would block for ever


@pytest.fixture
def site_bundle(tmp_path, monkeypatch) -> Path:
    """A small bundle at content/models/tiny of a working directory."""
    monkeypatch.chdir(tmp_path)
    write_random_checkpoint(tmp_path / "ckpt", VOCAB, TINY, seed=5, scale=0.3)
    return export_bundle(tmp_path / "ckpt", tmp_path / "content/models/tiny")


@pytest.mark.parametrize("name", ["LICENSE", "weights.bin", "vocab.txt", "bundle.json"])
def test_a_bundle_file_linked_elsewhere_inside_content_is_followed(site_bundle, name):
    relink(site_bundle / name, "inside")
    assert read_bundle(site_bundle, inside=Path("content").resolve()).config == TINY
    with pytest.raises(BuildError, match="outside content/models/tiny/"):  # the bundle alone holds no such link
        read_bundle(site_bundle)


@pytest.mark.parametrize("how, message", [
    ("passwd", "a symbolic link to /etc/passwd, outside content/"),
    ("outside", "a symbolic link to outside.txt, outside content/"),
    ("loop", "a symbolic link that loops back on itself"),
    ("fifo", "a named pipe (FIFO), not a regular file"),
])
def test_a_bundle_file_out_of_content_a_loop_or_a_fifo_is_still_refused(site_bundle, how, message):
    relink(site_bundle / "LICENSE", how)
    with pytest.raises(BuildError) as caught:
        read_bundle(site_bundle, inside=Path("content").resolve())
    assert str(caught.value).startswith("content/models/tiny/LICENSE"), str(caught.value)
    assert message in str(caught.value), str(caught.value)


def check(capsys) -> tuple[int, list[str]]:
    code, out, err = run_labs(capsys, "check", "--content", "content", "--theme", str(THEME))
    assert not any("Traceback" in line for line in out + err), err
    return code, err


def keys_naming_the_bundle() -> list[tuple[str, int]]:
    """Every lab.yaml line that names the shipped bundle, and its number."""
    found = []
    for lab in sorted(Path("content/labs").glob("*/lab.yaml")):
        for number, text in enumerate(lab.read_text(encoding="utf-8").splitlines(), 1):
            if text.rstrip().endswith("models/all-minilm-l6-v2"):
                found.append((lab.as_posix(), number))
    return found


@pytest.mark.project("shipped")
def test_the_shipped_site_with_its_bundle_licence_linked_inside_content_checks_clean(project, capsys):
    relink(BUNDLE / "LICENSE", "inside")
    code, err = check(capsys)
    assert code == 0, err
    assert not any("LICENSE" in line for line in err), err


@pytest.mark.project("shipped")
@pytest.mark.parametrize("how, message", [
    ("passwd", "a symbolic link to /etc/passwd, outside content/"),
    ("loop", "a symbolic link that loops back on itself"),
    ("fifo", "a named pipe (FIFO)"),
])
def test_the_shipped_bundle_linked_out_or_no_file_is_an_error_at_each_key_naming_it(project, capsys, how, message):
    keys = keys_naming_the_bundle()
    assert len(keys) >= 2, keys  # the tokens and embeddings labs at least
    relink(BUNDLE / "LICENSE", how)
    code, err = check(capsys)
    assert code == 1, err
    for lab, line in keys:
        assert any(e.startswith(f"{lab}:{line}:") and "LICENSE" in e and message in e for e in err), (lab, line, err)
