"""Lab 07's ``model.bundle``: the 8-bit bundle's accuracy on the lab's sentences (checked at build
against the full model's attention in real-heads.json), the key's errors, a site without a bundle,
and ``labs attention --quantized``."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import lab_data, run_labs as run

from generator.content import load_site, load_lab
from generator.errors import ContentError
from generator.kinds.attention import inpage
from generator.kinds.attention import cache as cachefile
from generator.runtime.bundle import model_key

ROOT = Path(__file__).resolve().parent.parent
LAB_YAML = ROOT / "content/labs/attention/lab.yaml"
BUNDLE_LINE = "  bundle: ../../models/all-minilm-l6-v2\n"


def _lab(root: Path = ROOT / "content"):
    lab, problems = load_lab(load_site(root), "attention")
    assert not problems and lab is not None, problems
    return lab


def _line_col(path: Path, needle: str) -> tuple[int, int]:
    text = path.read_text(encoding="utf-8")
    i = text.index(needle)
    return text.count("\n", 0, i) + 1, i - (text.rfind("\n", 0, i) + 1) + 1


@pytest.fixture(scope="module")
def shipped_accuracy():
    lab = _lab()
    sha = next(iter(cachefile.load_cache(lab.spec.model.cache)["entries"]))
    return lab, sha, inpage.accuracy(lab.spec.model, lab.spec.widget, sha)


def test_the_committed_cache_holds_the_bundles_figure_for_every_sentence(shipped_accuracy):
    """A build reads the figure (no sentence is run through the 8-bit model, no note), and what the
    cache holds is what NumPy computes: the bundle's 8-bit weights against the full model's stored
    attention, every weight of all 72 heads of every sentence the lab's model reads."""
    lab, sha, (acc, notes) = shipped_accuracy
    assert notes == []
    assert acc["sentences"] == len(lab.spec.widget.sentences) - 1 + len(lab.spec.model.finder_sentences)  # no cross pair
    assert 0 < acc["points"] and acc["shown"] == np.ceil(acc["points"] * 10) / 10 >= acc["points"]
    cache = cachefile.load_cache_arrays(lab.spec.model.cache)
    texts = inpage.lab_texts(lab.spec.model, lab.spec.widget)
    entries = {text: cachefile.cache_lookup(cache, sha, text) for text in texts}
    again = inpage.sentence_drift(lab.spec.model, texts, entries)
    stored = cachefile.drift_of(cache, model_key(inpage.bundle_of(lab.spec.model)))
    assert set(stored) == set(texts)
    assert max(abs(again[t] - stored[t]) for t in texts) <= 2e-4  # rounded to 4 decimals; another BLAS sums otherwise
    assert acc["points"] == max(stored.values())


def test_one_changed_sentence_is_the_only_one_computed(shipped_accuracy, tmp_path, monkeypatch):
    lab, sha, (acc, _) = shipped_accuracy
    data = json.loads(lab.spec.model.cache.read_text(encoding="utf-8"))
    (key,) = data["drift"]
    dropped = sorted(data["drift"][key])[3]
    del data["drift"][key][dropped]
    cache = tmp_path / "real-heads.json"
    cachefile.save_cache(cache, data)
    asked = []
    real = inpage.sentence_drift
    monkeypatch.setattr(inpage, "sentence_drift", lambda spec, texts, entries: asked.append(list(texts)) or real(spec, texts, entries))
    spec = dataclasses.replace(lab.spec.model, cache=cache)
    again, notes = inpage.accuracy(spec, lab.spec.widget, sha)
    assert asked == [[dropped]]
    assert again == acc
    assert notes == [f"{spec.cache_shown}: the 8-bit model's difference on 1 sentence was computed by this build, "
                     "not read from the cache; run `labs heads` to store it"]


