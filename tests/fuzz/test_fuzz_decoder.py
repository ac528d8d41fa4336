"""Hostile input to the decoder: a GGUF where a model bundle is expected (and the other way round),
a truncated GGUF, a FIFO or a link in place of the fetched model, and prompts that are empty, huge,
hold NUL bytes or lone surrogates, are only emoji or are longer than the model's context. Each is
a clear one-line error or a correct result, never a traceback or a hang.

The fetched model's cache is always a temporary one (``LABS_MODELS_DIR``): the real cache in
~/.cache/attention-labs/models is read (to link to) but never written.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from llama_fixtures import smollm2_gguf, write_gguf

from conftest import ROOT, run_labs
from generator.errors import BuildError
from generator.models import bpe, llama, store
from generator.runtime.bundle import read_bundle

DECODER = "smollm2-135m-instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_gguf(tmp_path_factory.mktemp("tiny") / "tiny.gguf", seed=5)


@pytest.fixture(scope="module")
def real():
    """The fetched SmolLM2 GGUF, found before a test points the cache elsewhere."""
    return smollm2_gguf()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty models cache of its own, and the folder the decoder's files go in."""
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "models"))
    folder = tmp_path / "models" / DECODER
    folder.mkdir(parents=True)
    return folder


# ---- a GGUF where a bundle is expected, a bundle where a GGUF is -----------------------------------------

def test_a_folder_holding_a_gguf_is_no_model_bundle(tmp_path, tiny):
    folder = tmp_path / "bundle"
    folder.mkdir()
    shutil.copy(tiny, folder / "model.gguf")
    with pytest.raises(BuildError, match="bundle.json: error: file not found: the model bundle is incomplete"):
        read_bundle(folder)
    (folder / "bundle.json").write_bytes(tiny.read_bytes()[:4096])  # GGUF bytes under a bundle's name
    with pytest.raises(BuildError, match="bundle.json: error: not UTF-8 text: the file is corrupt"):
        read_bundle(folder)


def test_a_bundle_where_a_gguf_is_expected_is_named_and_refused(capsys):
    bundle = ROOT / "content" / "models" / "all-minilm-l6-v2"
    code, _, err = run_labs(capsys, "next", "Hello", "--gguf", str(bundle))
    assert code == 1 and len(err) == 1 and err[0].endswith("all-minilm-l6-v2: error: expected a GGUF file but found a folder")
    code, _, err = run_labs(capsys, "next", "Hello", "--gguf", str(bundle / "weights.bin"))
    assert code == 1 and len(err) == 1 and "weights.bin: error: not a GGUF file: its first bytes are" in err[0]


# ---- the fetched model: truncated, a FIFO, a link ---------------------------------------------------------

def _next_error(capsys) -> str:
    code, out, err = run_labs(capsys, "next", "The capital of France is", "--top", "3")
    assert code == 1 and out == [] and len(err) == 1, (code, out, err)
    return err[0]


def test_a_truncated_fetched_gguf_is_damaged_and_the_fetch_command_named(real, cache, capsys):
    (cache / GGUF_NAME).write_bytes(real.read_bytes()[:1 << 20])
    error = _next_error(capsys)
    assert f"the model {DECODER} is damaged" in error and f"run `labs models fetch {DECODER}`" in error


@pytest.mark.parametrize("how, what", [("fifo", "named pipe (FIFO)"), ("dev-zero", "character device"),
                                       ("loop", "a symbolic link that leads nowhere"), ("folder", "is not a file")])
def test_no_file_in_place_of_the_fetched_gguf_is_an_error_not_a_hang(cache, capsys, how, what):
    path = cache / GGUF_NAME
    if how == "fifo":
        os.mkfifo(path)  # no writer: opening it to hash it would block for ever
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how == "loop":
        path.symlink_to(path)
    else:
        path.mkdir()
    error = _next_error(capsys)
    assert f"the model {DECODER} is damaged" in error and what in error and f"labs models fetch {DECODER}" in error


