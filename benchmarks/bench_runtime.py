"""What the in-page model costs a learner: download, loading, the forward pass, memory, jank.

    python benchmarks/bench_runtime.py [--runs 15] [--bundle content/models/all-minilm-l6-v2]

Writes the bundle's page files (generator/runtime/pagefiles.py) and a bare harness page into a
temp folder, serves it on 127.0.0.1 with the site's CSP plus ``worker-src 'self' blob:``, and in
headless Chromium measures:

* the bytes of a first use (the runtime code, the manifest, the vocabulary, every layer chunk,
  and the embedding shards of a typical 20-word sentence), raw and gzip -6, and the token
  embeddings that sentence loads;
* load + decode: ``Labs.runtime.load`` from the call to the model ready in its Worker;
* the forward pass of that sentence (``model.run``), median of ``--runs``, in the Worker and on
  the main thread (``worker: false``), at full speed and with the CPU slowed 4× (CDP
  ``Emulation.setCPUThrottlingRate``, Lighthouse's mobile factor). The throttling slows the
  page's main thread only, not a Worker: the main-thread engine's 4× figure is the one that
  stands for a slow device;
* the page's JS heap after loading (CDP ``Runtime.getHeapUsage``: used size plus ArrayBuffer
  backing stores). With the Worker engine the weights live in the Worker, so the main-thread
  engine's figure is the one to hold against the budget: it holds the whole model;
* the longest main-thread task during loading and during a run (PerformanceObserver
  ``longtask``: tasks over 50 ms; "none" when there was none).

* beside the main-thread engine, interleaved run by run in the same process: the same forward
  pass in NumPy (``bert.bert_forward`` on the bundle's dequantized weights, one BLAS thread, as
  the page has one thread), wall time and CPU time. The page's CPU time is the renderer
  processes' (CDP ``SystemInfo.getProcessInfo``). The ratios are the stable figure on a shared
  machine: both sides see the same load.

Targets (issue: the real model in the page): forward ≤ 250 ms median unthrottled and ≤ 1.5 s
throttled 4×, load ≤ 2 s, first use ≤ 14 MB gzip, heap ≤ 150 MB, no task over 50 ms. Prints a
Markdown table; the figures mean something only on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import gzip
import http.server
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

# The reference runs on one core, as the page's JavaScript does (set before NumPy loads).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from bench_page import chromium_path  # noqa: E402  (benchmarks/ is the script's folder)

from generator.models import bert  # noqa: E402
from generator.models.wordpiece import encode  # noqa: E402
from generator.runtime.bundle import read_bundle, reference_model  # noqa: E402
from generator.runtime.pagefiles import PageFiles, page_files, write_page_files  # noqa: E402
from generator.serve.statichost import StaticHostHandler  # noqa: E402

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'self'; "
       "frame-ancestors 'none'; worker-src 'self' blob:")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--enable-precise-memory-info"]
SENTENCE = ("The old lighthouse keeper watched the storm roll in across the bay, counting the seconds "
            "between each flash of lightning.")  # 20 words
MB = 1_000_000

WATCH = """() => {
  window.longTasks = [];
  new PerformanceObserver(list => list.getEntries().forEach(e => window.longTasks.push(e.duration)))
    .observe({type: "longtask", buffered: false});
}"""
LOAD = """async ([src, ids, worker]) => {
  window.longTasks = [];
  const t0 = performance.now();
  window.model = await Labs.runtime.load({manifestSrc: src, ids, worker});
  const ms = performance.now() - t0;
  await new Promise(r => setTimeout(r, 100));  // let the observer report
  return {ms, mode: window.model.mode, longest: Math.max(0, ...window.longTasks)};
}"""
RUN = """async ([ids, runs]) => {
  await window.model.run(ids);  // warm: the JIT has compiled the kernels
  window.longTasks = [];
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await window.model.run(ids);
    times.push(performance.now() - t0);
  }
  await new Promise(r => setTimeout(r, 100));
  return {times, longest: Math.max(0, ...window.longTasks)};
}"""


ONE = """async (ids) => { const t0 = performance.now(); await window.model.run(ids); return performance.now() - t0; }"""


def renderer_cpu(browser_cdp) -> float:
    """Seconds of CPU the browser's renderer processes have used (the page's main thread and Worker)."""
    info = browser_cdp.send("SystemInfo.getProcessInfo")["processInfo"]
    return sum(p["cpuTime"] for p in info if p["type"] == "renderer")


def interleaved(tab, browser_cdp, ids: list[int], model, rounds: int) -> dict[str, list[float]]:
    """Round by round, one page forward pass then one NumPy forward pass: wall and CPU seconds each."""
    out = {"js_wall": [], "js_cpu": [], "np_wall": [], "np_cpu": []}
    batch = np.array(ids)
    bert.bert_forward(model.weights, model.config, batch)  # warm, as the page's RUN warms
    for _ in range(rounds):
        cpu = renderer_cpu(browser_cdp)
        out["js_wall"].append(tab.evaluate(ONE, ids) / 1000)
        out["js_cpu"].append(renderer_cpu(browser_cdp) - cpu)
        wall, cpu = time.perf_counter(), time.process_time()
        bert.bert_forward(model.weights, model.config, batch)
        out["np_wall"].append(time.perf_counter() - wall)
        out["np_cpu"].append(time.process_time() - cpu)
    return out


class Handler(StaticHostHandler):
    def end_headers(self):
        self.send_header("Content-Security-Policy", CSP)
        super().end_headers()


@contextlib.contextmanager
def served(page: PageFiles):
    """``page``'s files under model/ in a temporary folder beside a bare harness page that loads the
    runtime, served on 127.0.0.1 with the site's CSP: yields (the harness's URL, the manifest's)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_page_files(page, folder / "model")
        (folder / "favicon.ico").write_bytes(b"")
        (folder / "index.html").write_text(f'<!doctype html><html lang="en"><title>runtime</title>'
                                           f'<script src="model/{page.code}"></script></html>\n', encoding="utf-8")
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/index.html", f"model/{page.manifest}"
        finally:
            server.shutdown()
            server.server_close()


