"""The GGUF reader and the Llama forward pass (generator/models/gguf_io.py, llama.py).

Without the model: dequantization against a slow block-by-block reading of the bytes, the
reader's errors on tiny GGUFs written by the gguf library, the math's own properties, and the KV
cache against one pass over everything.

With the fetched SmolLM2-135M-Instruct GGUF (``labs models fetch smollm2-135m-instruct``): the
cache on the real model, and — marked ``reference`` — parity with transformers' GGUF-loaded
``LlamaForCausalLM`` in float32 (which dequantizes with the same gguf library): every one of the
49,152 next-token probabilities within 1e-4 on 120 prompts, the two anchors, the weights and the
RoPE pairing. transformers loads once for the module; NumPy and PyTorch run on one thread each.
The whole file takes about 45 s on a quiet 2-core machine (1 minute and more when it is busy).
"""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from llama_fixtures import smollm2_gguf, write_gguf

from generator.errors import BuildError
from generator.models import bpe, gguf_io, llama



@pytest.fixture(scope="module", autouse=True)
def one_blas_thread():
    """Small matrix products on one thread: a second BLAS thread on a busy 2-core machine only waits."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


# ---- dequantization against the block format --------------------------------------------------------


def slow_dequantize(raw: np.ndarray, kind: str, row_length: int) -> np.ndarray:
    """ggml's block formats read byte by byte (float32 arithmetic as ggml's C), one row at a time."""
    f32 = np.float32
    rows = []
    for row in np.asarray(raw).reshape(raw.shape[0], -1):
        data = row.tobytes()
        out: list[np.float32] = []
        if kind == "F32":
            out = [f32(x) for x in struct.unpack(f"<{row_length}f", data)]
        elif kind == "F16":
            out = [f32(x) for x in struct.unpack(f"<{row_length}e", data)]
        elif kind == "Q8_0":
            for at in range(0, len(data), 34):
                d = f32(struct.unpack("<e", data[at:at + 2])[0])
                out += [f32(q) * d for q in struct.unpack("<32b", data[at + 2:at + 34])]
        elif kind == "Q4_1":
            for at in range(0, len(data), 20):
                d, m = (f32(x) for x in struct.unpack("<2e", data[at:at + 4]))
                qs = data[at + 4:at + 20]
                out += [d * f32(b & 0x0F) + m for b in qs] + [d * f32(b >> 4) + m for b in qs]
        rows.append(out)
    return np.array(rows, dtype=np.float32)


@pytest.mark.parametrize("kind", ["F32", "F16", "Q8_0", "Q4_1"])
def test_the_librarys_dequantization_equals_the_block_format_read_byte_by_byte(tmp_path, kind):
    path = write_gguf(tmp_path / "m.gguf", qtype=kind, embed_type=kind, seed=3)
    gg = gguf_io.read_gguf(path)
    for name in ("blk.0.attn_q.weight", "blk.1.ffn_down.weight", "token_embd.weight"):
        tensor = gg.tensors[name]
        assert tensor.type == kind
        fast = gguf_io.dequantize(tensor)
        assert fast.dtype == np.float32 and fast.shape == tensor.shape
        np.testing.assert_array_equal(fast, slow_dequantize(tensor.raw, kind, tensor.shape[-1]))


def test_smollm2s_q4_1_and_q8_0_blocks_dequantize_as_their_bytes_say():
    gg = gguf_io.read_gguf(smollm2_gguf())
    for name, kind in (("blk.0.attn_q.weight", "Q4_1"), ("blk.29.ffn_down.weight", "Q4_1"), ("token_embd.weight", "Q8_0")):
        tensor = gg.tensors[name]
        assert tensor.type == kind
        sample = gguf_io.GGUFTensor(name, kind, (48, tensor.shape[1]), tensor.raw[:48])  # 48 rows, every block of each
        np.testing.assert_array_equal(gguf_io.dequantize(sample), slow_dequantize(sample.raw, kind, tensor.shape[1]))


# ---- the reader's errors ------------------------------------------------------------------------------


def _error(path) -> str:
    with pytest.raises(BuildError) as caught:
        llama.load_model(path)
    return str(caught.value)


def test_a_file_that_is_not_gguf_is_named_and_refused(tmp_path):
    (tmp_path / "model.gguf").write_bytes(b"PK\x03\x04 not a gguf at all")
    assert "not a GGUF file: its first bytes are b'PK\\x03\\x04', not b'GGUF'" in _error(tmp_path / "model.gguf")
    (tmp_path / "empty.gguf").write_bytes(b"")
    assert _error(tmp_path / "empty.gguf").endswith("error: not a GGUF file: it is empty")
    assert "file not found" in _error(tmp_path / "missing.gguf")
    assert "expected a GGUF file but found a folder" in _error(tmp_path)


@pytest.mark.parametrize("keep", [6, 30, 2_000, -100], ids=["header", "metadata", "token-list", "tensor-data"])
def test_a_truncated_gguf_is_an_error_naming_the_file(tmp_path, keep):
    data = write_gguf(tmp_path / "whole.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:keep])
    message = _error(cut)
    assert message.startswith("cut.gguf: error: ") or "cut.gguf: error: " in message
    assert "truncated or damaged" in message


def test_a_fifo_is_refused_before_anything_opens_it(tmp_path):
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)  # no writer: opening it would block for ever
    assert "is a named pipe (FIFO), not a regular file" in _error(fifo)


@pytest.mark.parametrize(("options", "expected"), [
    ({"arch": "qwen2"}, "architecture 'qwen2' is not Llama"),
    ({"metadata": {"llama.block_count": None}}, "the metadata has no 'llama.block_count'"),
    ({"metadata": {"llama.attention.head_count_kv": 3}}, "head_count 4 is not a multiple of head_count_kv 3"),
    ({"metadata": {"llama.block_count": 3}}, "tensor 'blk.2.attn_norm.weight' is missing (the metadata says 3 layers)"),
    ({"metadata": {"llama.rope.dimension_count": 8}}, "partial RoPE is not supported"),
    ({"metadata": {"llama.rope.scaling.type": "yarn"}}, "RoPE scaling 'yarn' is not supported"),
    ({"metadata": {"llama.embedding_length": 10**9}}, "more than this reader accepts"),
    ({"shapes": {"blk.1.attn_k.weight": (64, 64)}}, "tensor 'blk.1.attn_k.weight' has shape [64, 64] but the metadata implies [32, 64]"),
    ({"drop": ("blk.0.ffn_up.weight",)}, "tensor 'blk.0.ffn_up.weight' is missing"),
    ({"extra": {"blk.0.attn_q.bias": ((64,), "F32")}}, "unexpected tensor 'blk.0.attn_q.bias'"),
    ({"qtype": "Q5_0"}, "is Q5_0; this reader dequantizes F32, F16, Q8_0, Q4_1"),
    ({"nan": "blk.1.ffn_norm.weight"}, "tensor 'blk.1.ffn_norm.weight' holds NaN or infinite values"),
    ({"metadata": {"tokenizer.ggml.pre": "qwen2"}}, "pre-tokenizer 'qwen2' (tokenizer.ggml.pre) is not supported"),
    ({"metadata": {"tokenizer.ggml.model": "llama"}}, "this tokenizer reads byte-level BPE ('gpt2')"),
    ({"metadata": {"tokenizer.ggml.merges": ["h e", "x yz"]}}, "merge 1 ('x yz') is not two tokens whose join is a token"),
], ids=["architecture", "no-block-count", "heads", "layers", "partial-rope", "rope-scaling", "limit", "shape",
        "missing-tensor", "extra-tensor", "type", "nan", "pre", "tokenizer-model", "merge"])
def test_a_gguf_that_is_not_a_plain_llama_is_refused_with_the_reason(tmp_path, options, expected):
    message = _error(write_gguf(tmp_path / "m.gguf", **options))
    assert message.startswith("m.gguf: error: ") or "/m.gguf: error: " in message
    assert expected in message


def test_random_damage_to_a_gguf_gives_an_error_line_never_a_traceback(tmp_path):
    data = write_gguf(tmp_path / "whole.gguf").read_bytes()
    rng = np.random.default_rng(17)
    damaged = tmp_path / "damaged.gguf"
    outcomes = set()
    for _ in range(150):
        copy = bytearray(data)
        for at in rng.integers(4, 6000, size=rng.integers(1, 5)):  # the header, metadata and tensor table
            copy[at] = int(rng.integers(256))
        damaged.write_bytes(bytes(copy))
        try:
            llama.load_model(damaged)
            outcomes.add("loaded")  # a flipped weight or name that is still a valid model
        except BuildError as exc:
            outcomes.add("error")
            assert "damaged.gguf: error: " in str(exc) and "\n" not in str(exc)
    assert "error" in outcomes


def test_a_tiny_gguf_loads_with_its_numbers(tmp_path):
    model = llama.load_model(write_gguf(tmp_path / "m.gguf"))
    c = model.config
    assert (c.vocab_size, c.hidden_size, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.intermediate_size) == \
        (263, 64, 2, 4, 2, 16, 96)
    assert c.tied_embeddings and model.weights.unembedding is model.weights.embedding
    assert model.weights.layers[0].w_qkv.shape == ((4 + 2 * 2) * 16, 64)
    assert model.name == "tiny random llama"


# ---- the math ------------------------------------------------------------------------------------------


def test_rope_rotates_adjacent_pairs_and_scores_depend_only_on_the_distance():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 1, 64)).astype(np.float32)
    cos, sin = llama.rope_angles(np.arange(40), 64, 100_000.0)
    rq, rk = llama.apply_rope(np.repeat(q, 40, 0), cos, sin), llama.apply_rope(np.repeat(k, 40, 0), cos, sin)
    np.testing.assert_allclose(np.linalg.norm(rq, axis=-1), np.linalg.norm(q), rtol=1e-5)  # a rotation
    np.testing.assert_allclose(rq[3] @ rk[1], rq[25] @ rk[23], rtol=1e-4)  # q at i, k at j: only i - j matters
    # Pair 0 is dimensions 0 and 1, rotated by the position itself (frequency 1).
    assert np.allclose(rq[5, :2], [q[0, 0] * np.cos(5) - q[0, 1] * np.sin(5), q[0, 0] * np.sin(5) + q[0, 1] * np.cos(5)], atol=1e-5)
    angle = 5 * 100_000.0 ** (-2 / 64)  # pair 1 is dimensions 2 and 3, at the next frequency
    assert np.allclose(rq[5, 2:4], [q[0, 2] * np.cos(angle) - q[0, 3] * np.sin(angle),
                                    q[0, 2] * np.sin(angle) + q[0, 3] * np.cos(angle)], atol=1e-5)


def test_grouped_query_attention_is_attention_with_each_kv_head_repeated():
    from generator.models.core import causal_mask, scaled_dot_product_attention

    rng = np.random.default_rng(1)
    q = rng.standard_normal((9, 5, 8)).astype(np.float32)
    k, v = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    out, weights = llama.grouped_attention(q, k, v)
    want, want_weights = scaled_dot_product_attention(q, np.repeat(k, 3, axis=0), np.repeat(v, 3, axis=0), mask=causal_mask(5))
    np.testing.assert_allclose(out, want, atol=1e-6)
    np.testing.assert_allclose(weights, want_weights, atol=1e-7)
    assert np.all(np.triu(weights, 1) == 0)  # nothing sees a later token


def test_rms_norm_and_silu():
    x = np.array([3.0, 4.0], dtype=np.float32)
    np.testing.assert_allclose(llama.rms_norm(x, np.array([1.0, 2.0], np.float32), 0.0), [3 / np.sqrt(12.5), 8 / np.sqrt(12.5)], rtol=1e-6)
    assert np.all(llama.rms_norm(np.zeros(4, np.float32), np.ones(4, np.float32), 1e-5) == 0)  # eps keeps 0/0 away
    z = np.array([-1000.0, -30.0, -1.0, 0.0, 2.0, 1000.0], dtype=np.float32)
    want = np.array([0.0, -30 / (1 + np.exp(30)), -1 / (1 + np.e), 0.0, 2 / (1 + np.exp(-2)), 1000.0])
    with np.errstate(all="raise"):  # no overflow inside silu, however large the input
        np.testing.assert_allclose(llama.silu(z), want, atol=1e-6)


def test_prefill_then_decode_equals_one_pass_over_everything_on_a_tiny_model(tmp_path):
    model = llama.load_model(write_gguf(tmp_path / "m.gguf", seed=5))
    ids = [1, 119, 260, 261, 113, 262, 52, 40, 41, 2, 80]
    whole = llama.forward(model.weights, model.config, ids, attentions=True)
    out = llama.forward(model.weights, model.config, ids[:4], attentions=True)
    states, cache = [out.hidden_states], out.cache
    for token in ids[4:]:
        step = llama.forward(model.weights, model.config, [token], cache, attentions=True)
        states.append(step.hidden_states)
        np.testing.assert_allclose(step.attentions[:, :, 0, :cache.length + 1],
                                   whole.attentions[:, :, cache.length, :cache.length + 1], atol=1e-5)
        cache = step.cache
    scale = float(np.abs(whole.hidden_states).max())  # float32 rounding is relative to the largest entry (~40)
    np.testing.assert_allclose(np.concatenate(states, axis=1), whole.hidden_states, atol=5e-6 * scale)
    np.testing.assert_allclose(cache.keys, whole.cache.keys, atol=5e-6 * float(np.abs(whole.cache.keys).max()))
    assert cache.length == len(ids) and whole.attentions.shape == (2, 4, len(ids), len(ids))
    lens = llama.logit_lens(model.weights, model.config, whole.hidden_states)
    assert lens.shape == (3, len(ids), 263)
    np.testing.assert_allclose(lens[-1, -1], llama.next_token_logits(model, ids)[0], atol=1e-5)


# ---- the real model -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2():
    return llama.cached_model(smollm2_gguf())


def prompts(n: int = 120, seed: int = 31) -> list[str]:
    """Varied prompts, seeded: plain sentences, questions, code, numbers, other scripts, chat turns."""
    rng = np.random.default_rng(seed)
    subjects = ["The cat", "My grandmother", "A small robot", "The president of France", "Water", "Python",
                "The quick brown fox", "Every student", "The old lighthouse", "Our team", "Mount Everest", "A neutron star"]
    verbs = ["is", "was", "likes", "jumps over", "has never seen", "will explain", "can be", "lives near", "reads"]
    tails = ["the", "a", "very", "in the morning", "because", "and then", "42", "exactly", "on Mars,"]
    fixed = [
        "The capital of France is", "The quick brown fox jumps over the lazy", "def fibonacci(n):\n    if n < 2:\n        return",
        "for (int i = 0; i < 10; i++) {", "1, 2, 3, 4, 5,", "Question: What is 7 times 8?\nAnswer:", "Bonjour, je m'appelle",
        "Привет, как", "東京は日本の", "import numpy as np\nx = np.", "<|im_start|>user\nWhat is the capital of Italy?<|im_end|>\n<|im_start|>assistant\n",
        "Once upon a time, in a land far away,", "The year 1969 was when", "😀 I am so", "  indented   text with    spaces",
    ]
    out = list(fixed)
    while len(out) < n:
        words = [subjects[rng.integers(len(subjects))], verbs[rng.integers(len(verbs))]]
        words += [tails[i] for i in rng.integers(len(tails), size=rng.integers(0, 4))]
        text = " ".join(words)
        if rng.random() < 0.15:
            text = f"<|im_start|>user\n{text}?<|im_end|>\n<|im_start|>assistant\n"
        out.append(text)
    return out


def test_the_cache_gives_the_same_next_token_probabilities_within_1e_5(smollm2):
    worst = 0.0
    for text in prompts()[:8]:
        ids = list(bpe.encode(text + " and so on, more words here", smollm2.tokenizer).ids)
        whole = llama.forward(smollm2.weights, smollm2.config, ids)
        every = llama.probabilities(llama.unembed(smollm2.weights, smollm2.config, whole.hidden_states[-1]))  # [n, V]
        split = max(1, len(ids) - 6)
        logits, cache = llama.next_token_logits(smollm2, ids[:split])
        for position in range(split, len(ids) + 1):
            worst = max(worst, float(np.abs(llama.probabilities(logits) - every[position - 1]).max()))
            if position < len(ids):
                logits, cache = llama.next_token_logits(smollm2, [ids[position]], cache)
    print(f"largest difference, cache against one pass, over 8 prompts and 7 positions each: {worst:.1e}")
    assert worst < 1e-5, worst


# ---- parity with transformers ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def transformers_model(transformers_smollm2):
    return transformers_smollm2  # conftest.py: loaded once a session, on one thread as NumPy's BLAS above


def transformers_probabilities(reference_model, ids) -> np.ndarray:
    torch, model = reference_model
    with torch.no_grad():
        logits = model(torch.tensor([list(ids)])).logits[0, -1].double()
    return torch.softmax(logits, -1).numpy()


def transformers_batch_probabilities(reference_model, batch: list[list[int]]) -> np.ndarray:  # -> [B, V]
    """The next-token distribution after each prompt of ``batch``, in one forward pass: the prompts
    padded on the right and masked, so each real token sees only its own prompt's tokens before it
    at its own positions; the language-model head is applied at each prompt's last token only."""
    torch, model = reference_model
    n = max(len(ids) for ids in batch)
    padded = torch.zeros((len(batch), n), dtype=torch.long)
    mask = torch.zeros((len(batch), n), dtype=torch.long)
    for row, ids in enumerate(batch):
        padded[row, :len(ids)] = torch.tensor(ids)
        mask[row, :len(ids)] = 1
    with torch.no_grad():
        hidden = model.model(input_ids=padded, attention_mask=mask).last_hidden_state  # [B, n, d]
        last = hidden[torch.arange(len(batch)), torch.tensor([len(ids) - 1 for ids in batch])]  # [B, d]
        logits = model.lm_head(last).double()
    return torch.softmax(logits, -1).numpy()