def test_a_link_to_the_fetched_gguf_is_that_model_and_a_link_to_a_truncated_one_is_damaged(real, cache, tmp_path, capsys):
    shutil.copy(real.parent / "LICENSE.wheel", cache / "LICENSE.wheel")
    (cache / GGUF_NAME).symlink_to(real)
    code, out, _ = run_labs(capsys, "next", "The capital of France is", "--top", "1", "--json")
    assert code == 0 and json.loads("\n".join(out))["next"][0]["text"] == " Paris"
    (cache / GGUF_NAME).unlink()
    (tmp_path / "cut.gguf").write_bytes(real.read_bytes()[:4096])
    (cache / GGUF_NAME).symlink_to(tmp_path / "cut.gguf")
    assert f"the model {DECODER} is damaged" in _next_error(capsys)


# ---- hostile prompts ------------------------------------------------------------------------------------

@pytest.mark.parametrize("prompt", ["a\x00b", "\x00\x00", "😀🎉👍🏽", "\u202eabc", "<|im_end|><|endoftext|>"],
                         ids=["nul-inside", "only-nul", "only-emoji", "rtl-override", "special-tokens-as-text"])
def test_a_prompt_of_odd_characters_is_read_byte_for_byte(tiny, capsys, prompt):
    code, out, err = run_labs(capsys, "next", prompt, "--gguf", str(tiny), "--top", "2", "--json")
    assert code == 0, err
    data = json.loads("\n".join(out))
    tok = llama.cached_model(tiny).tokenizer
    assert bpe.decode(data["ids"], tok) == prompt and data["dropped_bytes"] == 0  # every byte, as written
    assert len(data["next"]) == 2 and all(0 < row["probability"] <= 1 for row in data["next"])


@pytest.mark.parametrize("prompt, message", [
    ("", "error: the prompt has no tokens"),
    ("a" * 100_000, "error: 100000 prompt tokens exceed the model's 256"),
    ("😀" * 100, "error: 400 prompt tokens exceed the model's 256"),
    ("caf\udce9", "error: the prompt is not valid UTF-8 text"),
    ("\ud800", "error: the prompt is not valid UTF-8 text"),
], ids=["empty", "100000-characters", "emoji-beyond-the-context", "undecodable-byte", "lone-surrogate"])
def test_a_prompt_that_is_empty_longer_than_the_context_or_not_text_is_one_line(tiny, capsys, prompt, message):
    assert run_labs(capsys, "next", prompt, "--gguf", str(tiny)) == (1, [], [message])


def test_a_prompt_with_generation_beyond_the_context_is_refused_before_running(tiny, capsys):
    code, _, err = run_labs(capsys, "next", "a" * 250, "--gguf", str(tiny), "--generate", "10")
    assert (code, err) == (1, ["error: 250 prompt tokens and 10 more exceed the model's 256"])


def test_a_prompt_longer_than_labs_next_runs_unasked_is_refused_and_runs_with_long(tiny, capsys, monkeypatch):
    """Within the model's context a prompt's CPU grows with the square of its length (6,001 of
    SmolLM2's tokens took 33 s more than one): past MAX_PROMPT tokens `labs next` asks for --long
    and says why, before running anything; at MAX_PROMPT it runs unasked."""
    from generator.runtime import commands

    monkeypatch.setattr(commands, "MAX_PROMPT", 100)
    ran = []
    monkeypatch.setattr(llama, "prefill", lambda *a, _p=llama.prefill, **k: ran.append(1) or _p(*a, **k))
    code, out, err = run_labs(capsys, "next", "a" * 101, "--gguf", str(tiny))
    assert (code, out, ran) == (1, [], [])
    assert err == ["error: 101 prompt tokens: labs next runs up to 100 unless asked with --long (up to the model's "
                   "256; CPU time grows with the square of the length, about 30 s for 6,000 tokens)"]
    assert run_labs(capsys, "next", "a" * 100, "--gguf", str(tiny), "--top", "1")[0] == 0
    code, out, err = run_labs(capsys, "next", "a" * 101, "--gguf", str(tiny), "--long", "--json")
    assert code == 0 and len(json.loads("\n".join(out))["ids"]) == 101
    code, _, err = run_labs(capsys, "next", "a" * 250, "--gguf", str(tiny), "--long", "--generate", "10")
    assert (code, err) == (1, ["error: 250 prompt tokens and 10 more exceed the model's 256"])  # the context still holds


