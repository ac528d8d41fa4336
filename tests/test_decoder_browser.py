"""The decoder in the page, in Chromium: static/decoder.js against generator/models/llama.py,
static/bpe.js against generator/models/bpe.py, and the loader's behaviour with a decoder.

A harness page (index.html loading only runtime.<hash>.js) sits in a temporary folder beside the
page files of SmolLM2-135M-Instruct (generator/runtime/decoder.py, 17 shards) and of a tiny random
Llama GGUF cut into many small shards, with copies of it that lack a shard, carry a damaged one, or
claim more memory than there is. It is served with the site's CSP plus ``worker-src 'self' blob:``
and with the CSP alone (the Worker is refused: the main-thread path), and opened from file://.

Every probability is compared in full: all 49,152 of them, never only the top token (a wrong
RoPE pairing keeps " dog" on top at p = 0.32 instead of 0.89). The page computes while Python
computes its references.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from llama_fixtures import smollm2_gguf, write_gguf
from test_bpe import generated_strings
from test_llama import prompts
from test_runtime_browser import CANCEL, CSP, CSP_WORKERS, NOT_LOADED, Page, _server, floats

from generator.models import decoding
from generator.models import bpe, llama
from generator.runtime import decoder
from generator.runtime.pagefiles import PageFiles, write_page_files

pytestmark = pytest.mark.browser

BATCH = 10  # prompts per page.evaluate: 49,152 probabilities are 262 KB of base64 each


# ---- prompts and strings ---------------------------------------------------------------------------

# ---- the harness ------------------------------------------------------------------------------------------

@dataclass
class Harness:
    folder: Path
    origins: dict[str, str]  # "workers" and "csp" -> http origin
    smol: PageFiles
    tiny: PageFiles
    tiny_path: Path

    def url(self, where: str) -> str:
        return (self.folder / "index.html").as_uri() if where == "file" else self.origins[where] + "/index.html"


def _damaged_copies(folder: Path, tiny: PageFiles) -> None:
    """Copies of tiny/: without its second weight shard (tiny-missing), with that shard's bytes
    changed (tiny-checksum) or its script cut in half (tiny-cut), and with a manifest that asks
    for more memory than any device has (tiny-huge)."""
    shards = [s["src"] for s in tiny.manifest_data["shards"]]
    for variant in ("tiny-missing", "tiny-checksum", "tiny-cut", "tiny-huge"):
        shutil.copytree(folder / "tiny", folder / variant)
    (folder / "tiny-missing" / shards[1]).unlink()
    script = tiny.files[shards[1]].decode("ascii")
    at = script.index('="') + 2 + 40
    (folder / "tiny-checksum" / shards[1]).write_text(script[:at] + ("A" if script[at] != "A" else "B") + script[at + 1:], encoding="ascii")
    (folder / "tiny-cut" / shards[1]).write_text(script[: len(script) // 2], encoding="ascii")
    manifest = json.loads(json.dumps(tiny.manifest_data))
    manifest["spec"]["bytes"] = 2 ** 50
    text = tiny.files[tiny.manifest].decode("ascii")
    head = text[:text.index("]=") + 2]
    (folder / "tiny-huge" / tiny.manifest).write_text(head + json.dumps(manifest, separators=(",", ":")) + ";})(self.Labs=self.Labs||{});\n", encoding="ascii")


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Harness:
    folder = tmp_path_factory.mktemp("decoder-harness")
    smol = decoder.page_files(decoder.read_decoder(smollm2_gguf()))
    write_page_files(smol, folder / "smol")
    tiny_path = write_gguf(tmp_path_factory.mktemp("tiny-gguf") / "tiny.gguf", seed=5)
    tiny = decoder.page_files(decoder.read_decoder(tiny_path), shard_bytes=3_000)
    write_page_files(tiny, folder / "tiny")
    assert tiny.code == smol.code
    _damaged_copies(folder, tiny)
    (folder / "index.html").write_text(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>decoder harness</title>'
        f'<script src="smol/{smol.code}"></script></head><body></body></html>\n', encoding="utf-8")
    (folder / "favicon.ico").write_bytes(b"")
    servers = {"workers": _server(folder, CSP_WORKERS), "csp": _server(folder, CSP)}
    yield Harness(folder, {k: f"http://127.0.0.1:{s.server_address[1]}" for k, s in servers.items()}, smol, tiny, tiny_path)
    for server in servers.values():
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def smollm2() -> llama.LlamaModel:
    return llama.cached_model(smollm2_gguf())


def numpy_probabilities(model: llama.LlamaModel, ids) -> np.ndarray:  # [n] -> [V] float64
    return llama.probabilities(llama.next_token_logits(model, ids)[0])


B64 = "const b64 = a => new Uint8Array(a.buffer, a.byteOffset, a.byteLength).toBase64();"


# ---- parity: the page's next-token probabilities against NumPy -----------------------------------------------

START = B64 + """
async ([src, prompts]) => {
  const m = await Labs.runtime.load({manifestSrc: src});
  let chain = Promise.resolve();
  window.runs = prompts.map(ids => (chain = chain.then(async () => {
    await m.reset();
    const r = await m.prefill(ids);
    return {reused: r.reused, length: r.length, p: b64(await m.next())};
  })));
  window.runs.forEach(p => p.catch(() => {}));
  return m.mode;
}"""
TAKE = "([a, b]) => Promise.all(window.runs.slice(a, b))"


@dataclass
class Parity:
    prompts: int
    tokens: int
    worst: float  # the largest |JS - NumPy| over every probability of every prompt
    where: str
    same_top: int


@pytest.fixture(scope="module")
def parity(browser, harness, smollm2) -> Parity:
    texts = prompts()  # test_llama's, where NumPy meets transformers
    ids = [list(bpe.encode(text, smollm2.tokenizer).ids) for text in texts]
    assert len(ids) >= 100
    page = Page(browser, harness.url("workers"))
    assert page.evaluate(START, [f"smol/{harness.smol.manifest}", ids]) == "worker"
    worst, where, same_top = 0.0, "", 0
    for start in range(0, len(ids), BATCH):
        expected = [numpy_probabilities(smollm2, prompt) for prompt in ids[start:start + BATCH]]
        got = page.evaluate(TAKE, [start, start + BATCH])
        for text, prompt, theirs, ours in zip(texts[start:], ids[start:], expected, got):
            assert ours["reused"] == 0 and ours["length"] == len(prompt)
            p = floats(ours["p"])
            gap = float(np.abs(p - theirs).max())
            if gap > worst:
                worst, where = gap, text
            same_top += int(np.argmax(p) == np.argmax(theirs))
    page.close()
    figures = Parity(len(ids), sum(map(len, ids)), worst, where, same_top)
    print(f"\n{figures.prompts} prompts ({figures.tokens} tokens), every one of 49,152 probabilities, page (Worker) "
          f"vs NumPy: largest difference {worst:.2e} ({where!r}); same top token {same_top}/{len(ids)}")
    return figures


def test_the_pages_next_token_probabilities_are_numpys_within_1e_4_on_120_prompts(parity):
    assert parity.prompts >= 100
    assert parity.worst <= 1e-4, (parity.worst, parity.where)
    assert parity.same_top == parity.prompts


CACHE = B64 + """
async ([src, prompts]) => {
  const m = await Labs.runtime.load({manifestSrc: src});
  const out = [];
  for (const ids of prompts) {
    await m.reset();
    await m.prefill(ids);
    const whole = b64(await m.next());
    await m.reset();
    await m.prefill(ids.slice(0, 1));
    for (const id of ids.slice(1)) await m.step(id);
    const stepped = b64(await m.next());
    const reused = [];
    for (let k = 1; k <= ids.length; k++) reused.push((await m.prefill(ids.slice(0, k))).reused);  // typing, one token more each time
    const typed = b64(await m.next());
    out.push({whole, stepped, typed, reused, cache: m.cache()});
  }
  return out;
}"""


def test_decoding_token_by_token_and_a_growing_prompt_reuse_the_cache_and_match_one_pass(browser, harness, smollm2):
    cases = [list(bpe.encode(text, smollm2.tokenizer).ids) for text in prompts()[:12]]
    page = Page(browser, harness.url("workers"))
    got = page.evaluate(CACHE, [f"smol/{harness.smol.manifest}", cases])
    page.close()
    worst_cache = worst_numpy = 0.0
    per_position = 30 * 2 * 3 * 64 * 4  # layers · (keys, values) · key/value heads · head width · float32
    for ids, result in zip(cases, got):
        whole, stepped, typed = floats(result["whole"]), floats(result["stepped"]), floats(result["typed"])
        worst_cache = max(worst_cache, float(np.abs(stepped - whole).max()), float(np.abs(typed - whole).max()))
        worst_numpy = max(worst_numpy, float(np.abs(stepped - numpy_probabilities(smollm2, ids)).max()))
        # the k-th prefill keeps the k-1 tokens before (the first one keeps nothing: the sequence was
        # the whole prompt, which it cut back to its first token, run again for its logits)
        assert result["reused"] == [0, *range(1, len(ids))]
        assert result["cache"]["positions"] == len(ids) and result["cache"]["bytes"] == len(ids) * per_position
    print(f"\ncache against one pass: {worst_cache:.2e}; token by token against NumPy: {worst_numpy:.2e}")
    assert worst_cache <= 1e-5 and worst_numpy <= 1e-4


REPLACE = B64 + """
async ([src, first, second]) => {
  const m = await Labs.runtime.load({manifestSrc: src});
  await m.reset();
  const a = m.prefill(first).then(() => "done", e => e.name + ": " + e.message);
  await new Promise(r => setTimeout(r, 50));  // the first prompt's first 8 tokens are running
  const b = m.prefill(second);
  const [outcome, r] = await Promise.all([a, b]);
  return {outcome, reused: r.reused, ids: m.ids(), p: b64(await m.next())};
}"""


def test_a_newer_prompt_replaces_one_still_running_and_keeps_the_common_prefix(browser, harness, smollm2):
    first = list(bpe.encode("The old lighthouse keeper watched the storm roll in across the bay, counting the seconds "
                            "between each flash of lightning and the thunder that followed it", smollm2.tokenizer).ids)
    second = first[:5] + list(bpe.encode(" cat sat on the", smollm2.tokenizer).ids)
    page = Page(browser, harness.url("workers"))
    got = page.evaluate(REPLACE, [f"smol/{harness.smol.manifest}", first, second])
    page.close()
    assert got["outcome"] == "AbortError: A newer prompt replaced this one."
    assert got["ids"] == second and got["reused"] == 5  # the replaced prompt had run its first 8 tokens
    assert np.abs(floats(got["p"]) - numpy_probabilities(smollm2, second)).max() <= 1e-4


LENS = B64 + """
async ([src, ids, position]) => {
  const m = await Labs.runtime.load({manifestSrc: src});
  await m.reset();
  await m.prefill(ids);
  const last = await m.lens();
  const earlier = await m.lens(position);
  return {next: b64(await m.next()), layers: last.layers, position: last.position, last: b64(last.probabilities),
          earlier: b64(earlier.probabilities)};
}"""


def test_the_logit_lens_reads_every_layers_residual_stream_as_numpy_does(browser, harness, smollm2):
    ids = list(bpe.encode("The capital of France is", smollm2.tokenizer).ids)
    page = Page(browser, harness.url("workers"))
    got = page.evaluate(LENS, [f"smol/{harness.smol.manifest}", ids, 2])
    page.close()
    states = llama.forward(smollm2.weights, smollm2.config, ids).hidden_states  # [L+1, n, d]
    expected = llama.probabilities(llama.logit_lens(smollm2.weights, smollm2.config, states))  # [L+1, n, V]
    assert got["layers"] == 31 and got["position"] == len(ids) - 1
    last, earlier = floats(got["last"]).reshape(31, -1), floats(got["earlier"]).reshape(31, -1)
    assert np.abs(last - expected[:, -1]).max() <= 1e-4
    assert np.abs(earlier - expected[:, 2]).max() <= 1e-4
    assert np.abs(last[-1] - floats(got["next"])).max() <= 1e-5  # the last layer's reading is the model's prediction
    paris = smollm2.tokenizer.vocab["ĠParis"]
    assert np.argmax(last[-1]) == paris and last[0, paris] < 0.01  # the embedding alone does not know it


ATTENTION = B64 + """
async ([src, ids, more, other, layers]) => {
  const m = await Labs.runtime.load({manifestSrc: src});
  await m.reset();
  await m.prefill(ids);
  const read = async () => { const out = []; for (const l of layers) { const a = await m.attention(l); out.push([a.n, a.heads, b64(a.weights)]); } return out; };
  const first = await read();          // replayed from the cache
  await m.step(more);
  const stepped = await read();        // recorded as the token ran
  await m.prefill(other);              // a prompt sharing a prefix: the record is cut back with the cache
  const changed = await read();
  return {first, stepped, changed};
}"""


def test_attention_weights_on_request_are_numpys_after_steps_and_new_prompts(browser, harness, smollm2):
    ids = list(bpe.encode("The animal didn't cross the street because it was too tired", smollm2.tokenizer).ids)
    more = smollm2.tokenizer.vocab["."]
    other = ids[:4] + list(bpe.encode(" road at night", smollm2.tokenizer).ids)
    layers = [0, 14, 29]
    page = Page(browser, harness.url("workers"))
    got = page.evaluate(ATTENTION, [f"smol/{harness.smol.manifest}", ids, more, other, layers])
    page.close()
    for sequence, results in ((ids, got["first"]), (ids + [more], got["stepped"]), (other, got["changed"])):
        expected = llama.forward(smollm2.weights, smollm2.config, sequence, attentions=True).attentions  # [L, H, n, n]
        for layer, (n, heads, weights) in zip(layers, results):
            assert (n, heads) == (len(sequence), 9)
            assert np.abs(floats(weights).reshape(9, n, n) - expected[layer]).max() <= 1e-4


GENERATE = """async ([src, ids, options]) => {
  const m = await Labs.runtime.load({manifestSrc: src});
  const out = [];
  for (const o of options) {
    await m.prefill(ids);
    const tokens = [];
    const r = await m.generate(o, t => tokens.push([t.id, t.probability, t.share]));
    out.push({ids: r.ids, text: r.text, stopped: r.stopped, tokens});
  }
  return out;
}"""


def numpy_generation(model: llama.LlamaModel, ids: list[int], n: int, temperature: float, top_k: int, top_p: int,
                     seed: int) -> list[int]:
    """The tokens generator/models/sampling.py's rule picks, on NumPy's logits: greedy at temperature
    0, else whole parts of 2^21 (largest remainder), the sampling lab's top-k and top-p, and step i
    drawing with output i of mulberry32(seed)."""
    logits, cache = llama.next_token_logits(model, ids)
    out = []
    for i in range(n):
        if temperature == 0:
            token = int(np.argmax(logits))
        else:
            parts = decoding.cut(decoding.to_parts(decoding.softmax(logits, [temperature])[0], 2 ** 21), top_k, top_p)
            u = int(decoding.mulberry32(seed, i + 1)[i])
            token = int(np.searchsorted(np.cumsum(parts), (u * int(parts.sum())) >> 32, side="right"))
        out.append(token)
        if model.tokenizer.token_types[token] == 3:
            break
        logits, cache = llama.next_token_logits(model, [token], cache)
    return out


def test_generate_is_seeded_and_picks_what_the_python_rule_picks_on_numpys_logits(browser, harness, smollm2):
    ids = list(bpe.encode("<|im_start|>user\nWrite a short poem about the sea.<|im_end|>\n<|im_start|>assistant\n",
                          smollm2.tokenizer).ids)
    settings = [dict(n=12, temperature=0.8, topK=50, topP=95, seed=7), dict(n=12, temperature=0.8, topK=50, topP=95, seed=7),
                dict(n=12, temperature=1.3, topK=0, topP=100, seed=8), dict(n=12, temperature=0, seed=1)]
    page = Page(browser, harness.url("workers"))
    got = page.evaluate(GENERATE, [f"smol/{harness.smol.manifest}", ids, settings])
    page.close()
    assert got[0] == got[1]  # the same seed, the same text
    assert got[0]["ids"] != got[2]["ids"]
    for s, result in zip(settings, got):
        expected = numpy_generation(smollm2, ids, s["n"], s["temperature"], s.get("topK", 0), s.get("topP", 100), s["seed"])
        assert result["ids"] == expected, (s, result["text"], bpe.decode(expected, smollm2.tokenizer))
        assert result["text"] == bpe.decode(result["ids"], smollm2.tokenizer)
        assert result["stopped"] == ("length" if len(expected) == s["n"] else smollm2.tokenizer.tokens[expected[-1]])
        for _, probability, share in result["tokens"]:
            assert 0 < probability <= 1 and 0 < share <= 1
    assert all(share == 1 for _, _, share in got[3]["tokens"])  # greedy: nothing drawn


# ---- the tokenizer ----------------------------------------------------------------------------------------

TOKENIZE = """async ([src, texts]) => {
  const t = await Labs.runtime.tokenizer({manifestSrc: src});
  return texts.map(text => { const e = t.encode(text); return [e.ids, e.dropped, t.decode(e.ids)]; });
}"""


@pytest.mark.parametrize("where", ["file", "workers"])
def test_the_pages_tokenizer_gives_pythons_ids_on_1200_strings_and_loads_alone(browser, harness, smollm2, where):
    texts = generated_strings()  # test_bpe's, where bpe.py meets SmolLM2's trained tokenizer
    page = Page(browser, harness.url(where))
    requested: list[str] = []
    page.page.on("request", lambda r: requested.append(r.url.rsplit("/", 1)[-1]))
    got = page.evaluate(TOKENIZE, [f"smol/{harness.smol.manifest}", texts])
    page.close()
    assert [r for r in requested if r.startswith("model-")] == [harness.smol.manifest, harness.smol.tokenizer]
    mismatches = []
    for text, (ids, dropped, decoded) in zip(texts, got):
        expected = bpe.encode(text, smollm2.tokenizer)
        if (ids, dropped, decoded) != (list(expected.ids), expected.dropped, bpe.decode(expected.ids, smollm2.tokenizer)):
            mismatches.append(text)
    assert len(texts) >= 1_000 and not mismatches, mismatches[:5]


# ---- loading --------------------------------------------------------------------------------------------------

RUN_TINY = B64 + """
async ([src, prompts, options]) => {
  window.models = window.models || {};
  const key = src + JSON.stringify(options || {});
  const m = window.models[key] || (window.models[key] = await Labs.runtime.load({manifestSrc: src, ...(options || {})}));
  const out = [];
  for (const ids of prompts) { await m.prefill(ids); out.push(b64(await m.next())); }
  return {mode: m.mode, out};
}"""


def tiny_prompts(seed: int, count: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(3, 263) for _ in range(rng.randint(1, 30))] for _ in range(count)]


@pytest.mark.parametrize("where", ["csp", "workers", "file"])
def test_the_worker_and_the_main_thread_compute_the_same_numbers_as_numpy(browser, harness, where):
    """The CSP alone forbids a blob: Worker (Chromium logs the refusal): the loader falls back."""
    model = llama.load_model(harness.tiny_path)
    cases = tiny_prompts(4, 10)
    page = Page(browser, harness.url(where))
    got = page.evaluate(RUN_TINY, [f"tiny/{harness.tiny.manifest}", cases, None])
    forced = page.evaluate(RUN_TINY, [f"tiny/{harness.tiny.manifest}", cases, {"worker": False}])
    page.close(allowed=("violates the following Content Security Policy directive",) if where == "csp" else ())
    assert (got["mode"], forced["mode"]) == ("main" if where == "csp" else "worker", "main")
    for ids, a, b in zip(cases, got["out"], forced["out"]):
        assert a == b  # one engine: the same bytes on either thread
        assert np.abs(floats(a) - numpy_probabilities(model, ids)).max() <= 1e-4


def test_smollm2_runs_from_file_and_on_the_main_thread(browser, harness, smollm2):
    ids = list(bpe.encode("The quick brown fox jumps over the lazy", smollm2.tokenizer).ids)
    expected = numpy_probabilities(smollm2, ids)
    page = Page(browser, harness.url("file"))
    got = page.evaluate(RUN_TINY, [f"smol/{harness.smol.manifest}", [ids], None])
    main = page.evaluate(RUN_TINY, [f"smol/{harness.smol.manifest}", [ids], {"worker": False}])
    page.close()
    assert (got["mode"], main["mode"]) == ("worker", "main") and got["out"] == main["out"]
    p = floats(got["out"][0])
    assert np.abs(p - expected).max() <= 1e-4
    assert np.argmax(p) == smollm2.tokenizer.vocab["Ġdog"] and abs(p[np.argmax(p)] - 0.8943) < 1e-3


PROGRESS = """async (src) => {
  const steps = [];
  const described = await Labs.runtime.describe(src);
  const m = await Labs.runtime.load({manifestSrc: src, onProgress: (loaded, total) => steps.push([loaded, total])});
  await m.prefill([5, 6, 7]);
  await m.next();
  return {described, totalBytes: m.totalBytes, steps, left: Object.keys(Labs.runtimeData),
          scripts: [...document.scripts].filter(s => /model-/.test(s.src)).length};
}"""


@pytest.mark.parametrize("where", ["workers", "file"])
def test_the_download_size_comes_first_then_byte_progress_and_nothing_stays_registered(browser, harness, where):
    page = Page(browser, harness.url(where))
    got = page.evaluate(PROGRESS, f"tiny/{harness.tiny.manifest}")
    page.close()
    total = harness.tiny.load_bytes
    assert got["described"]["totalBytes"] == got["totalBytes"] == total
    assert got["described"]["architecture"] == "llama" and got["described"]["config"]["n_layers"] == 2
    assert got["described"]["licenseSrc"].endswith("/tiny/" + harness.tiny.license)
    steps = got["steps"]
    assert steps[0] == [0, total] and steps[-1] == [total, total]
    assert all(a[0] < b[0] and a[1] == b[1] == total for a, b in zip(steps, steps[1:]))
    assert len(steps) == 2 + len(harness.tiny.manifest_data["shards"])  # (0, total), the tokenizer, each shard
    assert got["left"] == [] and got["scripts"] == 0


@pytest.mark.parametrize("where", ["workers", "file"])
@pytest.mark.parametrize("after", [0, 1, 5])
def test_cancel_stops_loading_and_leaves_nothing_behind(browser, harness, where, after):
    page = Page(browser, harness.url(where))
    got = page.evaluate(CANCEL, [f"tiny/{harness.tiny.manifest}", after])
    assert got["error"]["name"] == "AbortError"
    assert got["left"] == [] and got["scripts"] == 0
    after_cancel = page.evaluate(RUN_TINY, [f"tiny/{harness.tiny.manifest}", tiny_prompts(1, 1), None])  # the page still works
    page.close()
    assert after_cancel["mode"] == "worker" and after_cancel["out"]


FAIL = """async (src) => {
  try { const m = await Labs.runtime.load({manifestSrc: src}); await m.prefill([5, 6]); return null; }
  catch (e) { await new Promise(r => setTimeout(r, 100)); return {message: e.message, left: Object.keys(Labs.runtimeData),
              scripts: [...document.scripts].filter(s => /model-/.test(s.src)).length}; }
}"""


@pytest.mark.parametrize("where", ["workers", "file"])
@pytest.mark.parametrize("variant, message, allowed", [
    ("tiny-missing", "The model file {shard} could not be loaded: it is missing or unreadable.", NOT_LOADED),
    ("tiny-checksum", "The model file {shard} is corrupt (its checksum does not match).", ()),
    ("tiny-cut", "The model file {shard} is corrupt (it did not register its data).", ("SyntaxError", "Invalid or unexpected token")),
    ("tiny-huge", "There is not enough memory to load the model (1125899907 MB).", ()),
])
def test_a_missing_or_corrupt_shard_or_too_little_memory_rejects_plainly_and_the_page_keeps_working(
        browser, harness, where, variant, message, allowed):
    shard = harness.tiny.manifest_data["shards"][1]["src"]
    page = Page(browser, harness.url(where))
    got = page.evaluate(FAIL, f"{variant}/{harness.tiny.manifest}")
    assert got == {"message": message.format(shard=shard), "left": [], "scripts": 0}
    after = page.evaluate(RUN_TINY, [f"tiny/{harness.tiny.manifest}", tiny_prompts(2, 1), None])
    page.close(allowed=allowed)
    assert after["mode"] == "worker" and after["out"]


def test_bad_calls_reject_with_plain_messages(browser, harness):
    page = Page(browser, harness.url("workers"))
    got = page.evaluate("""async (src) => {
      const m = await Labs.runtime.load({manifestSrc: src});
      const out = [];
      const attempt = async f => { try { await f(); out.push(null); } catch (e) { out.push(e.message); } };
      await attempt(() => m.next());
      await attempt(() => m.generate({n: 3}));
      await attempt(() => m.prefill([]));
      await attempt(() => m.prefill([5, 263]));
      await attempt(() => m.prefill(Array(257).fill(5)));
      await attempt(() => m.prefill([5, 6]));
      await attempt(() => m.step(-1));
      await attempt(() => m.lens(9));
      await attempt(() => m.attention(2));
      await attempt(() => m.generate({n: 2, topP: 0.9}));
      return out;
    }""", f"tiny/{harness.tiny.manifest}")
    page.close()
    assert got == ["There is no prompt yet: run one first.", "There is no prompt yet: run one first.",
                   "The model reads 1 to 256 tokens, not 0.", "Token id 263 is outside the model's vocabulary.",
                   "The model reads 1 to 256 tokens, not 257.", None, "Token id -1 is outside the model's vocabulary.",
                   "Position 9 is not in the sequence (0 to 1).", "Layer 2 is not one of 0 to 1.",
                   "top-p is a whole percentage from 1 to 100."]


def test_generate_stops_at_cancel_between_tokens_and_the_sequence_keeps_what_was_made(browser, harness):
    page = Page(browser, harness.url("workers"))
    got = page.evaluate("""async (src) => {
      const m = await Labs.runtime.load({manifestSrc: src});
      await m.prefill([5, 6, 7]);
      const controller = new AbortController(), seen = [];
      let error = null;
      try {
        await m.generate({n: 50, seed: 3, signal: controller.signal}, t => { seen.push(t.id); if (t.index === 2) controller.abort(); });
      } catch (e) { error = e.name; }
      return {error, seen, ids: m.ids(), cache: m.cache().positions};
    }""", f"tiny/{harness.tiny.manifest}")
    page.close()
    assert got["error"] == "AbortError" and len(got["seen"]) == 3
    assert got["ids"] == [5, 6, 7, *got["seen"]] and got["cache"] == 6