def test_figures_of_another_bundle_are_not_used(shipped_accuracy, tmp_path, monkeypatch):
    lab, sha, (acc, _) = shipped_accuracy
    data = json.loads(lab.spec.model.cache.read_text(encoding="utf-8"))
    data["drift"] = {"0" * 64: {text: 0.0 for text in next(iter(data["drift"].values()))}}
    cache = tmp_path / "real-heads.json"
    cachefile.save_cache(cache, data)
    asked = []
    monkeypatch.setattr(inpage, "sentence_drift", lambda spec, texts, entries: asked.extend(texts) or {t: 1.0 for t in texts})
    again, notes = inpage.accuracy(dataclasses.replace(lab.spec.model, cache=cache), lab.spec.widget, sha)
    assert sorted(asked) == sorted(set(inpage.lab_texts(lab.spec.model, lab.spec.widget)))
    assert again["points"] == 1.0 and "on 70 sentences was computed by this build" in notes[0]


def test_a_figure_over_max_drift_fails_at_its_line_and_nothing_fails_without_one(shipped_accuracy):
    lab, sha, (acc, _) = shipped_accuracy
    assert lab.spec.model.max_drift is None  # the shipped lab states its figure and sets no bound
    spec = dataclasses.replace(lab.spec.model, max_drift=acc["points"] - 0.01, max_drift_at=("lab.yaml", 170, 14))
    with pytest.raises(ContentError) as caught:
        inpage.accuracy(spec, lab.spec.widget, sha)
    (d,) = caught.value.diagnostics
    assert (d.path, d.line, d.column) == ("lab.yaml", 170, 14)
    assert f"up to {acc['points']:.2f} points" in d.message and f"over max_drift {acc['points'] - 0.01:g}" in d.message
    spec = dataclasses.replace(spec, max_drift=acc["points"])
    assert inpage.accuracy(spec, lab.spec.widget, sha)[0] == acc


@pytest.mark.parametrize("damage, message", [
    (lambda a: np.full_like(a, np.nan), "computes NaN or infinite attention"),  # max(0, nan) was 0: "within 0.0"
    (lambda a: np.where(np.arange(a.shape[-1]) == 0, np.inf, a), "computes NaN or infinite attention"),
    (lambda a: a[:, :-1], "the bundle's model has 5 layers of 12 heads"),  # a broadcasting traceback before
], ids=["all-nan", "one-infinite", "a-layer-short"])
def test_a_bundle_whose_model_computes_nan_or_another_shape_fails_at_its_line(shipped_accuracy, monkeypatch,
                                                                             damage, message):
    """The figures a build computes (those the cache lacks) come from the bundle's forward pass:
    damaged here, after the pass, as a model whose weights overflow would give them."""
    from generator.models import bert

    lab, sha, _ = shipped_accuracy
    real = bert.bert_forward

    def damaged(*args, **kwargs):
        found = real(*args, **kwargs)
        return dataclasses.replace(found, attentions=damage(found.attentions))  # [B, L, H, n, n]

    monkeypatch.setattr(bert, "bert_forward", damaged)
    monkeypatch.setattr(inpage, "_READ", type(inpage._READ)())  # nothing read before: every sentence is run
    cache = cachefile.load_cache_arrays(lab.spec.model.cache)
    texts = inpage.lab_texts(lab.spec.model, lab.spec.widget)[:2]
    entries = {text: cachefile.cache_lookup(cache, sha, text) for text in texts}
    with pytest.raises(ContentError) as caught:
        inpage.sentence_drift(lab.spec.model, texts, entries)
    (d,) = caught.value.diagnostics
    assert (d.line, d.column) == _line_col(LAB_YAML, "../../models/all-minilm-l6-v2")
    assert message in d.message, d.message


def test_a_bundle_of_another_checkpoint_is_not_offered(shipped_accuracy):
    lab, sha, acc = shipped_accuracy
    assert inpage.accuracy(lab.spec.model, lab.spec.widget, "0" * 64) == (None, [])
    assert inpage.page_part(lab.spec.model, None) == {"reason": inpage.OTHER_CHECKPOINT}


