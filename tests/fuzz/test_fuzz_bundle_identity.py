"""What a model bundle says it is (generator/runtime/known.py): its model card and checkpoint are
checked before a page names them, and a bundle recording all-MiniLM-L6-v2's checkpoint must be
that checkpoint's export exactly. Each edit below keeps every hash bundle.json lists consistent,
so only these checks can tell: before them, the first four were tracebacks or a 100,000-character
model name on the page, the rest built and ran another model under MiniLM's name."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from pathlib import Path

import pytest

from conftest import ROOT
from generator.errors import BuildError
from generator.runtime.bundle import read_bundle

COMMITTED = ROOT / "content" / "models" / "all-minilm-l6-v2"


@pytest.fixture
def bundle(tmp_path) -> Path:
    folder = tmp_path / "all-minilm-l6-v2"
    shutil.copytree(COMMITTED, folder)
    return folder


def _meta(folder: Path) -> dict:
    return json.loads((folder / "bundle.json").read_text(encoding="utf-8"))


def _write_meta(folder: Path, meta: dict) -> None:
    (folder / "bundle.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _rehash(folder: Path, name: str) -> None:
    """bundle.json lists ``name`` with its present size and SHA-256: an edit every hash agrees with."""
    meta, data = _meta(folder), (folder / name).read_bytes()
    meta["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    _write_meta(folder, meta)


def _error(folder: Path) -> str:
    with pytest.raises(BuildError) as caught:
        read_bundle(folder)
    return str(caught.value)


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.pop("model"), "'model' must give the model's name, source, authors, license"),
    (lambda m: m["model"].update(name=7), "'model' must give the model's name"),
    (lambda m: m["model"].update(name="m" * 100_000), "each one line of text of at most 500 characters"),
    (lambda m: m.pop("checkpoint"), "'checkpoint' must give 'sha256'"),
    (lambda m: m["checkpoint"].update(sha256=5), "'checkpoint' must give 'sha256'"),
    (lambda m: m["model"].update(name="google-bert/bert-base-uncased"),
     "records the checkpoint of sentence-transformers/all-MiniLM-L6-v2 (53aa51172d14…) but names the model "
     "'google-bert/bert-base-uncased'"),
    (lambda m: m["config"].update(layer_norm_eps=1e-300), "whose layer_norm_eps is 1e-12, not 1e-300"),
], ids=["no-card", "name-a-number", "name-100000-characters", "no-checkpoint", "checkpoint-a-number",
        "another-name", "eps-1e-300"])
def test_what_bundle_json_says_the_model_is_is_checked_before_a_page_names_it(bundle, edit, message):
    meta = _meta(bundle)
    edit(meta)
    _write_meta(bundle, meta)
    error = _error(bundle)
    assert error.endswith("bundle.json") or "bundle.json: error: " in error
    assert message in error


def _drop_last_line(folder: Path) -> None:
    lines = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
    (folder / "vocab.txt").write_text("\n".join(lines[:-2] + [""]), encoding="utf-8")


def _flip_rare_row(folder: Path) -> None:
    """One int8 weight of the embedding row of token 29,000, which no reference text uses."""
    at = _meta(folder)["tensors"]["embeddings.word.q"]["offset"] + 29_000 * 384 + 7
    data = bytearray((folder / "weights.bin").read_bytes())
    data[at] = 0x7F if data[at] != 0x7F else 0x00
    (folder / "weights.bin").write_bytes(bytes(data))


def _extend(folder: Path) -> None:
    with open(folder / "weights.bin", "ab") as f:
        f.write(struct.pack("<4f", 0, 0, 0, 0))


@pytest.mark.parametrize("change, name", [(_drop_last_line, "vocab.txt"), (_flip_rare_row, "weights.bin"),
                                          (_extend, "weights.bin")], ids=["vocab-last-line", "rare-row", "extended"])
def test_minilms_checkpoint_with_other_files_is_not_minilms_export(bundle, change, name):
    change(bundle)
    _rehash(bundle, name)
    error = _error(bundle)
    assert f"whose export's {name} is" in error and "it is not that checkpoint's export" in error


def test_the_committed_bundle_is_minilms_export():
    assert read_bundle(COMMITTED).meta["model"]["name"] == "sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.parametrize("name", ["weights.bin", "vocab.txt", "LICENSE", "bundle.json"])
def test_a_folder_in_place_of_a_bundle_file_is_an_error_naming_it_not_a_traceback(bundle, name):
    """read_limited opens without blocking, and Linux opens a folder for reading: it is refused on
    its descriptor's mode (Python's file object would raise IsADirectoryError)."""
    (bundle / name).unlink()
    (bundle / name).mkdir()
    error = _error(bundle)
    assert f"{name}: error: " in error and ("folder" in error or "incomplete" in error), error
