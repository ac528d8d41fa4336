"""Lab 08 on SmolLM2-135M-Instruct's real next-token distribution: the stored results
(decoded.json) are what the model computes, the page's figures equal the model's, the page's
cut over the whole vocabulary equals NumPy's, tokens are named with ␣ for a leading space, and a
missing or stale result is an error at the author's line naming `labs decode`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import run_labs, sampling_data

from generator.build import build_files
from generator.content import load_lab, load_site
from generator.errors import ContentError
from generator.kinds import get_kind
from generator.kinds.sampling import real
from generator.models import decoding, llama, store
from generator.runtime import decoded

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "content" / "labs" / "sampling"


@pytest.fixture(scope="module")
def lab():
    lab, problems = load_lab(load_site(ROOT / "content"), "sampling")
    assert lab is not None and not problems, problems
    return lab


@pytest.fixture(scope="module")
def page(shipped_site):
    folder = shipped_site / "labs" / "sampling"  # conftest.py: the shipped course, built once a session
    html = (folder / "index.html").read_bytes().decode()
    data = sampling_data(html, lambda name: (folder / name).read_bytes().decode())
    return data, (folder / data["tail_src"]).read_bytes().decode()


def test_the_stored_file_is_what_labs_decode_computes_and_is_current(lab):
    stored = decoded.load(LAB)
    assert stored.model == real.MODEL and stored.sha256 == store.pinned_sha256(real.MODEL)
    uses = get_kind(lab.kind).models(lab)
    assert [u.model for u in uses] == [real.MODEL]
    requests = decoded.needed(uses)
    assert {r.computation.name for r in requests} == {"vocabulary", "next-token"} and len(requests) == 4
    assert all(decoded.find(stored, r)[1] is None for r in requests)
    assert set(stored.entries) == {r.key for r in requests}  # nothing no one reads


@pytest.mark.parametrize("context", ["cat", "colour", "capital"])
def test_the_pages_probabilities_are_the_models_within_a_tenth_of_a_point(lab, page, context):
    """Every probability the page shows for an authored prompt, at every temperature of the dial,
    against NumPy's forward pass run now over the fetched GGUF (tests/test_llama.py holds NumPy
    to transformers)."""
    data, _ = page
    c = lab.spec.context(context)
    shown = next(x for x in data["contexts"] if x["id"] == context)
    model = llama.cached_model(store.locate(real.MODEL))
    ids = real.next_token(model, {"text": c.text, "chat": c.chat})["ids"]
    logits, _ = llama.next_token_logits(model, ids)
    assert [c.words[i] for i in ids] == list(shown["tokens"])
    probs = decoding.softmax(logits, data["temps"])  # [t, V]
    assert shown["ids"] == np.argsort(-probs[data["default"]["t"]], kind="stable")[:10].tolist()
    page_pct = np.asarray(shown["p"]) / 1000  # [t, 10]: parts of 100,000 as percentages
    model_pct = 100 * probs[:, shown["ids"]]
    assert np.abs(page_pct - model_pct).max() < 0.1
    rest = 100 - page_pct.sum(axis=1)
    assert np.abs(rest - (100 - model_pct.sum(axis=1))).max() < 0.1


def test_the_tail_file_holds_every_other_tokens_parts_so_the_page_cuts_as_numpy_does(lab, page):
    data, script = page
    tails = json.loads(script[script.index(".samplingTail=") + len(".samplingTail="):].rstrip().rstrip(";"))
    for shown in data["contexts"]:
        c = lab.spec.context(shown["id"])
        parts = decoding.to_parts(decoding.softmax(c.logits, data["temps"]))  # [t, V]
        for t, runs in enumerate(tails[shown["id"]]):
            w = np.array(shown["p"][t] + [v for v, n in runs for _ in range(n)])
            assert len(w) == 49152 and w.sum() == decoding.PARTS and np.all(np.diff(w) <= 0)
            assert sorted(w.tolist()) == sorted(parts[t].tolist())
            for p in (10, 50, 90):
                assert decoding.top_p_keep(w, p).sum() == decoding.top_p_keep(parts[t], p).sum()


def test_a_token_without_its_leading_space_gets_a_suggestion(tmp_path):
    content = tmp_path / "content"
    shutil.copytree(ROOT / "content", content)
    lab_yaml = content / "labs" / "sampling" / "lab.yaml"
    text = lab_yaml.read_text(encoding="utf-8")
    lab_yaml.write_text(text.replace("at T=0.3: ␣cat >= 60%", "at T=0.3: kitty >= 60%").replace(
        "at T=1: ␣cat < 10%", "at T=1: cat < 10%"), encoding="utf-8")
    with pytest.raises(ContentError) as caught:
        build_files(content, None)
    message = str(caught.value)
    assert "no token 'kitty' in the model's vocabulary" in message
    assert "no token 'cat'" not in message  # "cat" is a token too (no space): a claim about it is checked
    assert "a leading space as ␣ (e.g. ␣mat)" in message


def test_a_changed_prompt_is_an_error_at_its_line_until_labs_decode_runs(tmp_path, capsys, monkeypatch):
    content = tmp_path / "content"
    shutil.copytree(ROOT / "content", content)
    lab_yaml = content / "labs" / "sampling" / "lab.yaml"
    text = lab_yaml.read_text(encoding="utf-8")
    lab_yaml.write_text(text.replace("text: My favourite colour is", "text: My favourite color is"), encoding="utf-8")
    with pytest.raises(ContentError) as caught:
        build_files(content, None)
    line = next(i for i, s in enumerate(lab_yaml.read_text(encoding="utf-8").split("\n"), 1) if "favourite color" in s)
    assert f"labs/sampling/lab.yaml:{line}:13: error: " in str(caught.value)
    assert 'holds nothing for next-token {"chat":false,"text":"My favourite color is"}' in str(caught.value)
    assert "run `labs decode --lab sampling`" in str(caught.value)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_labs(capsys, "decode", "--lab", "sampling")
    assert code == 0, err
    assert out[-1] == "content/labs/sampling/decoded.json: 1 of 4 results computed, the rest already stored"


def test_a_build_without_the_model_reads_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "no-models"))
    files, _ = build_files(ROOT / "content", None)
    assert "labs/sampling/index.html" in files


def test_labs_models_fetch_with_no_names_takes_the_decoder(capsys, monkeypatch):
    """The README's `labs models fetch` fetches what the shipped labs use that is not committed:
    the decoder, which lab 08 reads (MiniLM's page bundle is committed in content/models/)."""
    from generator.cli import _model_uses
    from generator.runtime.commands import used_by_labs

    monkeypatch.chdir(ROOT)
    assert used_by_labs(_model_uses, Path("content")) == ["smollm2-135m-instruct"]


def test_a_damaged_store_is_an_error_at_its_line_and_labs_decode_writes_it_again(tmp_path, capsys, monkeypatch):
    """A damaged decoded.json must not stop the command that repairs it: the lab still says what it
    reads. (The model is replaced by a stand-in that answers from the committed file.)"""
    content = tmp_path / "content"
    shutil.copytree(ROOT / "content", content)
    path = content / "labs" / "sampling" / "decoded.json"
    good = decoded.load(LAB)
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[3] = lines[3].replace('"chat":false', '"chat":true', 1)  # edited by hand: its key no longer matches
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ContentError) as caught:
        build_files(content, None)
    assert "labs/sampling/decoded.json:4:1: error: the entry's key does not match its inputs" in str(caught.value)
    assert len(caught.value.diagnostics) == 1
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(decoded, "load_model", lambda name: "stand-in")
    by_name = {(e.computation, json.dumps(e.inputs, sort_keys=True)): e.result for e in good.entries.values()}
    for attr in ("VOCABULARY", "NEXT_TOKEN"):
        name = getattr(real, attr).name
        monkeypatch.setattr(real, attr, decoded.Computation(name, 1, lambda model, inputs, name=name:
                                                            by_name[(name, json.dumps(dict(inputs), sort_keys=True))]))
    code, out, err = run_labs(capsys, "decode", "--lab", "sampling")
    assert code == 0, err
    assert path.read_bytes() == (LAB / "decoded.json").read_bytes()
