"""The in-page model runtime in Chromium: the JavaScript forward pass against NumPy and against
transformers, and the loader's behaviour (file:// and http under the site's CSP, Worker and
main thread, progress, cancel, a missing or corrupt file).

A harness page (index.html loading only runtime.<hash>.js) sits in a temporary folder beside the
page files of two bundles: the committed all-MiniLM-L6-v2 (generator/runtime/pagefiles.py,
default chunking) and a tiny random model cut into many small chunks and shards, with copies of
it that lack a file or carry a damaged one. The folder is served by two local servers, one with
the site's CSP plus ``worker-src 'self' blob:`` and one with the CSP alone (so the Worker is
refused and the loader must fall back to the main thread), and opened from file://.

Token ids are the input (the JavaScript tokenizer is tested on its own, in
test_runtime_tokenizer_parity.py); ids come from ``generator.models.wordpiece`` over
generated sentences. One test goes end to end, text through the page's tokenizer and model.
"""

from __future__ import annotations

import base64
import functools
import http.server
import random
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conftest import minilm_dir, reference

from generator.models import bert
from generator.models.bert import BertConfig, write_random_checkpoint
from generator.models.wordpiece import encode
from generator.runtime.accuracy import generated_sentences as sentences
from generator.runtime.bundle import Bundle, export_bundle, read_bundle, reference_model
from generator.runtime.pagefiles import PageFiles, page_files, write_page_files
from generator.serve.statichost import StaticHostHandler

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "content" / "models" / "all-minilm-l6-v2"
CSP = "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
CSP_WORKERS = CSP + "; worker-src 'self' blob:"
N_SENTENCES = 300
BATCH = 15  # sentences per page.evaluate: a few MB of base64 each way
TINY = BertConfig(vocab_size=80, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=128, max_position_embeddings=48, type_vocab_size=2)
TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "##s"]


# ---- the harness: page files, servers, pages -----------------------------------------------------

@dataclass
class Harness:
    folder: Path
    origins: dict[str, str]  # "workers" (CSP + worker-src blob:) and "csp" (the CSP alone) -> http origin
    minilm: PageFiles
    tiny: PageFiles
    tiny_bundle: Bundle

    def url(self, where: str) -> str:
        return (self.folder / "index.html").as_uri() if where == "file" else self.origins[where] + "/index.html"