def heap(cdp) -> float:
    usage = cdp.send("Runtime.getHeapUsage")
    return (usage["usedSize"] + usage.get("backingStorageSize", 0)) / MB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--bundle", type=Path, default=ROOT / "content" / "models" / "all-minilm-l6-v2")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    from playwright.sync_api import sync_playwright

    bundle = read_bundle(args.bundle)
    page = page_files(bundle)
    ids = list(encode(SENTENCE, bundle.tokenizer).ids)
    manifest, rows = page.manifest_data, page.manifest_data["spec"]["shard_rows"]
    shards = sorted({i // rows for i in ids})
    first_use = [page.code, page.manifest, manifest["vocab"]["src"], *(c["src"] for c in manifest["dense"]["chunks"]),
                 *(manifest["shards"][s]["src"] for s in shards)]
    raw = sum(len(page.files[n]) for n in first_use)
    gz = sum(len(gzip.compress(page.files[n], 6, mtime=0)) for n in first_use)
    embeddings = sum(manifest["shards"][s]["size"] for s in shards)

    with served(page) as (url, src):
        results = {}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            for mode in ("worker", "main"):
                tab = browser.new_page()
                cdp = tab.context.new_cdp_session(tab)
                tab.goto(url)
                tab.evaluate(WATCH)
                loaded = tab.evaluate(LOAD, [src, ids, mode == "worker"])
                assert loaded["mode"] == mode, loaded
                page_heap = heap(cdp)
                fast = tab.evaluate(RUN, [ids, args.runs])
                cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
                slow = tab.evaluate(RUN, [ids, max(3, args.runs // 3)])
                cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
                results[mode] = (loaded, page_heap, fast, slow)
                if mode == "main":
                    numpy_model = reference_model(bundle)
                    versus = interleaved(tab, browser.new_browser_cdp_session(), ids, numpy_model, args.runs)
                tab.close()
            browser.close()

    print(f"20-word sentence: {len(ids)} word pieces, {len(shards)} embedding shards ({embeddings / MB:.2f} MB)")
    print(f"first use: {raw / MB:.2f} MB raw, {gz / MB:.2f} MB gzip -6 (target ≤ 14 MB gzip)\n")
    print("| engine | load + decode | longest task loading | forward median | 4× slower CPU | longest task running (1×, 4×) | page's JS heap after load |")
    print("|---|---|---|---|---|---|---|")
    for mode, (loaded, page_heap, fast, slow) in results.items():
        def task(ms: float) -> str:
            return f"{ms:.0f} ms" if ms else "none"
        print(f"| {mode} | {loaded['ms']:.0f} ms | {task(loaded['longest'])} | {statistics.median(fast['times']):.0f} ms "
              f"| {statistics.median(slow['times']):.0f} ms | {task(fast['longest'])}, {task(slow['longest'])} "
              f"| {page_heap:.1f} MB |")
    med = {k: statistics.median(v) for k, v in versus.items()}
    print_versus(f"Main-thread engine against NumPy (one thread), interleaved, {args.runs} rounds, medians",
                 [(what, med[f"js_{what.lower()}"], med[f"np_{what.lower()}"]) for what in ("wall", "CPU")])
    return 0


def print_versus(title: str, rows: list[tuple[str, float, float]]) -> None:
    """The page's engine against NumPy as a table: one row (label, page's seconds, NumPy's) each,
    with the load average at the end of the run."""
    print(f"\n{title}; load average {os.getloadavg()[0]:.2f} at the end:\n")
    print("| | page (JavaScript) | NumPy | page ÷ NumPy |")
    print("|---|---|---|---|")
    for label, js, np_ in rows:
        print(f"| {label} | {js * 1000:.0f} ms | {np_ * 1000:.0f} ms | {js / np_:.2f}× |")


if __name__ == "__main__":
    raise SystemExit(main())
