"""The NumPy BERT: safetensors reading, checkpoint validation, the forward pass.

The forward pass is checked three ways: against a deliberately naive float64 re-statement
here (loops over heads, exact math.erf), against transformers' ``BertModel`` on a tiny random
checkpoint, and against transformers on the real all-MiniLM-L6-v2 (see conftest.minilm_dir).

transformers/torch are optional (the ``reference`` extra): those tests skip without them,
unless LABS_REQUIRE_REFERENCE=1, which makes their absence a failure. The real-checkpoint
tests follow the same rule (conftest.minilm_dir).
"""

from __future__ import annotations

import json
import math
import string
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import minilm_dir, reference

from generator.models.bert import (
    BertConfig,
    bert_forward,
    erf,
    gelu,
    load_model,
    run_sentence,
    write_random_checkpoint,
)
from generator.models.safetensors_io import (
    load_safetensors,
    read_header,
    save_safetensors,
)
from generator.errors import BuildError

TINY = BertConfig(
    vocab_size=160,  # more rows than vocab.txt has lines, as real checkpoints often do
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,  # odd on purpose: no accidental square shapes
    max_position_embeddings=40,
    type_vocab_size=2,
)
TINY_VOCAB = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + list(string.punctuation + string.digits + string.ascii_lowercase)
    + ["##" + c for c in string.ascii_lowercase]
    + ["the", "cat", "sat", "on", "mat", "play", "##ing", "did", "##n"]
)
SENTENCE = "The cat didn't sit on the mat, playing."


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-bert")
    write_random_checkpoint(folder, TINY_VOCAB, TINY, seed=1)
    return folder


@pytest.fixture(scope="module")
def tiny_model(tiny_dir):
    return load_model(tiny_dir)


# ---- safetensors ------------------------------------------------------------------------------------


def test_safetensors_round_trip_keeps_dtypes_and_values(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f64": rng.standard_normal(5),
        "f16": rng.standard_normal((2, 2)).astype(np.float16),
        "i64": np.arange(6, dtype=np.int64).reshape(1, 6),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    path = tmp_path / "t.safetensors"
    save_safetensors(path, tensors, metadata={"format": "pt"})
    loaded = load_safetensors(path)
    assert loaded["f32"].dtype == np.float32 and np.array_equal(loaded["f32"], tensors["f32"])
    assert loaded["f64"].dtype == np.float64 and np.array_equal(loaded["f64"], tensors["f64"])
    assert loaded["f16"].dtype == np.float32 and np.array_equal(loaded["f16"], tensors["f16"].astype(np.float32))
    assert loaded["i64"].dtype == np.int64 and np.array_equal(loaded["i64"], tensors["i64"])
    assert loaded["scalar"].shape == () and loaded["empty"].shape == (0, 3)
    assert read_header(path).metadata == {"format": "pt"}
    assert load_safetensors(path, float_dtype=np.float64)["f32"].dtype == np.float64


def test_bf16_is_widened_to_float32(tmp_path):
    values = np.array([1.0, -2.5, 3.140625, 0.0], dtype=np.float32)  # exactly representable in bfloat16
    raw = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({"b": {"dtype": "BF16", "shape": [4], "data_offsets": [0, len(raw)]}}).encode()
    path = tmp_path / "bf16.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + raw)
    assert np.array_equal(load_safetensors(path)["b"], values)


def test_interoperates_with_the_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy", reason="the safetensors package (test extra) is not installed")
    tensors = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.array([1, 2], dtype=np.int32)}
    theirs, ours = tmp_path / "theirs.safetensors", tmp_path / "ours.safetensors"
    st.save_file(tensors, str(theirs))
    save_safetensors(ours, tensors)
    for path in (theirs, ours):
        ours_read, theirs_read = load_safetensors(path), st.load_file(str(path))
        for name, array in tensors.items():
            assert np.array_equal(ours_read[name], array) and np.array_equal(theirs_read[name], array)


