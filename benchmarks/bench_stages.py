"""Where a cold lab's build time goes, stage by stage, without a profiler's overhead.

    python benchmarks/bench_stages.py [--labs 40] [--variants 40]

Makes ``--labs`` + 1 synthetic labs as ``bench_build.py`` does (the same varied copies of lab
07, their real-heads files from its heads cache) and runs the stages of a cold build on them in
this one process, as a build worker does, timing each with ``time.process_time`` (CPU, so a
busy machine slows the figures less than it would wall times). The first lab is left out of the
figures: it pays the one-off costs of a process (imports, compiling the templates, the ÷√d
demo, the number tables). Prints the CPU per lab of each stage, their sum, and beside them
MkDocs' CPU per page for the same labs' prose (the reference of ``bench_build.py``), without its
startup: (a build of every page − a build of one page) ÷ the pages more, medians of 3 each.

The stages are those of the build: loading (``load_lab``: YAML, Markdown, the kind's reading),
computing (``compute_lab``), rendering the lab's files and collecting their links, writing them,
collecting the lab's garbage — with the collector paused and the loaded site frozen, as in a
build worker.
The attention kind's computing is split further by calling its parts as ``AttentionKind.compute``
does; the row "computing, all" is ``compute_lab`` itself, timed separately, to check that the
parts add up to it. "pickling" is what crosses between processes and into the build cache: a
lab pickled in the worker that loaded it, unpickled by the build, pickled again into the cache.

    python benchmarks/bench_stages.py --shadow 3 [--labs 40]

measures what each hand-written stand-in for a library's path (:data:`SHADOWS`) saves: the
same labs, made once, run in a fresh process as they are and with each stand-in swapped for the
library's path (``--swap NAME``), the runs interleaved and repeated, every figure a median of
CPU time per lab. It prints, per stand-in, what it saves in ms per lab and as a share of a lab's
whole CPU, and whether the site's files came out byte-identical without it.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_build  # noqa: E402  (the synthetic labs and the MkDocs reference)


def _without_pickling() -> None:
    import generator.pickling

    generator.pickling.pickled_as_call = lambda cls: cls  # before any record class is made


def _without_highlighter() -> None:
    from generator.prose.highlight import Highlighter

    Highlighter.html = lambda self, code, lang: self._make(code, lang=lang).hilite(shebang=False)


def _without_simple_markdown() -> None:
    from generator.prose import markdown_render

    markdown_render.simple_markdown = lambda source, state, links: None


def _without_cache_decoder() -> None:
    from generator.kinds.attention import cache

    cache._decode_saved = lambda text, fallback=None: None


def _without_encoded_array() -> None:
    import numpy as np

    from generator.kinds.helpers import EncodedArray

    def plain(cls, array, text):
        out = np.array(array)
        out.flags.writeable = False
        return out

    EncodedArray.of = classmethod(plain)


def _without_numbers_text() -> None:
    from generator.kinds.attention import numbers

    numbers._json_texts = lambda rounded, values, strings, lengths, missed, shapes, sizes, ends: [None] * len(shapes)


# Each hand-written stand-in for a library's path, the swap that puts the library's path back, and
# the stages it acts in (what it saves is counted there alone: the other stages' noise left out).
SHADOWS = {
    "pickling": ("generator/pickling.py: records pickled as the call that makes them", _without_pickling,
                 ("pickling",)),
    "highlight": ("generator/prose/highlight.py: codehilite's highlighting, its lexer and formatter kept",
                  _without_highlighter, ("loading",)),
    "simple-markdown": ("markdown_fast.simple_markdown: plain Markdown written without Python-Markdown "
                        "(with highlight.py, its only user)", _without_simple_markdown, ("loading",)),
    "cache-decoder": ("cache._decode_saved: real-heads.json decoded by NumPy from its bytes (and so the "
                      "EncodedArray texts)", _without_cache_decoder, ("computing", "rendering")),
    "encoded-array": ("helpers.EncodedArray: the decoded real heads written into pages as their text",
                      _without_encoded_array, ("computing", "rendering")),
    "numbers": ("numbers.Numbers + helpers.JSONText: rounded numbers carrying their JSON text",
                _without_numbers_text, ("computing", "rendering")),
}


def stages(content: Path, out: Path, parts: bool = True) -> tuple[Counter, int, str]:
    """CPU seconds spent in each stage over every lab but the first, how many labs that is, and a
    digest of every file rendered (to tell whether a swap changed the output)."""
    from generator.links import page_links
    from generator.pipeline import compute_lab, kinds_of, load_lab
    from generator.sitefolder import write_files
    from generator.content import assemble_partial, load_site
    from generator.render import Renderer
    from generator.theme import Theme

    spent: Counter = Counter()  # labs 1..n
    warm_up: Counter = Counter()  # lab 0, which pays the process's one-off costs: not reported

    def timed(book: Counter, stage: str, fn, *args):
        started = time.process_time()
        result = fn(*args)
        book[stage] += time.process_time() - started
        return result

    source = load_site(content)
    loaded = []
    for index, slug in enumerate(source.order):  # each lab once, as a build does (a lab loaded twice
        book = spent if index else warm_up  # would find its formulas in the MathML memo)
        read = timed(book, "loading", load_lab, source, slug)
        loaded.append((read.lab, read.diagnostics))
        timed(book, "pickling (to the build, into the cache)", _pickled, read)
    site, problems = assemble_partial(source, loaded)
    if problems:
        raise SystemExit(f"the synthetic labs have mistakes: {problems[:3]}")
    renderer = Renderer(site, Theme(None, kinds_of(site)), None)
    labs = site.labs
    gc.freeze()  # as a build worker forked after loading: no collection scans the site
    digest = hashlib.sha256()
    for index, lab in enumerate(labs):
        book = spent if index else warm_up
        if parts:
            _computing_parts(book, timed, lab)
        computed = timed(book, "computing, all (compute_lab)", compute_lab, lab, {})
        files = timed(book, "rendering (with links)", _render, renderer, labs, index, computed.payload, page_links)
        timed(book, "writing", write_files, out / lab.slug, files)
        timed(book, "collecting the lab's garbage", gc.collect, 0)
        for path, data in sorted(files.items()):
            digest.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
    return spent, len(labs) - 1, digest.hexdigest()


def _computing_parts(book: Counter, timed, lab) -> None:
    """The attention kind's computing, part by part, as ``AttentionKind.compute`` calls them."""
    from generator.kinds.attention import cache as cachefile, headreport, inpage
    from generator.kinds.attention.permille import decoded
    from generator.kinds.attention.pattern import shuffles
    from generator.kinds.attention.headfinder import Aligned, find_heads, learned_matches, model_sentences, sentence_text
    from generator.kinds.attention.widget import check_claims, compute_widget

    widget, model = lab.spec.widget, lab.spec.model
    payload = timed(book, "computing: spotlight payload", compute_widget, widget)
    timed(book, "computing: shuffles", shuffles, widget)
    timed(book, "computing: claims", check_claims, widget, payload)
    cachefile._LOADED.clear()  # read as a build reads it: once per lab, its numbers decoded when used
    cache = timed(book, "computing: real-heads file (read, check)", cachefile.load_cache_arrays, model.cache, True)
    (sha,) = cache["entries"]
    sentences = [*model_sentences(widget), *model.finder_sentences]
    entries = {s.id: cachefile.cache_lookup(cache, sha, sentence_text(s)) for s in sentences}
    found = timed(book, "computing: the stored report's key", headreport.stored_report, model, widget, sha, entries, cache)
    if found is None:
        raise SystemExit(f"{lab.slug}: no stored head finder report under this code's key (bench_build makes them)")
    timed(book, "computing: the shown sentences decoded", lambda: [decoded(entries[s.id]["attention"]) for s in model_sentences(widget)])
    whole = {s.id: {**e, "attention": decoded(e["attention"])} for s, e in zip(sentences, entries.values())}
    aligned = Aligned(sentences, whole)  # what a build without the stored report computes (not in compute_lab)
    timed(book, "computing: head finder (without a stored report)", find_heads, model, widget, whole, aligned)
    timed(book, "computing: learned-head matching (without a stored report)", learned_matches, widget, model.finder_sentences,
          whole, aligned)
    if model.bundle is not None:  # read from the cache's drift section: no sentence runs through the 8-bit model
        by_text = {sentence_text(s): entries[s.id] for s in sentences}
        timed(book, "computing: the 8-bit model's figure", inpage.accuracy, model, widget, sha, by_text)
    cachefile._LOADED.clear()
    gc.collect(0)  # the parts' garbage, so that the collection timed after them is the build's alone