def test_the_page_states_the_bundles_measured_figures(shipped_accuracy):
    lab, sha, (acc, _) = shipped_accuracy
    part = inpage.page_part(lab.spec.model, acc)
    measured = inpage.bundle_of(lab.spec.model).meta["accuracy"]
    assert part["expect"] == {**measured["attention"], "count": 300, "seed": 2201, "words": [3, 60], "heads": 72}
    assert part["points"] == acc["points"] and part["sentences"] == acc["sentences"]


pytestmark = pytest.mark.project("shipped")  # the project fixture (conftest.py) starts from it


def test_max_drift_in_lab_yaml_fails_the_build_at_its_line(project, capsys):
    lab_yaml = project / "content/labs/attention/lab.yaml"
    lab_yaml.write_text(lab_yaml.read_text(encoding="utf-8").replace(BUNDLE_LINE, BUNDLE_LINE + "  max_drift: 1.5\n"),
                        encoding="utf-8")
    code, out, err = run(capsys, "build")
    line, col = _line_col(lab_yaml, "1.5\n")
    assert code == 1
    assert err[0].startswith(f"content/labs/attention/lab.yaml:{line}:{col}: error: the bundle's 8-bit weights move "
                             "attention up to 2.50 points from the full model on this lab's sentences, over max_drift 1.5")
    assert not (project / "site").exists()
    lab_yaml.write_text(lab_yaml.read_text(encoding="utf-8").replace("max_drift: 1.5", "max_drift: 2.5"), encoding="utf-8")
    code, out, err = run(capsys, "build")
    assert code == 0, err


@pytest.mark.parametrize("written, message", [
    ("  max_drift: lots\n", "max_drift must be a number of points above 0 and at most 100, not 'lots'"),
    ("  max_drift: 0\n", "max_drift must be a number of points above 0 and at most 100, not 0"),
], ids=["text", "zero"])
def test_a_max_drift_that_is_not_a_number_of_points_is_an_error(project, written, message):
    lab_yaml = project / "content/labs/attention/lab.yaml"
    lab_yaml.write_text(lab_yaml.read_text(encoding="utf-8").replace(BUNDLE_LINE, BUNDLE_LINE + written), encoding="utf-8")
    _, problems = load_lab(load_site(project / "content"), "attention")
    assert [p.message for p in problems] == [message]
    assert (problems[0].line, problems[0].column) == _line_col(lab_yaml, written.split(": ")[1])


def test_max_drift_without_a_bundle_is_an_error(project):
    lab_yaml = project / "content/labs/attention/lab.yaml"
    lab_yaml.write_text(lab_yaml.read_text(encoding="utf-8").replace(BUNDLE_LINE, "  max_drift: 3\n"), encoding="utf-8")
    _, problems = load_lab(load_site(project / "content"), "attention")
    assert [p.message for p in problems] == ["max_drift bounds the 8-bit model of a bundle: it needs 'bundle:' beside it"]
    assert (problems[0].line, problems[0].column) == _line_col(lab_yaml, "max_drift")


def test_a_bundle_that_is_not_a_folder_is_an_error_at_its_line(project):
    lab_yaml = project / "content/labs/attention/lab.yaml"
    lab_yaml.write_text(lab_yaml.read_text(encoding="utf-8").replace(BUNDLE_LINE, "  bundle: ../nowhere\n"), encoding="utf-8")
    site, problems = load_site(project / "content"), None
    _, problems = load_lab(site, "attention")
    line, col = _line_col(lab_yaml, "../nowhere")
    assert [(p.line, p.column) for p in problems] == [(line, col)]
    assert "no bundle at '../nowhere': no such folder" in problems[0].message


def test_a_corrupt_bundle_is_an_error_at_its_line(project):
    weights = project / "content/models/all-minilm-l6-v2/weights.bin"
    data = bytearray(weights.read_bytes())
    data[1000] ^= 1
    weights.write_bytes(bytes(data))
    lab = _lab(project / "content")
    with pytest.raises(ContentError) as caught:
        inpage.site_files([lab.spec.model])
    (d,) = caught.value.diagnostics
    assert (d.line, d.column) == _line_col(project / "content/labs/attention/lab.yaml", "../../models/all-minilm-l6-v2")
    assert "weights.bin" in d.message and "corrupt" in d.message


