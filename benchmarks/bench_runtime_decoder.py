"""What the decoder in the page costs a learner: download, loading, prefill, decoding, memory, jank.

    python benchmarks/bench_runtime_decoder.py [--runs 5] [--gguf PATH]

Writes SmolLM2-135M-Instruct's page files (generator/runtime/decoder.py) and a bare harness page
into a temp folder, serves it on 127.0.0.1 with the site's CSP plus ``worker-src 'self' blob:``,
and in headless Chromium measures:

* the bytes of a first use (the runtime code, the manifest, the tokenizer, every weight shard),
  raw and gzip -6; and the tokenizer alone (what a page that only tokenizes loads);
* load: ``Labs.runtime.load`` from the call to the model ready, and the longest main-thread
  task meanwhile;
* a 20-token prompt (``reset``, ``prefill``, ``next``) and decoding (``step`` then ``next``, one
  token each), medians of ``--runs``, in the Worker and on the main thread (``worker: false``),
  at full speed and with the CPU slowed 4× (CDP ``Emulation.setCPUThrottlingRate``). The
  throttling slows the page's main thread only, not a Worker: the Worker's 4× column is its
  full speed again, and the main-thread engine's 4× figure is the one that stands for a slow
  device;
* the longest main-thread task while the Worker prefills and decodes (PerformanceObserver
  ``longtask``: tasks over 50 ms; "none" when there was none);
* the JS heap after loading and a garbage collection (CDP ``Runtime.getHeapUsage``: used size plus
  ArrayBuffer backing stores): the page's alone with the Worker engine (the weights live in the
  Worker), the whole model's with the main-thread engine, after the 20-token prompt;
* beside the Worker engine, interleaved run by run in the same process: the same 20-token prompt
  and decode step in NumPy (``generator.models.llama`` on the dequantized float32 weights, one
  BLAS thread, as the page has one thread), wall time and CPU time. The page's CPU time is the
  renderer processes' (CDP ``SystemInfo.getProcessInfo``, the Worker's thread included). The
  ratios are the stable figure on a shared machine: both sides see the same load.

Targets: decode ≤ 150 ms a token and a 20-token prompt ≤ 2.5 s at full speed, heap ≤ 450 MB, no
main-thread task over 50 ms while the Worker runs. Prints Markdown tables with the load average
at the start and the end; the figures mean something only on a quiet machine.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import time
from pathlib import Path

# The reference runs on one core, as the page's JavaScript does (set before NumPy loads).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_page import chromium_path  # noqa: E402  (benchmarks/ is the script's folder)
from bench_runtime import CHROMIUM_ARGS, LOAD, WATCH, heap, print_versus, renderer_cpu, served  # noqa: E402

from generator.models import bpe, llama, store  # noqa: E402
from generator.runtime import decoder  # noqa: E402

PROMPT = "The old lighthouse keeper watched the storm roll in across the bay, counting the seconds between each flash of"  # 20 tokens
MB = 1_000_000

PREFILL = """async (ids) => {
  const m = window.model;
  await m.reset();
  const t0 = performance.now();
  await m.prefill(ids);
  await m.next();
  return performance.now() - t0;
}"""
STEP = """async (id) => {
  const t0 = performance.now();
  await window.model.step(id);
  await window.model.next();
  return performance.now() - t0;
}"""
RUN = """async ([ids, next, runs]) => {
  await window.model.reset(); await window.model.prefill(ids); await window.model.step(next);  // warm: the JIT has compiled the kernels
  window.longTasks = [];
  const prefill = [], decode = [];
  for (let i = 0; i < runs; i++) {
    const m = window.model;
    await m.reset();
    let t0 = performance.now();
    await m.prefill(ids); await m.next();
    prefill.push(performance.now() - t0);
    for (let k = 0; k < 4; k++) {
      t0 = performance.now();
      await m.step(next); await m.next();
      decode.push(performance.now() - t0);
    }
  }
  await new Promise(r => setTimeout(r, 100));
  return {prefill, decode, longest: Math.max(0, ...window.longTasks)};
}"""


def interleaved(tab, browser_cdp, model, ids: list[int], next_id: int, rounds: int) -> dict[str, list[float]]:
    """Round by round: the page's 20-token prompt and one decode step, then NumPy's; wall and CPU seconds."""
    out = {k: [] for k in ("js_prefill_wall", "js_prefill_cpu", "js_step_wall", "js_step_cpu",
                           "np_prefill_wall", "np_prefill_cpu", "np_step_wall", "np_step_cpu")}
    logits, cache = llama.next_token_logits(model, ids)  # warm
    for _ in range(rounds):
        cpu = renderer_cpu(browser_cdp)
        out["js_prefill_wall"].append(tab.evaluate(PREFILL, ids) / 1000)
        out["js_prefill_cpu"].append(renderer_cpu(browser_cdp) - cpu)
        cpu = renderer_cpu(browser_cdp)
        out["js_step_wall"].append(tab.evaluate(STEP, next_id) / 1000)
        out["js_step_cpu"].append(renderer_cpu(browser_cdp) - cpu)
        wall, cpu = time.perf_counter(), time.process_time()
        logits, cache = llama.next_token_logits(model, ids)
        out["np_prefill_wall"].append(time.perf_counter() - wall)
        out["np_prefill_cpu"].append(time.process_time() - cpu)
        wall, cpu = time.perf_counter(), time.process_time()
        llama.next_token_logits(model, [next_id], cache)
        out["np_step_wall"].append(time.perf_counter() - wall)
        out["np_step_cpu"].append(time.process_time() - cpu)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--gguf", type=Path, default=None, help="the SmolLM2 GGUF (default: the one labs models fetch got)")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    from playwright.sync_api import sync_playwright

    model = decoder.read_decoder(args.gguf or store.locate("smollm2-135m-instruct"))
    page = decoder.page_files(model)
    ids = list(bpe.encode(PROMPT, model.tokenizer).ids)
    assert len(ids) == 20, len(ids)
    next_id = model.tokenizer.vocab["Ġlightning"]
    manifest = page.manifest_data
    first_use = [page.code, page.manifest, page.tokenizer, *(s["src"] for s in manifest["shards"])]
    raw = sum(len(page.files[n]) for n in first_use)
    gz = sum(len(gzip.compress(page.files[n], 6, mtime=0)) for n in first_use)
    tokenizer_only = [page.code, page.manifest, page.tokenizer]
    tok_raw = sum(len(page.files[n]) for n in tokenizer_only)
    tok_gz = sum(len(gzip.compress(page.files[n], 6, mtime=0)) for n in tokenizer_only)

    with served(page) as (url, src):
        results, heaps = {}, {}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            for mode in ("worker", "main"):
                tab = browser.new_page()
                cdp = tab.context.new_cdp_session(tab)
                tab.goto(url)
                tab.evaluate(WATCH)
                loaded = tab.evaluate(LOAD, [src, [], mode == "worker"])  # a decoder has no ids to load first
                assert loaded["mode"] == mode, loaded
                tab.evaluate(PREFILL, ids)
                cdp.send("HeapProfiler.collectGarbage")
                heaps[mode] = heap(cdp)
                fast = tab.evaluate(RUN, [ids, next_id, args.runs])
                cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
                slow = tab.evaluate(RUN, [ids, next_id, max(2, args.runs // 2)])
                cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
                results[mode] = (loaded, fast, slow)
                if mode == "worker":
                    numpy_model = llama.cached_model(model.gguf.path)
                    versus = interleaved(tab, browser.new_browser_cdp_session(), numpy_model, ids, next_id, args.runs)
                tab.close()
            browser.close()

    def task(ms: float) -> str:
        return f"{ms:.0f} ms" if ms else "none"

    print(f"\nfirst use (code, manifest, tokenizer, {len(manifest['shards'])} weight shards of at most "
          f"{max(len(page.files[s['src']]) for s in manifest['shards']) / MB:.2f} MB): {raw / MB:.2f} MB raw, "
          f"{gz / MB:.2f} MB gzip -6")
    print(f"the tokenizer alone (code, manifest, tokenizer): {tok_raw / MB:.2f} MB raw, {tok_gz / MB:.2f} MB gzip -6\n")
    print("| engine | load | longest task loading | 20-token prompt | decode a token | at 4× CPU: prompt, token "
          "| longest task running (1×, 4×) | JS heap after load |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, (loaded, fast, slow) in results.items():
        print(f"| {mode} | {loaded['ms'] / 1000:.1f} s | {task(loaded['longest'])} "
              f"| {statistics.median(fast['prefill']):.0f} ms | {statistics.median(fast['decode']):.0f} ms "
              f"| {statistics.median(slow['prefill']):.0f} ms, {statistics.median(slow['decode']):.0f} ms "
              f"| {task(fast['longest'])}, {task(slow['longest'])} | {heaps[mode]:.1f} MB |")
    med = {k: statistics.median(v) for k, v in versus.items()}
    labels = {"prefill": "20-token prompt", "step": "decode a token"}
    print_versus(f"Worker engine against NumPy (float32, one thread), interleaved, {args.runs} rounds, medians",
                 [(f"{labels[what]}, {'CPU' if kind == 'cpu' else 'wall'}", med[f"js_{what}_{kind}"],
                   med[f"np_{what}_{kind}"]) for what in ("prefill", "step") for kind in ("wall", "cpu")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
