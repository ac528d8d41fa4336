"""Lighthouse 12 on the built site: performance on the lab page, and the other scores on every kind of page.

Builds content/ into a temporary folder, serves it with ``http.server`` on 127.0.0.1 and runs
Lighthouse 12 (mobile emulation, default settings: simulated throttling, a mid-tier phone)
against the index, the lab page, a topic page and the 404 page, ``--runs`` times each (default
3), and reports the median of each figure. A second pass repeats the lab page with
``--throttling.cpuSlowdownMultiplier=8`` (a low-end phone).

Reported per page: performance score, Total Blocking Time, main-thread work (``mainthread-work-
breakdown``), max potential input delay, DOM size, and the accessibility, best-practices and SEO
scores. Targets: lab page performance 100, TBT ≤ 50 ms, main-thread work ≤ 0.6 s;
TBT ≤ 200 ms at 8× CPU slowdown; accessibility, best practices and SEO 100 on every page.

Lighthouse itself comes from npm and is not a dependency of the project. Install it outside the
repository (or under benchmarks/node_modules, which git ignores)::

    npm i --prefix ~/.cache/labs-lighthouse lighthouse@12
    LIGHTHOUSE=~/.cache/labs-lighthouse/node_modules/.bin/lighthouse python benchmarks/bench_lighthouse.py

Without ``LIGHTHOUSE`` it tries benchmarks/node_modules/.bin/lighthouse, then ``npx lighthouse@12``.
Chrome: ``CHROME_PATH`` (default /usr/bin/chromium), run as ``--headless=new --no-sandbox``.
Figures depend on the machine's load: run it on a quiet machine, and say which in the README.

Options: ``--runs N``, ``--pages index,lab,topic,404``, ``--no-slow`` (skip the 8× pass),
``--keep DIR`` (keep the JSON reports). Exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.build import build  # noqa: E402
from generator.serve.statichost import StaticHostHandler  # noqa: E402

PAGES = {"index": "", "lab": "labs/attention/", "tokens": "labs/tokens/", "embeddings": "labs/embeddings/",
         "next-token": "labs/next-token/", "sampling": "labs/sampling/",
         "topic": "topics/llm-engineering/", "404": "404.html"}
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
AUDITS = {"tbt": "total-blocking-time", "main": "mainthread-work-breakdown", "fid": "max-potential-fid", "dom": "dom-size"}


def lighthouse_command() -> list[str]:
    wanted = os.environ.get("LIGHTHOUSE")
    if wanted:
        return [os.path.expanduser(wanted)]
    local = ROOT / "benchmarks" / "node_modules" / ".bin" / "lighthouse"
    if local.is_file():
        return [str(local)]
    if shutil.which("npx"):
        return ["npx", "--yes", "lighthouse@12"]
    sys.exit("Lighthouse not found: set LIGHTHOUSE, or `npm i lighthouse@12` (see this file's docstring)")


def run_once(cmd: list[str], url: str, out: Path, slow: bool) -> dict:
    args = cmd + [url, "--quiet", "--output=json", f"--output-path={out}",
                  "--chrome-flags=--headless=new --no-sandbox", "--only-categories=" + ",".join(CATEGORIES)]
    if slow:
        args.append("--throttling.cpuSlowdownMultiplier=8")
    env = {**os.environ, "CHROME_PATH": os.environ.get("CHROME_PATH", "/usr/bin/chromium")}
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0 or not out.is_file():
        raise RuntimeError(f"lighthouse failed on {url} ({done.returncode}):\n{done.stderr[-2000:]}")
    report = json.loads(out.read_text(encoding="utf-8"))
    audits, cats = report["audits"], report["categories"]
    figures = {c: round((cats[c]["score"] or 0) * 100) for c in CATEGORIES}
    figures.update({key: audits[a].get("numericValue") for key, a in AUDITS.items()})
    figures["version"] = report.get("lighthouseVersion")
    return figures


def median_of(runs: list[dict]) -> dict:
    keys = [k for k in runs[0] if k != "version"]
    return {**{k: statistics.median(r[k] for r in runs if r[k] is not None) for k in keys}, "version": runs[0]["version"]}


def row(name: str, m: dict, n: int) -> str:
    return (f"| {name} | {m['performance']:.0f} | {m['tbt']:.0f} | {m['main'] / 1000:.2f} | {m['fid']:.0f} | {m['dom']:.0f} | "
            f"{m['accessibility']:.0f} | {m['best-practices']:.0f} | {m['seo']:.0f} | {n} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--no-slow", action="store_true", help="skip the lab page at 8× CPU slowdown")
    parser.add_argument("--keep", type=Path, default=None, help="keep the JSON reports in this folder")
    args = parser.parse_args(argv)
    pages = [p for p in args.pages.split(",") if p]
    unknown = [p for p in pages if p not in PAGES]
    if unknown:
        parser.error(f"unknown page(s) {unknown}; pages: {', '.join(PAGES)}")
    cmd = lighthouse_command()

    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        build(ROOT / "content", ROOT / "theme", site)
        handler = functools.partial(StaticHostHandler, directory=str(site))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        origin = f"http://127.0.0.1:{server.server_address[1]}/"
        reports = args.keep or Path(tmp) / "reports"
        reports.mkdir(parents=True, exist_ok=True)
        results: dict[str, dict] = {}
        try:
            passes = [(p, False) for p in pages] + ([("lab", True)] if "lab" in pages and not args.no_slow else [])
            for page, slow in passes:
                name = page + (" (CPU 8×)" if slow else "")
                runs = [run_once(cmd, origin + PAGES[page], reports / f"{page}{'-cpu8' if slow else ''}-{i}.json", slow)
                        for i in range(args.runs)]
                results[name] = median_of(runs)
                print(f"{name}: {results[name]}", file=sys.stderr)
        finally:
            server.shutdown()
            server.server_close()

    version = next(iter(results.values()))["version"]
    print(f"### Lighthouse {version}, mobile, default settings; median of {args.runs}\n")
    print("| page | performance | TBT ms | main-thread s | max input delay ms | DOM elements | accessibility | best practices | SEO | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, m in results.items():
        print(row(name, m, args.runs))

    misses = []
    lab, slow = results.get("lab"), results.get("lab (CPU 8×)")
    if lab:
        misses += [f"lab performance {lab['performance']:.0f} < 100"] if lab["performance"] < 100 else []
        misses += [f"lab TBT {lab['tbt']:.0f} ms > 50"] if lab["tbt"] > 50 else []
        misses += [f"lab main-thread {lab['main'] / 1000:.2f} s > 0.6"] if lab["main"] > 600 else []
    if slow and slow["tbt"] > 200:
        misses.append(f"lab TBT at 8× CPU {slow['tbt']:.0f} ms > 200")
    for name, m in results.items():
        misses += [f"{name} {c} {m[c]:.0f} < 100" for c in ("accessibility", "best-practices", "seo") if m[c] < 100]
    print("\nTargets: " + ("all met" if not misses else "missed — " + "; ".join(misses)))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