@pytest.mark.reference
def test_every_next_token_probability_is_within_1e_4_of_transformers_on_120_prompts(smollm2, transformers_model):
    worst, where = 0.0, ""
    texts = prompts()
    batch = [list(bpe.encode(text, smollm2.tokenizer).ids) for text in texts]
    theirs = transformers_batch_probabilities(transformers_model, batch)
    for row, (text, ids) in enumerate(zip(texts, batch)):
        ours = llama.probabilities(llama.next_token_logits(smollm2, ids)[0])
        assert ours.shape == theirs[row].shape == (49_152,)
        gap = float(np.abs(ours - theirs[row]).max())
        if gap > worst:
            worst, where = gap, text
    print(f"largest difference of any of 49,152 probabilities over {len(texts)} prompts: {worst:.2e} ({where!r})")
    assert worst < 1e-4, (worst, where)


@pytest.mark.reference
def test_the_batched_reference_is_the_one_prompt_reference(smollm2, transformers_model):
    """Padding and masking change no prompt's distribution: the batch above stands for 120 runs."""
    texts = ["The capital of France is", "Hi", "<|im_start|>user\nWhat is 7 times 8?<|im_end|>\n"]
    batch = [list(bpe.encode(text, smollm2.tokenizer).ids) for text in texts]
    together = transformers_batch_probabilities(transformers_model, batch)
    for row, ids in enumerate(batch):
        np.testing.assert_allclose(together[row], transformers_probabilities(transformers_model, ids), rtol=0, atol=1e-6)


