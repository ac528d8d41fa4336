"""Build time and peak memory for sites of N synthetic labs.

Each synthetic lab is a copy of the shipped attention lab under a new slug and number, so
every lab really runs the attention core, renders Markdown, math and code, and is link-checked.

    python benchmarks/bench_build.py [--sizes 1 10 100 1000] [--repeats 3]

Where MkDocs is installed (``pip install mkdocs``), the same run also builds 1000 plain
Markdown pages (the lab's prose files, copied) with ``mkdocs build`` as the reference, and
prints the ratio side by side.

Each build runs in a fresh subprocess (so the memory figure is that build's alone) and the
median of the repeats is reported, next to the per-lab cost. Peak memory is the child's
maximum resident set size (``ru_maxrss``), which includes the Python interpreter itself.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path
    from generator.build import build
    t = time.perf_counter()
    result = build(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "pages": result.pages,
                      "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
    """
)


def make_content(folder: Path, n_labs: int) -> Path:
    """A content folder with ``n_labs`` copies of the attention lab."""
    content = folder / "content"
    source = ROOT / "content"
    (content / "labs").mkdir(parents=True)
    site = (source / "site.yaml").read_text(encoding="utf-8")
    site = site.split("\nlabs:")[0] + "\nlabs:\n" + "".join(f"  - lab-{i:04d}\n" for i in range(n_labs))
    (content / "site.yaml").write_text(site, encoding="utf-8")
    for i in range(n_labs):
        target = content / "labs" / f"lab-{i:04d}"
        shutil.copytree(source / "labs" / "attention", target)
        lab_yaml = target / "lab.yaml"
        text = lab_yaml.read_text(encoding="utf-8")
        lines = [f"number: {i + 1}" if line.startswith("number:") else line for line in text.splitlines()]
        lab_yaml.write_text("\n".join(lines) + "\n", encoding="utf-8")
        for f in target.glob("*"):  # links to the lab itself must follow its new slug
            f.write_text(f.read_text(encoding="utf-8").replace("lab:attention", f"lab:lab-{i:04d}"), encoding="utf-8")
    return content


def run_once(content: Path, output: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(content), str(ROOT / "theme"), str(output)],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"build failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def mkdocs_reference(n_pages: int, repeats: int) -> float | None:
    """Median seconds for ``mkdocs build`` of ``n_pages`` plain Markdown pages, or None."""
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        return None
    prose = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "content/labs/attention").glob("*.md")))
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for i in range(n_pages):
            (docs / f"page-{i:04d}.md").write_text(f"# Page {i}\n\n{prose}", encoding="utf-8")
        (Path(tmp) / "mkdocs.yml").write_text("site_name: Reference\nmarkdown_extensions: [fenced_code, tables, codehilite]\n")
        for _ in range(repeats):
            proc = subprocess.run([sys.executable, "-c", "import time,subprocess,sys;t=time.perf_counter();"
                                   "subprocess.run([sys.executable,'-m','mkdocs','build','-q'],check=True);"
                                   "print(time.perf_counter()-t)"], cwd=tmp, capture_output=True, text=True, check=True)
            times.append(float(proc.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100, 1000])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            content = make_content(Path(tmp), n)
            runs = [run_once(content, Path(tmp) / "site") for _ in range(args.repeats)]
        seconds = statistics.median(r["seconds"] for r in runs)
        peak = statistics.median(r["maxrss_kib"] for r in runs) / 1024
        rows.append((n, runs[0]["pages"], seconds, seconds / n * 1000, min(r["seconds"] for r in runs),
                     max(r["seconds"] for r in runs), peak))
        print(f"  {n} labs: {seconds:.2f} s", file=sys.stderr, flush=True)
    print(f"\nmedian of {args.repeats} builds each, fresh process per build\n")
    print("| labs | pages | build (s, median) | per lab (ms) | spread (s) | peak RSS (MiB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, pages, s, per, lo, hi, peak in rows:
        print(f"| {n} | {pages} | {s:.2f} | {per:.1f} | {lo:.2f}–{hi:.2f} | {peak:.0f} |")
    biggest = rows[-1]
    reference = mkdocs_reference(biggest[0], args.repeats)
    if reference is None:
        print("\n(MkDocs not installed: no reference run)")
    else:
        print(f"\nreference: mkdocs build of {biggest[0]} plain Markdown pages: {reference:.2f} s (median); "
              f"labs build of {biggest[0]} labs: {biggest[2]:.2f} s; ratio labs/mkdocs = {biggest[2] / reference:.2f}")


if __name__ == "__main__":
    main()