def _pickled(loaded) -> None:
    """What a lab costs to cross between processes and into the build cache (buildcache.put)."""
    data = pickle.dumps(loaded, pickle.HIGHEST_PROTOCOL)
    pickle.loads(data)
    pickle.dumps(loaded.lab, pickle.HIGHEST_PROTOCOL)


def _whole(spent: Counter) -> float:
    """CPU seconds of a lab in all: every stage but the computing parts (compute_lab counts them)."""
    return sum(seconds for stage, seconds in spent.items() if not stage.startswith("computing: "))


def shadow_table(args: argparse.Namespace) -> None:
    """Run the labs as they are and without each stand-in (or those of ``args.only``), interleaved,
    ``args.shadow`` times.

    What a stand-in saves is counted in the stages it acts in, each stage's least CPU over the runs
    without it less the least as it is: load from elsewhere only ever adds CPU time (caches shared
    with other processes), so the least of several runs is the steadiest estimate of a stage. A
    lab's CPU is the sum of every stage's least."""
    heads = bench_build.HeadsCache(args.heads_cache, args.model)
    print(f"{os.cpu_count()} cores; load average at start: {bench_build.loadavg()}", flush=True)
    chosen = [name for name in SHADOWS if not args.only or name in args.only]
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in ("", *chosen)}
    digests: dict[str, set[str]] = {name: set() for name in runs}
    with tempfile.TemporaryDirectory(prefix="bench-shadow-") as tmp:
        content, _ = bench_build.make_content(Path(tmp) / "all", args.labs + 1, args.variants, heads)
        for _ in range(args.shadow):
            for name in runs:
                command = [sys.executable, __file__, "--content", str(content), "--json",
                           *(["--swap", name] if name else [])]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                result = json.loads(done.stdout.strip().splitlines()[-1])
                runs[name].append(result["stages"])
                digests[name].add(result["digest"])
                print(f"  {name or 'as it is'}: {result['ms_per_lab']:.2f} ms per lab", file=sys.stderr, flush=True)
    print(f"load average at end: {bench_build.loadavg()}\n")

    def least(name: str, stage: str) -> float:
        return min(run[stage] for run in runs[name])

    stages_of = [stage for stage in runs[""][0] if not stage.startswith("computing: ")]
    base = sum(least("", stage) for stage in stages_of)
    print(f"CPU per lab over {args.labs} labs, {args.shadow} interleaved runs each; a lab as it is: {base:.2f} ms "
          "(the sum of each stage's least)\n")
    print("| stand-in | stages it acts in | it saves, ms per lab | share of a lab's CPU | output without it |")
    print("|---|---|---:|---:|---|")
    for name in chosen:
        what, _, acts = SHADOWS[name]
        stages = [stage for stage in stages_of if stage.startswith(acts)]
        saved = sum(least(name, stage) - least("", stage) for stage in stages)
        same = "identical" if digests[name] == digests[""] and len(digests[""]) == 1 else "DIFFERENT"
        print(f"| {what} | {', '.join(stages)} | {saved:.2f} | {100 * saved / base:.1f} % | {same} |")
    print("\nstages, least ms per lab:", json.dumps({name or "as it is": {stage: round(least(name, stage), 2)
                                                                         for stage in stages_of}
                                                   for name in runs}, indent=1))


