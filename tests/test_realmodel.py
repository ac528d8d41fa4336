"""A lab's real model heads: the model section, the committed cache, ``labs heads`` and the finder.

A tiny random BERT checkpoint (written by the test, with a vocabulary covering the lab's
sentences) stands in for all-MiniLM-L6-v2, so these run without the real checkpoint.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import lab_data, labs_data
from conftest import run_labs as run

from generator.models.bert import BertConfig, write_random_checkpoint

ROOT = Path(__file__).resolve().parent.parent
LAB = "content/labs/attention"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    text = (ROOT / LAB / "lab.yaml").read_text(encoding="utf-8")
    words = {w.split("/")[0].lower() for line in re.findall(r"^\s+text: (.*)$", text, re.M) for w in line.split()}
    pieces = sorted(words | {"'", "didn", "t", "n"})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *pieces]
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=32, max_position_embeddings=64, type_vocab_size=2)
    folder = tmp_path_factory.mktemp("tiny-bert")
    write_random_checkpoint(folder, vocab, config, seed=3)
    return folder


pytestmark = pytest.mark.project("shipped+theme")  # the project fixture (conftest.py) starts from it



def line_col(path: Path, needle: str) -> tuple[int, int]:
    text = path.read_text(encoding="utf-8")
    i = text.index(needle)
    return text.count("\n", 0, i) + 1, i - (text.rfind("\n", 0, i) + 1) + 1


def test_shipped_cache_builds_without_a_checkpoint(project, capsys):
    code, out, err = run(capsys, "build")
    assert (code, err) == (0, [])
    page = (project / "site/labs/attention/index.html").read_text(encoding="utf-8")
    data = lab_data(page)
    real = data["real"]
    assert real["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert (real["layers"], real["heads"]) == (6, 12)
    assert real["sentence_ids"] == ["animal", "animal-wide", "cat-mat", "decoder"]  # the cross pair is not a sentence
    assert sorted(real["srcs"]) == real["sentence_ids"]  # one script per sentence, fetched when asked for
    assert "real-heads" not in page.split('id="lab-data"')[0]  # not loaded by the page itself
    sentences = {}
    for sid, src in real["srcs"].items():
        assert re.fullmatch(rf"real-heads-{sid}\.[0-9a-f]{{8}}\.js", src)
        script = (project / "site/labs/attention" / src).read_text(encoding="utf-8")
        sentences[sid] = labs_data(script, "realHeads", sid)
    for entry in sentences.values():
        for layer in entry["attention"]:
            for head in layer:
                assert all(sum(row) == 1000 for row in head)
    assert set(sentences) == {"animal", "animal-wide", "cat-mat", "decoder"}  # finder-only sentences are scored, not shipped
    finder = (project / "site/labs/attention" / real["finder_src"]).read_text(encoding="utf-8")  # loaded with the model view
    finder = labs_data(finder, "headFinder")
    kinds = {r["relation"]: r for r in finder}
    assert set(kinds) == {"adjective", "coreference", "determiner", "object", "previous", "subject"}
    for report in kinds.values():  # enough held-out pairs for the sign test to decide: 40 a relation
        assert report["sentences"] >= 30, report["relation"]
        assert report["pick"]["count"] + report["held"]["count"] == report["count"]
        assert report["pick"]["count"] >= 40 and report["held"]["count"] >= 40, report["relation"]
        head = report["head"]
        assert head["ties"] >= 1 and 0 <= head["held_hit"] <= 1
        if report["beats_baseline"]:  # a claim the page makes only with a held-out score of 60% or more
            assert head["held_hit"] >= 0.6 and all(v["p"] < 0.05 for v in report["versus"])
        assert [b["baseline"] for b in report["baselines"]] == ["offset", "tag"]
        for example in report["examples"].values():
            assert example["sentence"] in sentences


def test_changed_sentence_without_checkpoint_points_at_its_text(project, capsys):
    lab = project / LAB / "lab.yaml"
    lab.write_text(lab.read_text(encoding="utf-8").replace("the red/ADJ ball/NOUN", "the red/ADJ ball/NOUN today/ADV"),
                   encoding="utf-8")
    line, col = line_col(lab, "The dog/NOUN chased")
    code, _, err = run(capsys, "build")
    assert code == 1
    assert err[0].startswith(f"{LAB}/lab.yaml:{line}:{col}: error: sentence 'The dog chased the red ball today' "
                             f"is not in the cache ({LAB}/real-heads.json); put a BERT-family checkpoint")
    assert "labs heads --model DIR" in err[0]
    assert not (project / "site").exists()


def test_missing_cache_points_at_the_model_section(project, capsys):
    (project / LAB / "real-heads.json").unlink()
    line, col = line_col(project / LAB / "lab.yaml", "model:\n")
    code, _, err = run(capsys, "build")
    assert code == 1
    assert err[0].startswith(f"{LAB}/lab.yaml:{line}:{col}: error: {LAB}/real-heads.json is empty or missing "
                             "and no checkpoint was given")


def test_labs_heads_fills_the_cache_and_the_build_uses_it(project, capsys, checkpoint):
    (project / LAB / "real-heads.json").unlink()
    code, out, err = run(capsys, "heads", "--model", str(checkpoint))
    assert (code, err) == (0, [])
    assert out == [f"{LAB}/real-heads.json: 70 of 70 sentences computed, the rest already cached"]
    cache = json.loads((project / LAB / "real-heads.json").read_text(encoding="utf-8"))
    assert list(cache["entries"]) == [_sha256(checkpoint / "model.safetensors")]
    code, out, err = run(capsys, "heads", "--model", str(checkpoint))
    assert out == [f"{LAB}/real-heads.json: 0 of 70 sentences computed, the rest already cached"]
    code, _, err = run(capsys, "build")
    assert (code, err) == (0, [])
    page = (project / "site/labs/attention/index.html").read_text(encoding="utf-8")
    data = lab_data(page)
    assert (data["real"]["layers"], data["real"]["heads"]) == (2, 4)


def test_build_with_a_checkpoint_computes_uncached_sentences_and_says_so(project, capsys, checkpoint):
    code, out, err = run(capsys, "build", "--model", str(checkpoint))
    assert (code, err) == (0, [])
    notes = [line for line in out if line.startswith("note:")]
    assert len(notes) == 70 and all("labs heads --model" in n for n in notes)  # 4 widget + 66 finder sentences
    cache = json.loads((project / LAB / "real-heads.json").read_text(encoding="utf-8"))
    assert _sha256(checkpoint / "model.safetensors") not in cache["entries"]  # build never writes content/


@pytest.mark.parametrize(("old", "new", "needle", "message"), [
    ("- sat -> cat (subject)", "- sat => cat (subject)", "sat => cat",
     "relation 'sat => cat (subject)' should read 'query -> key (type)', e.g. 'sat -> cat (subject)'"),
    ("- sat -> cat (subject)", "- sat -> dog (subject)", "sat -> dog",
     "no word 'dog' in the sentence; words: The cat sat on the mat"),
    ("- the -> mat (determiner)", "- the#3 -> mat (determiner)", "the#3 -> mat",
     "'the#3': the sentence has 1 'the'; write the#1 … the#1"),
    ("    cat-mat:\n      - The", "    cat-mats:\n      - The", "cat-mats:",
     "unknown sentence 'cat-mats' (did you mean 'cat-mat'?)"),
    ("  cache: real-heads.json", "  cache: ../../real-heads.json", "../../real-heads.json",
     "cache '../../real-heads.json' must be inside the lab folder"),
], ids=["syntax", "unknown-word", "no-such-occurrence", "unknown-sentence", "cache-outside"])
def test_model_section_mistakes(project, capsys, old, new, needle, message):
    lab = project / LAB / "lab.yaml"
    text = lab.read_text(encoding="utf-8")
    assert old in text
    lab.write_text(text.replace(old, new, 1), encoding="utf-8")
    line, col = line_col(lab, needle)
    code, _, err = run(capsys, "build")
    assert code == 1
    assert err[0] == f"{LAB}/lab.yaml:{line}:{col}: error: {message}"


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_labs_attention_prints_json_and_tables(project, capsys, checkpoint):
    code, out, err = run(capsys, "attention", "--model", str(checkpoint), "--json", "The cat sat on the mat")
    assert (code, err) == (0, [])
    data = json.loads("\n".join(out))
    assert data["tokens"] == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"]
    shape = (len(data["attentions"]), len(data["attentions"][0]), len(data["attentions"][0][0]))
    assert shape == (2, 4, 8)
    assert all(abs(sum(row) - 1) < 1e-4 for layer in data["attentions"] for head in layer for row in head)
    code, out, err = run(capsys, "attention", "--model", str(checkpoint), "--layer", "1", "--head", "3", "The cat sat")
    assert code == 0 and out[0].startswith("Layer 1, head 3:")


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "no-such-folder"], "no-such-folder: error: model folder not found"),
    (["--layer", "2"], "error: layer 2 does not exist: this model has layers 0-1"),
], ids=["missing-folder", "layer-out-of-range"])
def test_labs_attention_errors_are_one_line_and_exit_1(project, capsys, checkpoint, args, message):
    argv = ["attention", "--model", str(checkpoint), *args, "The cat sat"]
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == []
    assert len(err) == 1 and message in err[0], err


@pytest.mark.parametrize("json_flag", [["--json"], []], ids=["json", "table"])
def test_labs_attention_on_a_nan_checkpoint_is_one_error_not_bare_nan(project, capsys, checkpoint, tmp_path, json_flag):
    from generator.models.safetensors_io import load_safetensors, save_safetensors

    poisoned = tmp_path / "nan-model"
    shutil.copytree(checkpoint, poisoned)
    tensors = load_safetensors(poisoned / "model.safetensors")
    name = "encoder.layer.0.attention.self.query.weight"
    tensors[name] = tensors[name].copy()
    tensors[name].flat[0] = float("nan")
    save_safetensors(poisoned / "model.safetensors", tensors)
    code, out, err = run(capsys, "attention", "--model", str(poisoned), *json_flag, "The cat sat")
    assert code == 1 and out == [], out  # never a bare NaN on stdout, which no JSON reader accepts
    assert len(err) == 1 and f"tensor '{name}' holds NaN or infinite values" in err[0], err
    assert "Traceback" not in "\n".join(err)


@pytest.mark.parametrize("written", ["sat", "the", "The", "mat#1", "the#2", "the#3", "dog", "sat#1", "#", ""],
                         ids=["once", "twice", "case", "hash-once", "hash-second", "hash-beyond", "missing",
                              "hash-on-single", "bare-hash", "empty"])
def test_relation_words_are_read_as_claims_read_them(written):
    """read_model's quick look-up of a relation's word answers as read_word does, errors included."""
    from generator.kinds.attention.realmodel import _read_word
    from generator.kinds.attention.reading import read_word

    class Errors:
        def __init__(self):
            self.said = []

        def error(self, where, message):
            self.said.append((where, message))

    words = ("The", "cat", "sat", "on", "the", "mat", "the")
    quick, plain = Errors(), Errors()
    assert _read_word(quick, ("x",), written, words) == read_word(plain, ("x",), written, words)
    assert quick.said == plain.said
