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
parts add up to it.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_build  # noqa: E402  (the synthetic labs and the MkDocs reference)


def stages(content: Path, out: Path) -> tuple[Counter, int]:
    """CPU seconds spent in each stage over every lab but the first, and how many labs that is."""
    from generator.links import page_links
    from generator.pipeline import compute_lab, kinds_of, load_lab
    from generator.sitefolder import write_files
    from generator.content import assemble_partial, load_site
    from generator.kinds.attention import cache as cachefile
    from generator.kinds.attention.pattern import shuffles
    from generator.kinds.attention.realmodel import _Aligned, _finder, learned_matches, model_sentences, sentence_text
    from generator.kinds.attention.widget import check_claims, compute_widget
    from generator.render import Renderer, Theme

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
    site, problems = assemble_partial(source, loaded)
    if problems:
        raise SystemExit(f"the synthetic labs have mistakes: {problems[:3]}")
    renderer = Renderer(site, Theme(None, kinds_of(site)), None)
    labs = site.labs
    gc.freeze()  # as a build worker forked after loading: no collection scans the site
    for index, lab in enumerate(labs):
        book = spent if index else warm_up
        widget, model = lab.spec.widget, lab.spec.model
        payload = timed(book, "computing: spotlight payload", compute_widget, widget)
        timed(book, "computing: shuffles", shuffles, widget)
        timed(book, "computing: claims", check_claims, widget, payload)
        cachefile._LOADED.clear()  # read as a build reads it: once per lab
        cache = timed(book, "computing: real-heads file (read, check)", cachefile.load_cache_arrays, model.cache)
        (sha,) = cache["entries"]
        sentences = [*model_sentences(widget), *model.finder_sentences]
        entries = {s.id: cachefile.cache_lookup(cache, sha, sentence_text(s)) for s in sentences}
        aligned = _Aligned(sentences, entries)
        timed(book, "computing: head finder", _finder, model, widget, entries, aligned)
        timed(book, "computing: learned-head matching", learned_matches, widget, model.finder_sentences, entries, aligned)
        cachefile._LOADED.clear()
        gc.collect(0)  # the parts' garbage, so that the collection timed below is the build's alone
        computed = timed(book, "computing, all (compute_lab)", compute_lab, lab, {})
        files = timed(book, "rendering (with links)", _render, renderer, labs, index, computed.payload, page_links)
        timed(book, "writing", write_files, out / lab.slug, files)
        timed(book, "collecting the lab's garbage", gc.collect, 0)
    return spent, len(labs) - 1


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
    args = ap.parse_args()
    heads = bench_build.HeadsCache(args.heads_cache, args.model)
    print(f"{os.cpu_count()} cores; load average at start: {bench_build.loadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as tmp:
        content, project = bench_build.make_content(Path(tmp) / "all", args.labs + 1, args.variants, heads)
        _, one = bench_build.make_content(Path(tmp) / "one", 1, args.variants, heads)
        gc.disable()  # as the build does; workers collect once per lab
        try:
            spent, n = stages(content, Path(tmp) / "out")
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
    total = sum(seconds for stage, seconds in spent.items() if not stage.startswith("computing: "))
    parts = sum(seconds for stage, seconds in spent.items() if stage.startswith("computing: "))
    print(f"| **a lab in all** (every stage but the computing parts) | **{1000 * total / n:.2f}** |")
    print(f"| the computing parts added up (against computing, all) | {1000 * parts / n:.2f} |")
    print(f"| MkDocs, a page of the same prose (startup left out) | {1000 * page:.2f} |")


if __name__ == "__main__":
    main()