@pytest.mark.reference
@pytest.mark.parametrize(("prompt", "token"), [("The capital of France is", " Paris"),
                                               ("The quick brown fox jumps over the lazy", " dog")])
def test_the_anchors_are_the_top_token_with_transformers_probability(smollm2, transformers_model, prompt, token):
    ids = bpe.encode(prompt, smollm2.tokenizer).ids
    target = smollm2.tokenizer.vocab[token.replace(" ", "Ġ")]
    ours = llama.probabilities(llama.next_token_logits(smollm2, ids)[0])
    theirs = transformers_probabilities(transformers_model, ids)
    print(f"{prompt!r} -> {token!r}: NumPy {ours[target]:.6f}, transformers {theirs[target]:.6f}")
    assert int(np.argmax(ours)) == int(np.argmax(theirs)) == target
    assert abs(ours[target] - theirs[target]) < 1e-5


@pytest.mark.reference
def test_the_other_rope_pairing_keeps_dog_on_top_but_misses_its_probability(smollm2, transformers_model, monkeypatch):
    """What the RoPE comment claims, and why parity compares probabilities, not the top token."""
    def rotate_half(x, cos, sin):  # Hugging Face's pairing: dimension i with i + hd/2
        first, second = np.split(x, 2, axis=-1)
        return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)

    ids = bpe.encode("The quick brown fox jumps over the lazy", smollm2.tokenizer).ids
    dog = smollm2.tokenizer.vocab["Ġdog"]
    theirs = transformers_probabilities(transformers_model, ids)[dog]
    monkeypatch.setattr(llama, "apply_rope", rotate_half)
    wrong = llama.probabilities(llama.next_token_logits(smollm2, ids)[0])
    print(f"p(' dog'): transformers {theirs:.4f}; NumPy with the other pairing {wrong[dog]:.4f}")
    assert int(np.argmax(wrong)) == dog and abs(wrong[dog] - theirs) > 0.3


