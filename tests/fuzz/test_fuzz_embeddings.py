"""Hostile input on the embeddings kind: claims whose numbers Python cannot hold or that are
about nothing, an item written twice, stored vectors that are all one point. Each is an error at
its line, never a traceback, never a claim that passes without meaning anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import run_labs

ROOT = Path(__file__).resolve().parents[1].parent
LAB = ROOT / "content" / "labs" / "embeddings"


@pytest.fixture
def lab(tmp_path, monkeypatch) -> Path:
    """A content folder holding only the shipped embeddings lab (no in-page model), in the cwd."""
    (tmp_path / "content" / "labs").mkdir(parents=True)
    site = yaml.safe_load((ROOT / "content" / "site.yaml").read_text(encoding="utf-8"))
    site.pop("labs", None)
    (tmp_path / "content" / "site.yaml").write_text(yaml.safe_dump(site), encoding="utf-8")
    shutil.copytree(LAB, tmp_path / "content" / "labs" / "embeddings")
    text = (tmp_path / "content/labs/embeddings/lab.yaml").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines(keepends=True) if not line.strip().startswith("runtime:")]
    (tmp_path / "content/labs/embeddings/lab.yaml").write_text("".join(lines), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "content/labs/embeddings"


def edit(lab: Path, old: str, new: str) -> int:
    path = lab / "lab.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def errors(capsys) -> list[str]:
    code, out, err = run_labs(capsys, "check")
    assert code == 1, (out, err)
    assert not any("Traceback" in e for e in out + err), err
    return err


def test_the_lab_without_its_in_page_model_checks(lab, capsys):
    assert run_labs(capsys, "check")[0] == 0


@pytest.mark.parametrize("old, new, message", [
    ('"q-pet" finds "kitten" in its top 2', '"q-pet" finds "kitten" in its top ' + "9" * 5000,
     "is not between 1 and the number of items"),
    ('"q-pet" finds "kitten" in its top 2', '"q-pet" finds "kitten" in its top 0', "is not between 1"),
    ('"q-pet" finds "kitten" in its top 2', '"q-pet" finds "kitten" in its top 400', "is not between 1"),
    ('"like" finds "not-like" in its top 1', '"like" finds "like" in its top 1',
     "is the item the search starts from"),
    ('"cat" is closer to "kitten" than to "car"', '"cat" is closer to "kitten" than to "kitten"',
     "compares 'cat' with 'kitten' twice"),
    ('"q-pet" finds "kitten" in its top 2', '"q-pet" is in the top 3 of at least 2 items',
     "'q-pet' is a query; a hub is an item"),
    ('"q-pet" finds "kitten" in its top 2', '"cat" is in the top 3 of at least ' + "7" * 5000 + " items",
     "is not between 1 and the number of items"),
])
def test_a_claim_about_nothing_or_beyond_pythons_integers_fails_at_its_line(lab, capsys, old, new, message):
    line = edit(lab, old, new)
    err = errors(capsys)
    assert any(e.startswith(f"content/labs/embeddings/lab.yaml:{line}:") and message in e for e in err), err


def test_an_item_written_twice_is_an_error_at_the_second(lab, capsys):
    line = edit(lab, "{id: kitten, text: A small kitten is playing with a ball of yarn., group: animals}",
                "{id: kitten, text: A cat is sleeping on the sofa., group: animals}")
    err = errors(capsys)
    assert any(e.startswith(f"content/labs/embeddings/lab.yaml:{line}:")
               and "item 'kitten' has the same text as item 'cat'" in e for e in err), err


def test_stored_vectors_that_are_all_one_point_are_an_error_not_a_map_of_nan(lab, capsys):
    store = lab / "embeddings.json"
    data = json.loads(store.read_text(encoding="utf-8"))
    first = next(iter(data["vectors"].values()))
    data["vectors"] = {text: first for text in data["vectors"]}
    store.write_text(json.dumps(data), encoding="utf-8")
    err = errors(capsys)
    assert any(e.startswith("content/labs/embeddings/lab.yaml:") and "all the same point" in e for e in err), err


def _stored(lab: Path, change) -> None:
    store = lab / "embeddings.json"
    data = json.loads(store.read_text(encoding="utf-8"))
    change(data)
    store.unlink()
    store.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("checkpoint_sha256"), "holds the vectors of 'all-MiniLM-L6-v2' (checkpoint None), not of"),
    (lambda d: d.update(checkpoint_sha256="0" * 64), "(checkpoint '" + "0" * 64 + "'), not of all-MiniLM-L6-v2's"),
    (lambda d: d.update(model="bert-base-uncased"), "holds the vectors of 'bert-base-uncased'"),
    (lambda d: d.update(dim=2) or [v.update(mean=[0.6, 0.8], cls=[0.8, 0.6]) for v in d["vectors"].values()],
     "says its vectors have 2 numbers; all-MiniLM-L6-v2's have 384"),
], ids=["no-checkpoint", "other-checkpoint", "other-model", "two-numbers"])
def test_stored_vectors_of_another_model_than_the_page_names_are_an_error(lab, capsys, change, message):
    _stored(lab, change)
    err = errors(capsys)
    assert any(e.startswith("content/labs/embeddings/lab.yaml:") and "embeddings.json" in e and message in e
               for e in err), err


@pytest.mark.parametrize("how, message", [("fifo", "named pipe (FIFO)"), ("dev-zero", "symbolic link to /dev/zero"),
                                          ("sparse", "larger than a stored-embeddings file can be")])
def test_stored_vectors_that_are_no_file_are_refused_before_they_are_opened(lab, capsys, how, message):
    import os

    store = lab / "embeddings.json"
    store.unlink()
    if how == "fifo":
        os.mkfifo(store)  # with no writer: opened for reading, it would block the build for ever
    elif how == "dev-zero":
        store.symlink_to("/dev/zero")
    else:
        with open(store, "wb") as f:
            f.truncate(2 * 10 ** 9)
    err = errors(capsys)
    assert any("embeddings.json" in e and message in e for e in err), err


def test_stored_vectors_of_another_checkpoint_than_the_live_search_bundle_are_an_error(lab, capsys):
    """The page's live search embeds the learner's query with the bundle; the items' stored vectors
    must come from the checkpoint the bundle was made from."""
    shutil.copytree(ROOT / "content" / "models", lab.parents[1] / "models")
    meta_path = lab.parents[1] / "models" / "all-minilm-l6-v2" / "bundle.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["checkpoint"]["sha256"] = "1" * 64
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    edit(lab, "  prompt:", "  runtime: ../../models/all-minilm-l6-v2\n  prompt:")
    err = errors(capsys)
    assert any("embeddings.json holds the vectors of checkpoint 53aa5117" in e
               and "runs a bundle of checkpoint " + "1" * 64 in e for e in err), err


@pytest.mark.parametrize("how", ["fifo", "sparse"])
def test_labs_embed_refuses_stored_vectors_that_are_no_file_instead_of_blocking_on_them(lab, capsys, how):
    import os

    from conftest import minilm_dir

    store = lab / "embeddings.json"
    store.unlink()
    if how == "fifo":
        os.mkfifo(store)
    else:
        with open(store, "wb") as f:
            f.truncate(2 * 10 ** 9)
    code, _, err = run_labs(capsys, "embed", "--model", str(minilm_dir()))
    assert code == 1 and any("embeddings.json" in e and ("FIFO" in e or "larger than" in e) for e in err), err
    assert store.is_fifo() if how == "fifo" else store.stat().st_size == 2 * 10 ** 9  # left as it was