def _raw_file(tmp_path: Path, header: bytes | dict, data: bytes = b"", length: int | None = None) -> Path:
    encoded = header if isinstance(header, bytes) else json.dumps(header).encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(encoded) if length is None else length) + encoded + data)
    return path


@pytest.mark.parametrize(
    "header, data, length, message",
    [
        (b"", b"", 0, "not valid UTF-8 JSON"),
        (b"{not json", b"", None, "not valid UTF-8 JSON"),
        (b"[1, 2]", b"", None, "not a JSON object"),
        (b"{}", b"", 10_000, "does not fit"),
        ({"x": {"dtype": "F32", "shape": [2]}}, b"\0" * 8, None, "needs 'dtype', 'shape' and 'data_offsets'"),
        ({"x": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, None, "unknown dtype 'Q7'"),
        ({"x": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8, None, "shape"),
        ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}}, b"\0" * 8, None, "fall outside"),
        ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [8, 4]}}, b"\0" * 8, None, "fall outside"),
        ({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, None, "needs 12 bytes"),
        ({"__metadata__": {"a": 1}}, b"", None, "__metadata__"),
        (b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", b"", None, "nested too deeply"),
        ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12, None, "'a' and 'b' overlap"),
    ],
    ids=["empty-header", "bad-json", "not-object", "length-too-big", "missing-keys", "unknown-dtype",
         "negative-shape", "offsets-past-end", "offsets-reversed", "size-mismatch", "bad-metadata", "deeply-nested",
         "overlapping-offsets"],
)  # fmt: skip
def test_bad_safetensors_is_a_build_error_naming_the_file(tmp_path, header, data, length, message):
    path = _raw_file(tmp_path, header, data, length)
    with pytest.raises(BuildError, match="bad.safetensors") as info:
        load_safetensors(path)
    assert message in str(info.value)


def test_short_file_and_missing_tensor(tmp_path):
    short = tmp_path / "short.safetensors"
    short.write_bytes(b"\x01\x02")
    with pytest.raises(BuildError, match="too short"):
        read_header(short)
    good = tmp_path / "good.safetensors"
    save_safetensors(good, {"a": np.zeros(2, dtype=np.float32)})
    with pytest.raises(BuildError, match="missing tensor.*nope"):
        load_safetensors(good, ["a", "nope"])


# ---- the math ------------------------------------------------------------------------------------------


def test_erf_is_within_1e_6_of_math_erf():
    x = np.linspace(-8, 8, 160_001)
    exact = np.array([math.erf(v) for v in x])
    assert np.max(np.abs(erf(x) - exact)) <= 2e-7  # the A&S 7.1.26 bound, 1.5e-7, plus rounding
    assert np.max(np.abs(erf(x.astype(np.float32)) - exact)) <= 1e-6
    assert erf(x.astype(np.float32)).dtype == np.float32
    assert np.allclose(erf(np.array([-np.inf, 0.0, np.inf])), [-1.0, 0.0, 1.0], rtol=0, atol=1e-15)


def test_gelu_is_the_exact_erf_form():
    x = np.linspace(-10, 10, 2001)
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    assert np.max(np.abs(gelu(x) - exact)) <= 1e-6


# ---- loading a folder -------------------------------------------------------------------------------


def _copy_checkpoint(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def _poison(folder: Path, name: str, value: float) -> None:
    path = folder / "model.safetensors"
    tensors = load_safetensors(path)
    tensors[name] = tensors[name].copy()
    tensors[name].flat[3] = value
    save_safetensors(path, tensors)


def _edit_config(folder: Path, **changes) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config))


