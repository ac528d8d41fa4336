"""The next-token kind (generator/kinds/nexttoken): its arithmetic, the shipped lab 06 built from
its stored results (content/labs/next-token/decoded.json), its claims and quiz checked at build,
failing at their line with the computed truth, and — marked ``reference`` — the stored numbers
against transformers' GGUF-loaded SmolLM2 and a fresh NumPy run."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import lab_data, reference, run_labs
from llama_fixtures import smollm2_gguf

from generator.build import build_files
from generator.errors import ContentError
from generator.kinds import get_kind, kind_names
from generator.kinds.nexttoken import NextTokenKind, compute
from generator.runtime import decoded
from generator.speed.packed import unpacked

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "content" / "labs" / "next-token"
SITE_YAML = """\
title: Next-token test site
description: One next-token lab.
base_url: https://example.org/
language: en
topics:
  - slug: llm-engineering
    title: LLM Engineering
    blurb: Inside language models.
labs:
  - next-token
"""
LAB = "content/labs/next-token/lab.yaml"
QUIZ = "content/labs/next-token/quiz.yaml"


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """The shipped lab 06 alone in a new site, in the working directory (messages print content/…)."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SHIPPED, tmp_path / "content" / "labs" / "next-token")
    (tmp_path / "content" / "site.yaml").write_text(SITE_YAML, encoding="utf-8")
    return tmp_path / "content"


def _edit(content: Path, name: str, old: str, new: str) -> str:
    """Replace ``old`` (once in the file) with ``new``; return ``line:col`` where it was."""
    path = content / "labs" / "next-token" / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    index = text.index(old)
    path.write_text(text.replace(old, new), encoding="utf-8")
    return f"{text.count(chr(10), 0, index) + 1}:{index - text.rfind(chr(10), 0, index)}"


def _errors(content: Path) -> list[str]:
    with pytest.raises(ContentError) as info:
        build_files(content, None)
    return [str(d) for d in info.value.diagnostics]


def _stored() -> dict[str, dict]:
    """The shipped lab's stored results by computation, text records by their text."""
    store = decoded.load(SHIPPED)
    found: dict[str, dict] = {"text": {}}
    for entry in store.entries.values():
        if entry.computation == "next-token-text":
            found["text"][entry.inputs["text"]] = entry.result
        else:
            found[entry.computation] = entry.result
    return found


# ---- registration and arithmetic ----------------------------------------------------------------------


def test_the_kind_is_registered_through_its_entry_point():
    assert "next-token" in kind_names()
    assert isinstance(get_kind("next-token"), NextTokenKind)


def test_surprise_cross_entropy_and_perplexity():
    p = [0.5, 0.25, 0.125]
    assert compute.surprise_bits(p).tolist() == [1.0, 2.0, 3.0]
    assert compute.cross_entropy(p) == 2.0
    assert compute.perplexity(p) == pytest.approx(4.0)
    assert compute.perplexity([1 / 7] * 5) == pytest.approx(7.0)  # uniform over 7: perplexity 7
    assert compute.least_likely([0.3, 0.01, 0.01, 0.5]) == 1  # the first of equals


def test_the_cache_size_is_the_formula():
    assert compute.cache_bytes(30, 3, 64, 1000, 2) == 2 * 30 * 3 * 64 * 1000 * 2 == 23_040_000
    assert compute.si_bytes(23_040_000) == "23.0 MB"
    assert compute.si_bytes(17_179_869_184) == "17.2 GB"
    assert compute.si_bytes(999) == "999 B"


def test_settles_at_is_the_first_layer_of_the_final_run_of_top_readings():
    rows = [[5, 0.9, 0.1], [7, 0.5, 0.5], [5, 0.4, 0.1], [7, 0.6, 0.6], [7, 0.8, 0.8]]
    assert compute.settles_at(rows, 7) == 3
    assert compute.settles_at(rows, 5) is None


# ---- the shipped lab, built ------------------------------------------------------------------------------