def _server(folder: Path, csp: str) -> http.server.ThreadingHTTPServer:
    class Handler(StaticHostHandler):
        def end_headers(self):
            self.send_header("Content-Security-Policy", csp)
            super().end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _damaged_copies(folder: Path, tiny: PageFiles) -> None:
    """Copies of tiny/ without the second layer chunk (tiny-missing), without the third shard
    (tiny-noshard), and with that chunk damaged: other bytes (tiny-checksum), fewer bytes
    (tiny-short), the script cut in half (tiny-cut)."""
    chunks = sorted(name for name in tiny.files if name.startswith("model-layers-"))
    shards = sorted(name for name in tiny.files if name.startswith("model-words-"))
    for variant in ("tiny-missing", "tiny-noshard", "tiny-checksum", "tiny-short", "tiny-cut"):
        shutil.copytree(folder / "tiny", folder / variant)
    (folder / "tiny-missing" / chunks[1]).unlink()
    (folder / "tiny-noshard" / shards[2]).unlink()
    script = tiny.files[chunks[1]].decode("ascii")
    start = script.index('="') + 2
    end = script.index('"', start)
    text = script[start:end]
    flipped = text[:40] + ("A" if text[40] != "A" else "B") + text[41:]  # still base64, other bytes
    (folder / "tiny-checksum" / chunks[1]).write_text(script[:start] + flipped + script[end:], encoding="ascii")
    shorter = base64.b64encode(base64.b64decode(text)[:-6]).decode("ascii")
    (folder / "tiny-short" / chunks[1]).write_text(script[:start] + shorter + script[end:], encoding="ascii")
    (folder / "tiny-cut" / chunks[1]).write_text(script[: len(script) // 2], encoding="ascii")


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Harness:
    folder = tmp_path_factory.mktemp("runtime-harness")
    minilm = page_files(read_bundle(COMMITTED))
    write_page_files(minilm, folder / "minilm")
    checkpoint = tmp_path_factory.mktemp("tiny-bert")
    write_random_checkpoint(checkpoint, TINY_VOCAB, TINY, seed=11, scale=0.4)
    tiny_bundle = read_bundle(export_bundle(checkpoint, tmp_path_factory.mktemp("tiny-bundle")))
    tiny = page_files(tiny_bundle, chunk_bytes=16_384, shard_rows=8)
    write_page_files(tiny, folder / "tiny")
    assert tiny.code == minilm.code
    _damaged_copies(folder, tiny)
    (folder / "index.html").write_text(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>runtime harness</title>'
        f'<script src="minilm/{minilm.code}"></script></head><body></body></html>\n', encoding="utf-8")
    (folder / "favicon.ico").write_bytes(b"")  # Chromium asks for one; a 404 would be a console error
    servers = {"workers": _server(folder, CSP_WORKERS), "csp": _server(folder, CSP)}
    yield Harness(folder, {k: f"http://127.0.0.1:{s.server_address[1]}" for k, s in servers.items()}, minilm, tiny, tiny_bundle)
    for server in servers.values():
        server.shutdown()
        server.server_close()


class Page:
    """A harness page that records console errors and page errors for the test to judge."""

    def __init__(self, browser, url: str):
        self.page = browser.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.goto(url)

    def evaluate(self, script: str, arg=None):
        return self.page.evaluate(script, arg)

    def close(self, allowed: tuple[str, ...] = ()) -> None:
        self.page.close()
        unexpected = [e for e in self.errors if not any(a in e for a in allowed)]
        assert not unexpected, unexpected


LOAD_AND_RUN = """async ([src, batch, options]) => {
  const key = "model:" + src + JSON.stringify(options || {});
  window.models = window.models || {};
  const m = window.models[key] || (window.models[key] = await Labs.runtime.load({manifestSrc: src, ...(options || {})}));
  const out = [];
  for (const ids of batch) {
    const r = await m.run(ids);
    out.push([new Uint8Array(r.attentions.buffer).toBase64(), new Uint8Array(r.hidden.buffer).toBase64(), r.n, r.layers, r.heads]);
  }
  return {mode: m.mode, out};
}"""


def floats(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.float32)


def run_in_page(page: Page, src: str, batch: list[list[int]], options: dict | None = None, d: int = 384):
    """(mode, [(attentions [L, H, n, n], hidden [n, d])]) for each id list of ``batch``."""
    got = page.evaluate(LOAD_AND_RUN, [src, batch, options])
    results = []
    for (attentions, hidden, n, layers, heads), ids in zip(got["out"], batch):
        assert n == len(ids)
        results.append((floats(attentions).reshape(layers, heads, n, n), floats(hidden).reshape(n, d)))
    return got["mode"], results


# ---- parity -----------------------------------------------------------------------------------------

START_RUNS = """async ([src, batch]) => {
  const m = await Labs.runtime.load({manifestSrc: src});
  let chain = Promise.resolve();
  const encode = r => [new Uint8Array(r.attentions.buffer).toBase64(), new Uint8Array(r.hidden.buffer).toBase64(), r.n, r.layers, r.heads];
  window.parityRuns = batch.map(ids => (chain = chain.then(() => m.run(ids))).then(encode));
  window.parityRuns.forEach(p => p.catch(() => {}));
  return m.mode;
}"""
TAKE_RUNS = "([a, b]) => Promise.all(window.parityRuns.slice(a, b))"


@dataclass
class Parity:
    sentences: int
    rows: int  # attention rows compared: (layer, head, query) triples
    js_numpy: float  # largest |JS - NumPy| over every attention weight, same int8 weights
    hidden_numpy: float  # the same over the final hidden states
    js_full: float  # largest |JS - transformers fp32| over every attention weight
    numpy_full: float  # largest |NumPy int8 - transformers fp32|
    same_top_js: float  # share of rows whose largest weight is on the same key as fp32's
    same_top_numpy: float


@pytest.fixture(scope="module")
def parity(browser, harness) -> Parity:
    """Every sentence through the page's model (in a Worker, over http under the CSP), NumPy on
    the same int8 weights, and transformers' float32 MiniLM. The page computes while Python
    computes its references: the whole list is started at once and collected in batches. The
    references run a batch at a time, padded with an attention mask (padding changes no real
    row: the masked keys get weight 0), which is several times faster than one by one."""
    torch = reference("torch")
    transformers = reference("transformers")
    model = reference_model(read_bundle(COMMITTED))
    texts = sentences(model.tokenizer.vocab, N_SENTENCES, seed=2201)
    ids = [list(encode(text, model.tokenizer).ids) for text in texts]
    words = [len(text.split()) for text in texts]
    assert min(words) == 3 and max(words) == 60 and len(ids) >= 300
    full = transformers.BertModel.from_pretrained(minilm_dir(), attn_implementation="eager").eval()

    ids.sort(key=len)  # batches of similar lengths: the references run padded, a batch at a time
    page = Page(browser, harness.url("workers"))
    assert page.evaluate(START_RUNS, [f"minilm/{harness.minilm.manifest}", ids]) == "worker"
    js_numpy = hidden_numpy = numpy_full = js_full = 0.0
    same_js = same_numpy = rows = 0
    for start in range(0, len(ids), BATCH):
        batch = ids[start:start + BATCH]
        padded = np.zeros((len(batch), len(batch[-1])), dtype=np.int64)
        for i, sentence_ids in enumerate(batch):
            padded[i, :len(sentence_ids)] = sentence_ids
        mask = padded != 0  # [PAD] is id 0 and appears nowhere else
        ours = bert.bert_forward(model.weights, model.config, padded, attention_mask=mask)
        with torch.no_grad():
            out = full(torch.tensor(padded), attention_mask=torch.tensor(mask, dtype=torch.long), output_attentions=True)
        theirs_all = torch.stack(out.attentions, dim=1).numpy()  # [B, L, H, n, n]
        got = page.evaluate(TAKE_RUNS, [start, start + len(batch)])
        for i, (attentions, hidden, n, layers, heads) in enumerate(got):
            assert n == len(batch[i])
            attentions = floats(attentions).reshape(layers, heads, n, n)
            hidden = floats(hidden).reshape(n, model.config.hidden_size)
            numpy_attentions, theirs = ours.attentions[i, :, :, :n, :n], theirs_all[i, :, :, :n, :n]
            js_numpy = max(js_numpy, float(np.abs(attentions - numpy_attentions).max()))
            hidden_numpy = max(hidden_numpy, float(np.abs(hidden - ours.last_hidden_state[i, :n]).max()))
            js_full = max(js_full, float(np.abs(attentions - theirs).max()))
            numpy_full = max(numpy_full, float(np.abs(numpy_attentions - theirs).max()))
            top = theirs.argmax(-1)
            same_js += int((attentions.argmax(-1) == top).sum())
            same_numpy += int((numpy_attentions.argmax(-1) == top).sum())
            rows += top.size
    page.close()
    figures = Parity(len(ids), rows, js_numpy, hidden_numpy, js_full, numpy_full, same_js / rows, same_numpy / rows)
    print(f"\n{figures.sentences} sentences, {rows} attention rows: JS vs NumPy (same int8 weights) max |Δ| "
          f"{js_numpy:.2e}, hidden {hidden_numpy:.2e}; vs transformers fp32: JS {100 * js_full:.2f} points, "
          f"NumPy {100 * numpy_full:.2f} points; same top key JS {100 * figures.same_top_js:.2f}%, "
          f"NumPy {100 * figures.same_top_numpy:.2f}%")
    return figures


def test_javascript_attention_equals_numpy_on_the_same_int8_weights(parity):
    assert parity.js_numpy <= 1e-4
    assert parity.hidden_numpy <= 1e-3


def test_the_int8_model_keeps_the_full_models_top_key_on_99_percent_of_rows(parity):
    assert parity.same_top_js >= 0.99 and parity.same_top_numpy >= 0.99


def test_the_int8_model_moves_no_weight_more_than_5_points_from_the_full_model(parity):
    """The page's target: on these 300 sentences, no attention weight of the page's model (nor of
    NumPy on the same weights) is more than 5 points from transformers' float32 MiniLM."""
    assert parity.js_full <= 0.05 and parity.numpy_full <= 0.05


def test_what_bundle_json_states_is_what_the_page_computes(parity):
    """bundle.json's figures (measured at export in float64 by our NumPy BERT) agree with the
    page's own numbers against transformers' float32 model on the same generated sentences."""
    stated = read_bundle(COMMITTED).meta["accuracy"]
    assert stated["sentences"]["seed"] == 2201 and stated["sentences"]["count"] == N_SENTENCES
    assert stated["attention"]["worst"] <= 5.0 and stated["attention"]["same_top_key"] >= 0.99
    assert abs(100 * parity.js_full - stated["attention"]["worst"]) <= 0.01
    assert abs(parity.same_top_js - stated["attention"]["same_top_key"]) <= 0.0005
    assert parity.rows == stated["attention"]["rows"]


# ---- loading ----------------------------------------------------------------------------------------

PROGRESS = """async ([src, ids]) => {
  const steps = [];
  const described = await Labs.runtime.describe(src);
  const m = await Labs.runtime.load({manifestSrc: src, ids, onProgress: (loaded, total) => steps.push([loaded, total])});
  const r = await m.run(ids);
  return {described: described.totalBytes, license: described.licenseSrc, totalBytes: m.totalBytes, mode: m.mode, steps,
          attentions: new Uint8Array(r.attentions.buffer).toBase64(), left: Object.keys(Labs.runtimeData),
          scripts: [...document.scripts].filter(s => /model-/.test(s.src)).length};
}"""


@pytest.mark.parametrize("where", ["workers", "file"])
def test_minilm_loads_with_progress_and_runs_in_a_worker_over_http_and_from_file(browser, harness, where):
    bundle = read_bundle(COMMITTED)
    model = reference_model(bundle)
    ids = list(encode("The animal didn't cross the street because it was too tired.", model.tokenizer).ids)
    page = Page(browser, harness.url(where))
    got = page.evaluate(PROGRESS, [f"minilm/{harness.minilm.manifest}", ids])
    page.close()
    manifest = harness.minilm.manifest_data
    first_shards = {i // manifest["spec"]["shard_rows"] for i in ids}
    total = harness.minilm.load_bytes + sum(manifest["shards"][s]["size"] for s in first_shards)
    assert got["described"] == harness.minilm.load_bytes  # said before anything but the manifest loads
    assert got["license"].endswith("/minilm/" + harness.minilm.license)
    assert got["mode"] == "worker" and got["totalBytes"] == total
    steps = got["steps"]
    assert steps[0] == [0, total] and steps[-1] == [total, total]
    assert all(a[0] < b[0] and a[1] == b[1] == total for a, b in zip(steps, steps[1:]))
    assert len(steps) == 1 + 1 + len(manifest["dense"]["chunks"]) + len(first_shards)  # (0, total), the vocabulary, …
    assert got["left"] == [] and got["scripts"] == 0  # every value taken, every element removed
    n = len(ids)
    expected = bert.bert_forward(model.weights, model.config, np.array(ids)).attentions
    assert np.abs(floats(got["attentions"]).reshape(6, 12, n, n) - expected).max() <= 1e-4


TOKENIZE_AND_RUN = """async ([src, texts]) => {
  const m = await Labs.runtime.load({manifestSrc: src});
  const out = [];
  for (const text of texts) {
    const ids = m.tokenizer.encode(text).ids;
    const r = await m.run(ids);
    out.push({ids, attentions: new Uint8Array(r.attentions.buffer).toBase64()});
  }
  return out;
}"""


def test_a_sentence_goes_through_the_pages_tokenizer_and_model_as_through_pythons(browser, harness):
    """End to end: text -> wordpiece.js -> ids -> the JavaScript model, against wordpiece.py and NumPy."""
    model = reference_model(read_bundle(COMMITTED))
    texts = ["Tokenizers split unbelievably long words: Zürich's café, naïve 1,234.5 — done!",
             *sentences(model.tokenizer.vocab, 5, seed=31)]
    page = Page(browser, harness.url("file"))
    got = page.evaluate(TOKENIZE_AND_RUN, [f"minilm/{harness.minilm.manifest}", texts])
    page.close()
    for text, result in zip(texts, got):
        ids = list(encode(text, model.tokenizer).ids)
        assert result["ids"] == ids, text
        n = len(ids)
        expected = bert.bert_forward(model.weights, model.config, np.array(ids)).attentions
        assert np.abs(floats(result["attentions"]).reshape(6, 12, n, n) - expected).max() <= 1e-4


def tiny_ids(harness: Harness, seed: int, count: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[2, *(rng.randrange(5, TINY.vocab_size) for _ in range(rng.randint(1, 40))), 3] for _ in range(count)]


@pytest.mark.parametrize("where", ["csp", "workers"])
def test_without_blob_workers_the_main_thread_computes_the_same_numbers(browser, harness, where):
    """The CSP alone forbids a blob: Worker (Chromium logs the refusal): the loader falls back."""
    model = reference_model(harness.tiny_bundle)
    batch = tiny_ids(harness, seed=4, count=12)
    page = Page(browser, harness.url(where))
    mode, results = run_in_page(page, f"tiny/{harness.tiny.manifest}", batch, d=64)
    forced, forced_results = run_in_page(page, f"tiny/{harness.tiny.manifest}", batch, {"worker": False}, d=64)
    page.close(allowed=("violates the following Content Security Policy directive",) if where == "csp" else ())
    assert (mode, forced) == ("main" if where == "csp" else "worker", "main")
    for ids, (attentions, hidden), (main_attentions, main_hidden) in zip(batch, results, forced_results):
        assert attentions.tobytes() == main_attentions.tobytes() and hidden.tobytes() == main_hidden.tobytes()
        expected = bert.bert_forward(model.weights, model.config, np.array(ids))
        assert np.abs(attentions - expected.attentions).max() <= 1e-4
        assert np.abs(hidden - expected.last_hidden_state).max() <= 1e-3


def test_only_the_shards_of_the_ids_are_requested(browser, harness):
    page = Page(browser, harness.url("workers"))
    requested: list[str] = []
    page.page.on("request", lambda r: requested.append(r.url.rsplit("/", 1)[-1]))
    shards = [entry["src"] for entry in harness.tiny.manifest_data["shards"]]
    run_in_page(page, f"tiny/{harness.tiny.manifest}", [[2, 9, 17, 3]], d=64)  # shards 0, 1, 2
    assert [r for r in requested if r.startswith("model-words-")] == shards[0:3]
    run_in_page(page, f"tiny/{harness.tiny.manifest}", [[2, 70, 9, 3]], d=64)  # shard 8 is new
    page.close()
    assert [r for r in requested if r.startswith("model-words-")] == [*shards[0:3], shards[8]]


CANCEL = """async ([src, after]) => {
  const controller = new AbortController();
  let error = null, calls = 0;
  try {
    await Labs.runtime.load({manifestSrc: src, signal: controller.signal,
      onProgress: (loaded) => { if (++calls > after) controller.abort(); }});
  } catch (e) { error = {name: e.name, message: e.message}; }
  await new Promise(r => setTimeout(r, 300));  // scripts already requested arrive and are dropped
  return {error, left: Object.keys(Labs.runtimeData || {}), scripts: [...document.scripts].filter(s => /model-/.test(s.src)).length};
}"""


@pytest.mark.parametrize("where", ["workers", "file"])
@pytest.mark.parametrize("after", [0, 1, 3])
def test_cancel_stops_loading_and_leaves_nothing_behind(browser, harness, where, after):
    page = Page(browser, harness.url(where))
    got = page.evaluate(CANCEL, [f"tiny/{harness.tiny.manifest}", after])
    assert got["error"]["name"] == "AbortError"
    assert got["left"] == [] and got["scripts"] == 0
    mode, results = run_in_page(page, f"tiny/{harness.tiny.manifest}", tiny_ids(harness, 1, 1), d=64)  # the page still works
    page.close()
    assert mode == "worker" and results


FAIL = """async ([src, ids]) => {
  try { const m = await Labs.runtime.load({manifestSrc: src}); await m.run(ids); return null; }
  catch (e) { await new Promise(r => setTimeout(r, 100)); return {message: e.message, left: Object.keys(Labs.runtimeData),
              scripts: [...document.scripts].filter(s => /model-/.test(s.src)).length}; }
}"""
NOT_LOADED = ("Failed to load resource",)  # Chromium's own console line for a 404 or a missing file


@pytest.mark.parametrize("where", ["workers", "file"])
@pytest.mark.parametrize("variant, message, allowed", [
    ("tiny-missing", "The model file {chunk} could not be loaded: it is missing or unreadable.", NOT_LOADED),
    ("tiny-checksum", "The model file {chunk} is corrupt (its checksum does not match).", ()),
    ("tiny-short", "The model file {chunk} is corrupt ({short} bytes where the manifest lists {full}).", ()),
    ("tiny-cut", "The model file {chunk} is corrupt (it did not register its data).", ("SyntaxError", "Invalid or unexpected token")),
])
def test_a_missing_or_corrupt_file_rejects_with_a_plain_message_and_the_page_keeps_working(browser, harness, where, variant, message, allowed):
    chunk = sorted(name for name in harness.tiny.files if name.startswith("model-layers-"))[1]
    full = len(base64.b64decode(harness.tiny.files[chunk].decode().split('"')[3]))
    page = Page(browser, harness.url(where))
    got = page.evaluate(FAIL, [f"{variant}/{harness.tiny.manifest}", [2, 5, 3]])
    assert got == {"message": message.format(chunk=chunk, short=full - 6, full=full), "left": [], "scripts": 0}
    mode, results = run_in_page(page, f"tiny/{harness.tiny.manifest}", tiny_ids(harness, 2, 1), d=64)
    page.close(allowed=allowed)
    assert mode == "worker" and results


@pytest.mark.parametrize("where", ["workers", "file"])
def test_a_missing_shard_fails_that_run_only(browser, harness, where):
    shard = sorted(name for name in harness.tiny.files if name.startswith("model-words-"))[2]  # ids 16..23
    page = Page(browser, harness.url(where))
    got = page.evaluate("""async (src) => {
      const m = await Labs.runtime.load({manifestSrc: src});
      let message = null;
      try { await m.run([2, 17, 3]); } catch (e) { message = e.message; }
      const r = await m.run([2, 5, 9, 3]);
      return {message, n: r.n};
    }""", f"tiny-noshard/{harness.tiny.manifest}")
    page.close(allowed=NOT_LOADED)
    assert got == {"message": f"The model file {shard} could not be loaded: it is missing or unreadable.", "n": 4}


def test_a_missing_manifest_and_bad_ids_reject_plainly(browser, harness):
    page = Page(browser, harness.url("workers"))
    got = page.evaluate("""async (src) => {
      const out = [];
      try { await Labs.runtime.load({manifestSrc: "tiny/model-manifest.00000000.js"}); } catch (e) { out.push(e.message); }
      const m = await Labs.runtime.load({manifestSrc: src});
      for (const ids of [[2, 80, 3], [], Array(49).fill(5)]) {
        try { await m.run(ids); } catch (e) { out.push(e.message); }
      }
      return out;
    }""", f"tiny/{harness.tiny.manifest}")
    page.close(allowed=NOT_LOADED)
    assert got == ["The model file model-manifest.00000000.js could not be loaded: it is missing or unreadable.",
                   "Token id 80 is outside the model's vocabulary.",
                   "The model reads 1 to 48 tokens, not 0.",
                   "The model reads 1 to 48 tokens, not 49."]