@pytest.mark.parametrize(
    "breakage, file, message",
    [
        (lambda f: _edit_config(f, model_type="gpt2"), "config.json", "model_type 'gpt2' is not BERT"),
        (lambda f: _edit_config(f, hidden_size=None), "config.json", "lacks 'hidden_size'"),
        (lambda f: _edit_config(f, num_attention_heads=5), "config.json", "not divisible"),
        (lambda f: _edit_config(f, num_hidden_layers="2"), "config.json", "positive integer"),
        (lambda f: _edit_config(f, hidden_act="swish"), "config.json", "hidden_act 'swish'"),
        (lambda f: _edit_config(f, position_embedding_type="relative_key"), "config.json", "relative_key"),
        (lambda f: (f / "config.json").write_text('{"model_type": "bert",'), "config.json", "not valid JSON at line 1"),
        (lambda f: (f / "config.json").unlink(), "config.json", "not found"),
        (lambda f: _edit_config(f, num_hidden_layers=3), "model.safetensors", "missing tensor 'encoder.layer.2."),
        (lambda f: _edit_config(f, intermediate_size=36), "model.safetensors", "shape [37, 32] but config.json implies [36, 32]"),
        (lambda f: _edit_config(f, vocab_size=50), "model.safetensors", "shape [160, 32]"),
        (lambda f: (f / "model.safetensors").unlink(), "model.safetensors", "not found"),
        (lambda f: (f / "model.safetensors").rename(f / "pytorch_model.bin"), "model.safetensors", "convert it once"),
        (lambda f: (f / "model.safetensors").write_bytes(b"\x10" + b"\0" * 7 + b"{}"), "model.safetensors", "does not fit"),
        (lambda f: _edit_config(f, num_hidden_layers=10**7), "config.json",
         "'num_hidden_layers' is 10000000, more than this reader accepts (128)"),
        (lambda f: _edit_config(f, vocab_size=10**9), "config.json", "'vocab_size' is 1000000000, more than"),
        (lambda f: (f / "config.json").write_text("[" * 100_000 + "]" * 100_000), "config.json", "nested too deeply"),
        (lambda f: _poison(f, "encoder.layer.1.attention.self.key.weight", np.nan), "model.safetensors",
         "tensor 'encoder.layer.1.attention.self.key.weight' holds NaN or infinite values"),
        (lambda f: _poison(f, "embeddings.LayerNorm.weight", np.inf), "model.safetensors",
         "tensor 'embeddings.LayerNorm.weight' holds NaN or infinite values"),
        (lambda f: (f / "tokenizer_config.json").write_text('{"do_lower_case": "false"}'), "tokenizer_config.json",
         "'do_lower_case' must be true, false or null, not 'false'"),
        (lambda f: (f / "tokenizer_config.json").write_text('{"strip_accents": 5}'), "tokenizer_config.json",
         "'strip_accents' must be true, false or null, not 5"),
        (lambda f: (f / "vocab.txt").unlink(), "vocab.txt", "not found"),
        (lambda f: (f / "vocab.txt").write_text("[CLS]\n[SEP]\n[UNK]\n" + "x\n" * 200), "vocab.txt", "vocab_size=160"),
    ],
    ids=["not-bert", "missing-key", "heads-do-not-divide", "string-number", "unknown-activation",
         "relative-positions", "bad-json", "no-config", "too-few-layers", "wrong-shape", "wrong-vocab-size",
         "no-weights", "only-pytorch-bin", "corrupt-weights", "huge-layer-count", "huge-vocab", "deeply-nested-config",
         "nan-weight", "inf-weight", "lower-case-as-text", "strip-accents-a-number", "no-vocab", "vocab-too-big"],
)  # fmt: skip
def test_bad_checkpoint_folder_is_a_build_error_naming_the_file(tiny_dir, tmp_path, breakage, file, message):
    folder = _copy_checkpoint(tiny_dir, tmp_path / "model")
    breakage(folder)
    with pytest.raises(BuildError) as info:
        load_model(folder)
    assert f"{file}: error:" in str(info.value)
    assert message in str(info.value)