def test_every_token_carries_its_stored_probability_and_the_cache_table_is_the_formula(site):
    files, content = build_files(site, None)
    page = files["labs/next-token/index.html"].decode()
    stored = _stored()
    lab = unpacked(content.labs[0])  # a build keeps its labs packed (generator.speed.packed)
    for i, text in enumerate(lab.spec.texts):
        record = stored["text"][text.text]
        block = re.search(rf'<div class="nt-text" data-text="{i}">(.*?)</div>', page, re.S).group(1)
        probs = [float(x) for x in re.findall(r'data-prob="([^"]+)"', block)]
        assert len(probs) == len(record["ids"]) - 1
        assert np.allclose(probs, record["p"], rtol=5e-4, atol=0), text.id
        ppl = 2 ** float(np.mean(-np.log2(record["p"])))
        assert f"Perplexity: <strong>{ppl:.1f}</strong>" in block
    # The cache table: SmolLM2's row from the config stored with the model's results, the others
    # from the published configs written in lab.yaml.
    cfg = stored["next-token-config"]
    data = lab_data(page)
    rows = re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", page.split('class="nt-sizes"')[1], re.S)
    configs = [(cfg["n_layers"], cfg["n_kv_heads"], cfg["head_dim"])] + [
        (m.layers, m.kv_heads, m.head_dim) for m in lab.spec.cache.models]
    assert len(rows) == len(configs) == 3
    for row, (layers, kv, head_dim) in zip(rows, configs):
        sizes = [int(x) for x in re.findall(r'data-bytes="(\d+)"', row)]
        assert sizes == [2 * layers * kv * head_dim * n * 2 for n in data["cache"]["tokens"]]
    assert (cfg["n_layers"], cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]) == (30, 9, 3, 64)


def test_the_config_is_the_ggufs():
    gguf = reference("gguf")
    reader = gguf.GGUFReader(smollm2_gguf())

    def field(name):
        f = reader.fields[name]
        return int(f.parts[f.data[0]][0])

    cfg = _stored()["next-token-config"]
    assert cfg["n_layers"] == field("llama.block_count")
    assert cfg["n_heads"] == field("llama.attention.head_count")
    assert cfg["n_kv_heads"] == field("llama.attention.head_count_kv")
    assert cfg["head_dim"] == field("llama.embedding_length") // field("llama.attention.head_count")


# ---- claims and questions fail at their line ----------------------------------------------------------------


def test_a_false_perplexity_claim_fails_at_its_line_with_the_computed_value(site):
    at = _edit(site, "lab.yaml", 'perplexity of "capital" < 15', 'perplexity of "capital" < 5')
    record = _stored()["text"]["The capital of France is Paris."]
    ppl = compute.perplexity(record["p"])
    assert _errors(site) == [f"{LAB}:{at}: error: claim 'perplexity of \"capital\" < 5' fails: "
                             f"the perplexity of 'capital' is {ppl:.3f}"]


def test_a_false_cache_claim_fails_with_the_formula(site):
    at = _edit(site, "lab.yaml", "the cache for 1,000 tokens is 23.0 MB", "the cache for 1,000 tokens is 24.0 MB")
    (error,) = _errors(site)
    assert error.startswith(f"{LAB}:{at}: error: claim 'the cache for 1,000 tokens is 24.0 MB' fails: ")
    assert "2 × 30 layers × 3 key/value heads × 64 × 1,000 tokens × 2 bytes = 23,040,000 bytes" in error


def test_a_false_lens_claim_and_a_false_least_likely_claim_say_what_is_true(site):
    _edit(site, "lab.yaml", '" Paris" is the top guess from layer 30 on', '" Paris" is the top guess from layer 20 on')
    _edit(site, "lab.yaml", 'the least likely token of "fox" is " quick"', 'the least likely token of "fox" is " dog"')
    errors = _errors(site)
    assert any('fails: " Paris" is the top guess from layer 30 on' in e for e in errors), errors
    assert any('fails: the least likely token is " quick" (token 2' in e for e in errors), errors


