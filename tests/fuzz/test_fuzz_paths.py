"""Folders a lab names and the files of a model bundle, under the file policy: nothing outside
content/ is read or published (by ``..`` or through a link), and a bundle's file that is a link
out of its folder, a FIFO, /dev/zero or a 2 GB file is refused before a byte of it is read."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import run_labs

from generator.errors import BuildError
from generator.models.bert import BertConfig, write_random_checkpoint
from generator.runtime.bundle import export_bundle, read_bundle

ROOT = Path(__file__).resolve().parents[1].parent
THEME = ROOT / "theme"
TINY = BertConfig(vocab_size=60, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=128, max_position_embeddings=40, type_vocab_size=2)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "##s"]


def edit(path: Path, old: str, new: str) -> int:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def check_errors(capsys) -> list[str]:
    code, out, err = run_labs(capsys, "check", "--content", "content", "--theme", str(THEME))
    assert code == 1, (out, err)
    assert not any("Traceback" in e for e in out + err), err
    return err


@pytest.mark.project("shipped")
@pytest.mark.parametrize("how", ["dot-dot", "link"])
def test_a_vocabulary_outside_content_is_refused_at_its_key(project, capsys, how):
    outside = project / "outside-vocab"
    outside.mkdir()
    (outside / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nsecret\n", encoding="utf-8")
    written = "../../../outside-vocab"
    if how == "link":  # a folder inside content/ that is a link out of it
        (project / "content/models/vocab-link").symlink_to(outside, target_is_directory=True)
        written = "../../models/vocab-link"
    lab = project / "content/labs/tokens/lab.yaml"
    line = edit(lab, "vocabulary: ../../models/all-minilm-l6-v2", f"vocabulary: {written}")
    err = check_errors(capsys)
    assert any(e.startswith(f"content/labs/tokens/lab.yaml:{line}:") and f"vocabulary {written!r} is outside content/"
               in e for e in err), err


@pytest.mark.project("shipped")
def test_an_embeddings_runtime_through_a_link_out_of_content_is_refused(project, capsys):
    shutil.move(project / "content/models", project / "models-outside")
    (project / "content/models").symlink_to(project / "models-outside", target_is_directory=True)
    lab = project / "content/labs/embeddings/lab.yaml"
    line = next(i for i, t in enumerate(lab.read_text(encoding="utf-8").splitlines(), 1) if t.strip().startswith("runtime:"))
    err = check_errors(capsys)
    assert any(e.startswith(f"content/labs/embeddings/lab.yaml:{line}:") and "is outside content/" in e for e in err), err


@pytest.fixture
def bundle(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write_random_checkpoint(tmp_path / "ckpt", VOCAB, TINY, seed=5, scale=0.3)
    return export_bundle(tmp_path / "ckpt", tmp_path / "bundle")


def replace(path: Path, how: str) -> None:
    path.unlink()
    if how == "passwd":
        path.symlink_to("/etc/passwd")
    elif how == "fifo":
        os.mkfifo(path)  # no writer: opening it would block for ever
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")  # reading it never ends
    elif how == "sparse-2gb":
        with open(path, "wb") as f:
            f.truncate(2 * 10 ** 9)


@pytest.mark.parametrize("name, how, message", [
    ("LICENSE", "passwd", "a symbolic link to /etc/passwd, outside bundle/"),
    ("weights.bin", "passwd", "a symbolic link to /etc/passwd, outside bundle/"),
    ("weights.bin", "fifo", "a named pipe (FIFO), not a regular file"),
    ("vocab.txt", "dev-zero", "a symbolic link to /dev/zero, outside bundle/"),
    ("weights.bin", "sparse-2gb", "2,000,000,000 bytes where bundle.json lists"),
    ("bundle.json", "sparse-2gb", "larger than a bundle's bundle.json can be"),
])
def test_a_bundle_file_out_of_its_folder_or_no_file_is_refused_before_it_is_read(bundle, name, how, message):
    replace(bundle / name, how)
    with pytest.raises(BuildError) as caught:
        read_bundle(Path("bundle"))
    assert str(caught.value).startswith(f"bundle/{name}"), str(caught.value)
    assert message in str(caught.value), str(caught.value)


def test_a_link_that_stays_in_the_bundle_is_followed(bundle):
    (bundle / "LICENSE").rename(bundle / "LICENSE.txt")
    (bundle / "LICENSE").symlink_to("LICENSE.txt")
    assert read_bundle(Path("bundle")).config == TINY