def _render(renderer, labs, index, payload, page_links) -> dict[str, bytes]:
    files = renderer.lab_files(labs[index], payload, labs[index - 1] if index else None,
                               labs[index + 1] if index + 1 < len(labs) else None)
    for path, data in files.items():
        if path.endswith(".html"):
            page_links(data.decode("utf-8"))
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labs", type=int, default=40, help="labs measured (one more is made, to warm up)")
    ap.add_argument("--variants", type=int, default=40, help="versions of each varied sentence (default 40)")
    ap.add_argument("--heads-cache", type=Path, default=ROOT / "benchmarks" / ".heads-cache")
    ap.add_argument("--model", type=Path, default=Path(os.environ.get("LABS_MINILM_DIR", bench_build.DEFAULT_MODEL)))
    ap.add_argument("--shadow", type=int, metavar="RUNS", default=0,
                    help="measure what each stand-in for a library saves, over RUNS interleaved runs")
    ap.add_argument("--swap", action="append", choices=sorted(SHADOWS), default=[],
                    help="use the library's path instead of this stand-in (repeatable)")
    ap.add_argument("--only", action="append", choices=sorted(SHADOWS), default=[],
                    help="with --shadow: measure only this stand-in (repeatable)")
    ap.add_argument("--content", type=Path, help=argparse.SUPPRESS)  # labs made by a --shadow run
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one line for a --shadow run
    args = ap.parse_args()
    for name in args.swap:  # first: a swap may have to come before the generator's modules load
        SHADOWS[name][1]()
    if args.shadow:
        return shadow_table(args)
    if args.content is not None:
        with tempfile.TemporaryDirectory(prefix="bench-stages-") as tmp:
            gc.disable()
            try:
                spent, n, digest = stages(args.content, Path(tmp) / "out", parts=False)
            finally:
                gc.unfreeze()
                gc.enable()
        print(json.dumps({"ms_per_lab": 1000 * _whole(spent) / n, "digest": digest,
                          "stages": {k: 1000 * v / n for k, v in spent.items()}}))
        return None
    heads = bench_build.HeadsCache(args.heads_cache, args.model)
    print(f"{os.cpu_count()} cores; load average at start: {bench_build.loadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as tmp:
        content, project = bench_build.make_content(Path(tmp) / "all", args.labs + 1, args.variants, heads)
        _, one = bench_build.make_content(Path(tmp) / "one", 1, args.variants, heads)
        gc.disable()  # as the build does; workers collect once per lab
        try:
            spent, n, _ = stages(content, Path(tmp) / "out")
        finally:
            gc.unfreeze()
            gc.enable()
        runs = [(bench_build.mkdocs(project)["cpu"], bench_build.mkdocs(one)["cpu"]) for _ in range(3)]
        page = (statistics.median(a for a, _ in runs) - statistics.median(b for _, b in runs)) / n
    print(f"load average at end: {bench_build.loadavg()}\n")
    print(f"CPU per lab over {n} labs (process_time, one process)\n")
    print("| stage | ms per lab |")
    print("|---|---:|")
    for stage, seconds in spent.items():
        print(f"| {stage} | {1000 * seconds / n:.2f} |")
    total = _whole(spent)
    parts = sum(seconds for stage, seconds in spent.items() if stage.startswith("computing: "))
    print(f"| **a lab in all** (every stage but the computing parts) | **{1000 * total / n:.2f}** |")
    print(f"| the computing parts added up (against computing, all) | {1000 * parts / n:.2f} |")
    print(f"| MkDocs, a page of the same prose (startup left out) | {1000 * page:.2f} |")


if __name__ == "__main__":
    main()
