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


def test_the_committed_bundle_is_within_the_bound_on_the_labs_sentences(shipped_accuracy):
    """The figure the page states is computed: NumPy over the bundle's 8-bit weights against the
    full model's stored attention, every weight of all 72 heads of every sentence the lab's model reads."""
    lab, sha, acc = shipped_accuracy
    assert acc["sentences"] == len(lab.spec.widget.sentences) - 1 + len(lab.spec.model.finder_sentences)  # no cross pair
    assert 0 < acc["points"] <= inpage.BOUND
    assert acc["shown"] == np.ceil(acc["points"] * 10) / 10 >= acc["points"]


def test_a_bundle_over_the_bound_fails_at_its_line(shipped_accuracy):
    lab, sha, acc = shipped_accuracy
    with pytest.raises(ContentError) as caught:
        inpage.accuracy(lab.spec.model, lab.spec.widget, sha, bound=acc["points"] - 0.01)
    (d,) = caught.value.diagnostics
    assert (d.line, d.column) == _line_col(LAB_YAML, "../../models/all-minilm-l6-v2")
    assert f"up to {acc['points']:.2f} points" in d.message and "may state at most" in d.message


@pytest.mark.parametrize("damage, message", [
    (lambda a: np.full_like(a, np.nan), "computes NaN or infinite attention"),  # max(0, nan) was 0: "within 0.0"
    (lambda a: np.where(np.arange(a.size).reshape(a.shape) == 7, np.inf, a), "computes NaN or infinite attention"),
    (lambda a: a[:-1], "the bundle's model has 5 layers of 12 heads"),  # a broadcasting traceback before
], ids=["all-nan", "one-infinite", "a-layer-short"])
def test_a_bundle_whose_model_computes_nan_or_another_shape_fails_at_its_line(shipped_accuracy, monkeypatch,
                                                                             damage, message):
    lab, sha, _ = shipped_accuracy
    real = inpage._bundle_reads

    def damaged(bundle, text, model):
        found = real(bundle, text, model)
        return dataclasses.replace(found, attention=damage(found.attention))

    monkeypatch.setattr(inpage, "_bundle_reads", damaged)
    with pytest.raises(ContentError) as caught:
        inpage.accuracy(lab.spec.model, lab.spec.widget, sha)
    (d,) = caught.value.diagnostics
    assert (d.line, d.column) == _line_col(LAB_YAML, "../../models/all-minilm-l6-v2")
    assert message in d.message, d.message


def test_a_bundle_of_another_checkpoint_is_not_offered(shipped_accuracy):
    lab, sha, acc = shipped_accuracy
    assert inpage.accuracy(lab.spec.model, lab.spec.widget, "0" * 64) is None
    assert inpage.page_part(lab.spec.model, None) == {"reason": inpage.OTHER_CHECKPOINT}


pytestmark = pytest.mark.project("shipped")  # the project fixture (conftest.py) starts from it


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


def test_a_site_without_a_bundle_builds_with_one_note_and_says_why(project, capsys):
    lab_yaml = project / "content/labs/attention/lab.yaml"
    lab_yaml.write_text(lab_yaml.read_text(encoding="utf-8").replace(BUNDLE_LINE, ""), encoding="utf-8")
    shutil.rmtree(project / "content/models")
    for other in ("tokens", "embeddings"):  # labs of kinds that cannot build without the bundle
        shutil.rmtree(project / "content/labs" / other)
    site_yaml = project / "content/site.yaml"
    site_yaml.write_text(re.sub(r"\n  - (tokens|embeddings)\b", "", site_yaml.read_text(encoding="utf-8")), encoding="utf-8")
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