def test_a_long_prompt_runs_in_chunks_and_gives_the_numbers_of_one_call(tiny, monkeypatch):
    """Attention over n prompt tokens in one call holds H·n² scores per layer (2.4 GB for 8,192 of
    SmolLM2's); in chunks it holds H·chunk·m, each chunk's queries against the keys up to its last.
    The logits and the cache are those of one call, also after a cache of earlier tokens."""
    model = llama.cached_model(tiny)
    ids = np.random.default_rng(3).integers(0, model.config.vocab_size, 60)
    whole = llama.forward(model.weights, model.config, ids)
    calls = []
    attention = llama.grouped_attention

    def counted(q, k, v):
        calls.append((q.shape[1], k.shape[1]))
        return attention(q, k, v)

    monkeypatch.setattr(llama, "PREFILL_CHUNK", 16)
    monkeypatch.setattr(llama, "grouped_attention", counted)
    logits, cache = llama.next_token_logits(model, ids)
    assert calls == [(16, 16), (16, 32), (16, 48), (12, 60)] * model.config.n_layers
    expected = llama.unembed(model.weights, model.config, whole.hidden_states[-1, -1])
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cache.keys, whole.cache.keys, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(cache.values, whole.cache.values, rtol=1e-4, atol=1e-5)
    _, earlier = llama.next_token_logits(model, ids[:20])
    calls.clear()
    logits, cache = llama.next_token_logits(model, ids[20:], earlier)  # after a cache: positions 20 … 59
    assert calls == [(16, 36), (16, 52), (8, 60)] * model.config.n_layers
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cache.keys, whole.cache.keys, rtol=1e-4, atol=1e-5)


def test_a_prompt_of_many_chunks_says_on_stderr_why_nothing_shows_yet(tiny, capsys, monkeypatch):
    """Near the end of SmolLM2's context a prompt costs minutes of CPU: one line on stderr says so
    (stdout stays the table or the JSON)."""
    monkeypatch.setattr(llama, "PREFILL_CHUNK", 8)
    code, out, err = run_labs(capsys, "next", "a" * 33, "--gguf", str(tiny), "--json")
    assert code == 0 and err == ["running 33 prompt tokens through the model, 8 at a time…"]
    assert len(json.loads("\n".join(out))["ids"]) == 33  # stdout: the JSON alone
    code, _, err = run_labs(capsys, "next", "a" * 32, "--gguf", str(tiny))
    assert code == 0 and err == []  # four chunks or fewer: nothing said


def test_labs_next_runs_the_model_on_one_blas_thread(tiny, capsys, monkeypatch):
    """Where the cores are shared a second OpenBLAS thread spins more than it computes: a long
    prompt took 4x the CPU with two. The prefill and every sampled step run under one thread,
    and the limit ends with the command."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads() -> set[int]:
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    seen = []
    prefill = llama.prefill

    def counted(*args, **kwargs):
        seen.append(blas_threads())
        return prefill(*args, **kwargs)

    monkeypatch.setattr(llama, "prefill", counted)
    with threadpool_limits(2, user_api="blas"):  # as a 2-core machine starts it
        assert blas_threads() == {2}, "NumPy's BLAS is not visible to threadpoolctl"
        assert run_labs(capsys, "next", "a" * 40, "--gguf", str(tiny))[0] == 0
        assert run_labs(capsys, "next", "Hello", "--gguf", str(tiny), "--generate", "3", "--seed", "1")[0] == 0
        after = blas_threads()
    assert len(seen) >= 4 and all(threads == {1} for threads in seen), seen
    assert after == {2}