def test_a_wrong_answer_key_and_sizes_too_close_are_refused(site):
    at = _edit(site, "quiz.yaml", '" quick"', '" lazy"')
    at2 = _edit(site, "quiz.yaml", "[1.7 GB, 17 GB, 170 GB]", "[1.7 GB, 17 GB, 20 GB]")
    errors = _errors(site)
    assert any(e.startswith(f"{QUIZ}:{at}: error: answer key \" lazy\" is wrong: the least likely token is \" quick\"")
               for e in errors), errors
    assert any(e.startswith(f"{QUIZ}:{at2}: error: '20 GB' is within a factor of 1.5 of the right choice '17 GB'")
               for e in errors), errors


def test_a_changed_text_without_labs_decode_names_the_command_at_the_text(site):
    at = _edit(site, "lab.yaml", "text: The capital of France is Paris.", "text: The capital of Italy is Rome.")
    errors = _errors(site)
    line = at.split(":")[0]
    assert any(e.startswith(f"{LAB}:{line}:") and "labs decode --lab next-token" in e for e in errors), errors


def test_labs_new_next_token_builds_with_no_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "content").mkdir()
    (tmp_path / "content" / "site.yaml").write_text(SITE_YAML.replace("  - next-token\n", "  - mine\n"))
    assert run_labs(capsys, "new", "mine", "--kind", "next-token", "--topic", "llm-engineering")[0] == 0
    code, _, err = run_labs(capsys, "build")
    assert code == 0, err
    assert not [line for line in err if "warning" in line], err
    page = (tmp_path / "site" / "labs" / "mine" / "index.html").read_text(encoding="utf-8")
    assert page.count("data-prob=") == sum(len(t["p"]) for t in lab_data(page)["texts"]) > 0


# ---- the stored numbers against the references ------------------------------------------------------------------


@pytest.mark.reference
def test_the_stored_probabilities_are_transformers_within_half_a_point_and_the_lens_is_numpy(transformers_smollm2):
    from generator.models import llama

    torch, model = transformers_smollm2
    path = smollm2_gguf()
    worst = 0.0
    for text, record in _stored()["text"].items():
        with torch.no_grad():
            logits = model(torch.tensor([record["ids"]])).logits[0].double()
        probs = torch.softmax(logits, -1).numpy()  # [n+1, V]
        theirs = probs[np.arange(len(record["ids"]) - 1), record["ids"][1:]]
        worst = max(worst, float(np.abs(theirs - np.array(record["p"])).max()))
    print(f"largest gap of a stored token probability to transformers: {100 * worst:.4f} points")
    assert worst < 0.005
    # The lens of the default text, recomputed with NumPy: every reading within 1e-4.
    ours = llama.cached_model(path)
    record = _stored()["text"]["The capital of France is Paris."]
    fresh = compute.read_text(ours, "The capital of France is Paris.")
    stored = np.array([[row[1:] for row in position] for position in record["lens"]])
    again = np.array([[row[1:] for row in position] for position in fresh["lens"]])
    assert [[row[0] for row in position] for position in record["lens"]] == [
        [row[0] for row in position] for position in fresh["lens"]]
    assert float(np.abs(stored - again).max()) < 1e-4


def test_attention_is_stored_in_whole_thousandths_each_row_adding_up_to_1000():
    assert compute.per_mille(np.array([[0.3334, 0.3333, 0.3333], [0.5, 0.5, 0.0]])).tolist() == [[334, 333, 333],
                                                                                              [500, 500, 0]]
    stored = [e.result for e in decoded.load(SHIPPED).entries.values() if e.computation == "next-token-attention"]
    assert len(stored) == 3
    for record in stored:
        m = len(record["ids"])
        weights = np.array(record["weights"])  # [L, H, m(m+1)/2]
        assert weights.shape == (30, 9, m * (m + 1) // 2)
        starts = np.cumsum([0] + list(range(1, m)))
        for i, start in enumerate(starts):
            assert (weights[:, :, start:start + i + 1].sum(axis=-1) == 1000).all()