@pytest.mark.reference
def test_the_gguf_stores_q_and_k_with_adjacent_pairs_of_transformers_rotate_half_rows(smollm2, transformers_model):
    """llama.cpp's converter interleaved each head's two halves; transformers' loader undid it."""
    _, model = transformers_model
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    layer, c = smollm2.weights.layers[7], smollm2.config
    q, k, v = np.split(layer.w_qkv, [c.n_heads * c.head_dim, (c.n_heads + c.n_kv_heads) * c.head_dim])

    def interleaved(rows, n_heads):  # HF's [h, (half, i)] -> GGUF's [h, (i, half)]
        return rows.reshape(n_heads, 2, c.head_dim // 2, -1).swapaxes(1, 2).reshape(rows.shape)

    np.testing.assert_array_equal(q, interleaved(state["model.layers.7.self_attn.q_proj.weight"], c.n_heads))
    np.testing.assert_array_equal(k, interleaved(state["model.layers.7.self_attn.k_proj.weight"], c.n_kv_heads))
    np.testing.assert_array_equal(v, state["model.layers.7.self_attn.v_proj.weight"])
    np.testing.assert_array_equal(smollm2.weights.embedding, state["model.embed_tokens.weight"])
    assert not np.array_equal(q, state["model.layers.7.self_attn.q_proj.weight"])
