"""The runtime in a site (generator.runtime.site): a bundle's page files under assets/runtime/<id>/,
what a lab page names, and bundles made from a checkpoint and kept in the build cache's store."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.models.bert import BertConfig, write_random_checkpoint
from generator.runtime import site
from generator.runtime.bundle import export_bundle

TINY = BertConfig(vocab_size=60, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=128, max_position_embeddings=40, type_vocab_size=2)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "##s"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-bert")
    write_random_checkpoint(folder, VOCAB, TINY, seed=7, scale=0.3)
    return folder


def test_a_bundles_files_go_under_its_id_and_the_page_names_them_from_a_lab_page(checkpoint, tmp_path):
    bundle = site.bundle_at(export_bundle(checkpoint, tmp_path / "b"))
    files = site.site_files(bundle)
    ident = site.bundle_id(bundle)
    assert len(ident) == 16 and all(path.startswith(f"assets/runtime/{ident}/") for path in files)
    ref = site.page_ref(bundle)
    for key in ("code", "manifest", "license"):  # every URL the page gets is a file the site has
        assert ref[key].startswith("../../") and ref[key][len("../../"):] in files
    assert ref["id"] == ident and ref["download_bytes"] > 0


def test_a_bundle_is_read_once_per_process_until_its_files_change(checkpoint, tmp_path, monkeypatch):
    folder = export_bundle(checkpoint, tmp_path / "b")
    first = site.bundle_at(folder)
    assert site.bundle_at(folder) is first
    export_bundle(checkpoint, tmp_path / "other")  # same bytes, other folder: read on its own
    (folder / "LICENSE").write_text("changed\n", encoding="utf-8")
    with pytest.raises(Exception):  # a changed file is read again, and its checksum no longer holds
        site.bundle_at(folder)


def test_two_exports_of_one_checkpoint_share_an_id(checkpoint, tmp_path):
    a = site.bundle_at(export_bundle(checkpoint, tmp_path / "a"))
    b = site.bundle_at(export_bundle(checkpoint, tmp_path / "b"))
    assert site.bundle_id(a) == site.bundle_id(b) and site.site_files(a) == site.site_files(b)


def test_a_checkpoint_is_quantized_once_into_the_store_and_read_back(checkpoint, tmp_path, monkeypatch):
    store = tmp_path / "store"
    made = site.bundle_from_checkpoint(checkpoint, store)
    committed = site.bundle_at(export_bundle(checkpoint, tmp_path / "committed"))
    assert site.bundle_id(made) == site.bundle_id(committed)  # the same bytes as an export
    assert [p.name for p in (store / "bundles").iterdir()] == [made.meta["checkpoint"]["sha256"]]

    def no_export(*args, **kwargs):
        raise AssertionError("a warm build must not quantize again")

    monkeypatch.setattr(site, "export_bundle", no_export)
    assert site.bundle_id(site.bundle_from_checkpoint(checkpoint, store)) == site.bundle_id(made)


def test_a_damaged_bundle_in_the_store_is_made_again(checkpoint, tmp_path):
    store = tmp_path / "store"
    made = site.bundle_from_checkpoint(checkpoint, store)
    (made.folder / "weights.bin").write_bytes(b"\0" * 10)
    again = site.bundle_from_checkpoint(checkpoint, store)
    assert (again.folder / "weights.bin").stat().st_size > 10


def test_without_a_store_a_checkpoint_is_quantized_once_per_process(checkpoint, monkeypatch):
    first = site.bundle_from_checkpoint(checkpoint, None)
    monkeypatch.setattr(site, "export_bundle", lambda *a, **k: (_ for _ in ()).throw(AssertionError("again")))
    assert site.bundle_from_checkpoint(checkpoint, None).folder == first.folder


def test_a_checkpoint_without_weights_is_a_build_error_naming_the_file(tmp_path, monkeypatch):
    from generator.errors import BuildError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ckpt").mkdir()
    with pytest.raises(BuildError) as caught:
        site.bundle_from_checkpoint(tmp_path / "ckpt", None)
    assert "model.safetensors not found" in str(caught.value)