def test_missing_folder_and_file_instead_of_folder(tmp_path):
    with pytest.raises(BuildError, match="model folder not found"):
        load_model(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(BuildError, match="found a file"):
        load_model(tmp_path / "file")


def test_bert_prefix_and_gamma_beta_names_load_the_same_weights(tiny_dir, tmp_path, tiny_model):
    folder = _copy_checkpoint(tiny_dir, tmp_path / "prefixed")
    tensors = load_safetensors(folder / "model.safetensors")
    renamed = {"bert." + k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
               for k, v in tensors.items()}  # fmt: skip
    renamed["cls.predictions.bias"] = np.zeros(TINY.vocab_size, dtype=np.float32)  # an unrelated head: ignored
    save_safetensors(folder / "model.safetensors", renamed)
    ids = np.array(run_sentence(tiny_model, SENTENCE)[0].ids)
    a = bert_forward(tiny_model.weights, tiny_model.config, ids)
    b = bert_forward(load_model(folder).weights, tiny_model.config, ids)
    assert np.array_equal(a.attentions, b.attentions)


# ---- the forward pass ------------------------------------------------------------------------------


def naive_forward(folder: Path, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """BERT restated as plainly as possible in float64: loops over heads, exact erf, HF names."""
    t = {k: v.astype(np.float64) for k, v in load_safetensors(folder / "model.safetensors").items()}
    cfg = json.loads((folder / "config.json").read_text())
    h, eps = cfg["num_attention_heads"], cfg["layer_norm_eps"]
    exact_erf = np.vectorize(math.erf)

    def norm(x, name):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * t[name + ".weight"] + t[name + ".bias"]

    def dense(x, name):
        return x @ t[name + ".weight"].T + t[name + ".bias"]

    n = len(ids)
    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][:n]
    x = norm(x + t["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    states, attentions = [x], []
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(x, p + "attention.self." + m) for m in ("query", "key", "value"))
        size = q.shape[1] // h
        heads, probs = [], []
        for j in range(h):
            cols = slice(j * size, (j + 1) * size)
            scores = q[:, cols] @ k[:, cols].T / math.sqrt(size)
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            prob = e / e.sum(axis=1, keepdims=True)
            probs.append(prob)
            heads.append(prob @ v[:, cols])
        x = norm(x + dense(np.concatenate(heads, axis=1), p + "attention.output.dense"), p + "attention.output.LayerNorm")
        inner = dense(x, p + "intermediate.dense")
        inner = inner * 0.5 * (1 + exact_erf(inner / math.sqrt(2)))
        x = norm(x + dense(inner, p + "output.dense"), p + "output.LayerNorm")
        states.append(x)
        attentions.append(np.stack(probs))
    return np.stack(attentions), np.stack(states)


def test_forward_shapes_and_rows(tiny_model):
    encoding, out = run_sentence(tiny_model, SENTENCE)
    n = len(encoding.tokens)
    assert out.attentions.shape == (2, 4, n, n)
    assert out.hidden_states.shape == (3, n, 32)
    assert out.attentions.dtype == np.float32
    assert np.allclose(out.attentions.sum(axis=-1), 1, atol=1e-6)
    assert np.array_equal(out.last_hidden_state, out.hidden_states[-1])
    assert out.attentions.std() > 0.05, "random weights at scale 0.5 must give far-from-uniform attention"


@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-6), (np.float32, 1e-5)], ids=["float64", "float32"])
def test_forward_matches_naive_restatement(tiny_dir, dtype, tolerance):
    model = load_model(tiny_dir, dtype=dtype)
    encoding, out = run_sentence(model, SENTENCE)
    attentions, states = naive_forward(tiny_dir, list(encoding.ids))
    assert np.max(np.abs(out.attentions - attentions)) <= tolerance
    assert np.max(np.abs(out.hidden_states - states)) <= tolerance