def test_a_site_without_a_bundle_builds_with_one_note_and_says_why(project, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "no-models"))  # lab 08's live part: no decoder either
    lab_yaml = project / "content/labs/attention/lab.yaml"
    lab_yaml.write_text(lab_yaml.read_text(encoding="utf-8").replace(BUNDLE_LINE, ""), encoding="utf-8")
    shutil.rmtree(project / "content/models")
    # Labs of kinds that cannot build without the bundle, and the decoder's lab, whose in-page
    # model (when fetched) would put its own files under assets/runtime/
    for other in ("tokens", "embeddings", "next-token"):
        shutil.rmtree(project / "content/labs" / other)
    site_yaml = project / "content/site.yaml"
    site_yaml.write_text(re.sub(r"\n  - (tokens|embeddings|next-token)\b", "", site_yaml.read_text(encoding="utf-8")),
                         encoding="utf-8")
    code, out, err = run(capsys, "build")
    assert code == 0, err
    notes = [line for line in out + err if "not offered" in line]
    assert len(notes) == 1 and notes[0].startswith("note: ") and inpage.NO_BUNDLE in notes[0]
    assert not (project / "site/assets/runtime").exists()
    page = (project / "site/labs/attention/index.html").read_text(encoding="utf-8")
    data = lab_data(page)
    assert data["own"]["model"] == {"reason": inpage.NO_BUNDLE}


def test_labs_attention_quantized_prints_what_the_page_computes(capsys):
    from generator.models.bert import run_sentence
    from generator.runtime.bundle import reference_model
    from generator.runtime.site import bundle_at

    folder = ROOT / "content/models/all-minilm-l6-v2"
    code, out, err = run(capsys, "attention", "--model", str(folder), "--quantized", "--json", "Owls hunt at night")
    assert (code, err) == (0, [])
    got = json.loads("\n".join(out))
    encoding, output = run_sentence(reference_model(bundle_at(folder)), "Owls hunt at night")
    assert got["tokens"] == list(encoding.tokens)
    assert np.abs(np.asarray(got["attentions"]) - output.attentions).max() <= 1e-6  # rounded to 6 decimals
    code, out, err = run(capsys, "attention", "--designed", "--quantized", "Owls/NOUN hunt/VERB")
    assert code == 2 and "--quantized: not allowed with --designed" in "\n".join(err)


def test_a_cold_build_reads_the_stored_figures_and_computes_only_a_missing_one(project, capsys, monkeypatch):
    """Counted, not timed: every sentence that goes through the 8-bit model in a cold build (no
    build cache) passes through ``drift_figures``. With the committed cache, none does; with one
    sentence's figure taken out of it, that sentence alone, in one call."""
    asked: list[list[str]] = []
    real = inpage.drift_figures
    monkeypatch.setattr(inpage, "drift_figures", lambda bundle, texts, entries: asked.append(list(texts)) or
                        real(bundle, texts, entries))
    monkeypatch.setenv("LABS_SERIAL", "1")  # every lab computed in this process, where the calls are counted
    code, out, err = run(capsys, "build", "--no-cache")
    assert code == 0, err
    assert asked == []
    cache = project / "content/labs/attention/real-heads.json"
    data = json.loads(cache.read_text(encoding="utf-8"))
    (key,) = data["drift"]
    dropped = sorted(data["drift"][key])[0]
    del data["drift"][key][dropped]
    cachefile.save_cache(cache, data)
    code, out, err = run(capsys, "build", "--no-cache")
    assert code == 0, err
    assert asked == [[dropped]]
    assert any("the 8-bit model's difference on 1 sentence was computed by this build" in line for line in out + err)