def test_batch_and_padding_mask_give_the_unbatched_result(tiny_model):
    ids = np.array(run_sentence(tiny_model, SENTENCE)[0].ids)
    short = ids[:6].copy()
    short[-1] = tiny_model.tokenizer.vocab["[SEP]"]
    single = bert_forward(tiny_model.weights, tiny_model.config, short)
    padded = np.zeros((2, len(ids)), dtype=np.int64)
    padded[0], padded[1, :6] = ids, short
    mask = padded != 0
    batch = bert_forward(tiny_model.weights, tiny_model.config, padded, attention_mask=mask)
    assert batch.attentions.shape == (2, 2, 4, len(ids), len(ids))
    assert np.allclose(batch.attentions[1, :, :, :6, :6], single.attentions, atol=1e-6)
    assert np.all(batch.attentions[1, :, :, :, 6:] == 0), "nobody attends to padding"
    assert np.allclose(batch.hidden_states[1, :, :6], single.hidden_states, atol=1e-5)


def test_too_long_sentence_is_a_build_error(tiny_model):
    with pytest.raises(BuildError, match="at most 40"):
        run_sentence(tiny_model, "cat " * 39)


# ---- parity with transformers -------------------------------------------------------------------------


def transformers_forward(folder: Path, ids) -> tuple[np.ndarray, np.ndarray]:
    torch = reference("torch")
    transformers = reference("transformers")
    model = transformers.BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(torch.tensor([list(ids)]), output_attentions=True, output_hidden_states=True)
    return (
        torch.stack(out.attentions)[:, 0].numpy(),  # [L, H, n, n]
        torch.stack(out.hidden_states)[:, 0].numpy(),  # [L+1, n, d]
    )


@pytest.mark.reference
def test_tiny_checkpoint_matches_transformers(tiny_dir, tiny_model):
    encoding, out = run_sentence(tiny_model, SENTENCE)
    attentions, states = transformers_forward(tiny_dir, encoding.ids)
    assert attentions.shape == out.attentions.shape
    assert np.max(np.abs(out.attentions - attentions)) <= 1e-5
    assert np.max(np.abs(out.hidden_states - states)) <= 1e-5


@pytest.mark.reference
def test_prefixed_tiny_checkpoint_matches_transformers(tmp_path, tiny_model):
    folder = tmp_path / "prefixed"
    write_random_checkpoint(folder, TINY_VOCAB, TINY, seed=7, prefix="bert.")
    model = load_model(folder)
    encoding, out = run_sentence(model, SENTENCE)
    attentions, states = transformers_forward(folder, encoding.ids)
    assert np.max(np.abs(out.attentions - attentions)) <= 1e-5
    assert np.max(np.abs(out.hidden_states - states)) <= 1e-5


REAL_SENTENCES = [
    "The quick brown fox didn't jump over the lazy dog near the café in Zürich.",
    "The keys to the cabinet are on the table.",
    " ".join(["attention"] * 120),
]


@pytest.mark.reference
@pytest.mark.parametrize("sentence", REAL_SENTENCES, ids=["tricky", "agreement", "long"])
def test_minilm_matches_transformers(sentence):
    folder = minilm_dir()
    model = load_model(folder)
    encoding, out = run_sentence(model, sentence)
    attentions, states = transformers_forward(folder, encoding.ids)
    assert out.attentions.shape == (6, 12, len(encoding.ids), len(encoding.ids))
    assert np.max(np.abs(out.attentions - attentions)) <= 1e-5
    # Hidden states reach |10|; float32 carries ~7 digits, so compare them relative to their scale.
    assert np.max(np.abs(out.hidden_states - states)) <= 1e-5 * max(1.0, float(np.abs(states).max()))


def test_reference_helper_skips_or_fails_by_environment(monkeypatch):
    monkeypatch.delenv("LABS_REQUIRE_REFERENCE", raising=False)
    with pytest.raises(pytest.skip.Exception, match="reference"):
        reference("no_such_module_for_labs")
    monkeypatch.setenv("LABS_REQUIRE_REFERENCE", "1")
    with pytest.raises(pytest.fail.Exception, match="LABS_REQUIRE_REFERENCE=1"):
        reference("no_such_module_for_labs")
