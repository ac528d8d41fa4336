"""Run the hostile corpus (model_mutations.py) in child processes and count the outcomes by class.

    python tests/fuzz/mutation_pass.py [--code DIR] [--work DIR] [--only SUBSTRING] [--ids FILE]
                                       [--sample N] [--json FILE]

``--code`` is the checkout whose ``generator`` runs (default: this one), so a pass can run against
an older commit exported elsewhere. ``--sample N`` runs every Nth case of each area (a pass over
all 519 cases costs about 15 minutes of CPU in the builds); ``--ids FILE`` runs the cases a file names, one id a
line (the cases a previous pass flagged, say). Each case runs ``python -m generator ARGV`` in its
own copy of the base site, in its own process group, with only the labs it touches: a case that
edits one lab's files builds that lab (and the labs its files name by ``../``); a case that edits
anything else, or nothing, keeps them all. It is classed as one of:

  error       exit 1 or 2 with clear errors, as the case expects (or allows)
  ok          exit 0, as the case expects (or allows), and its check holds
  traceback   a Python traceback, or an exit code other than 0, 1, 2
  hang        no progress (a blocked process: no CPU for 20 s) or 60 s of CPU
  blow-up     CPU over 3× the command's baseline + 2 s, memory over 3× its baseline and 1 GB,
              or a site 20 MB larger than the base site's
  silent      exit 0 where the input is wrong (or a check failed): a wrong result, no word said
  unclear     exit 1 without a path:line:col line where the case has a line to point at
  false-alarm exit 1 where the input is fine
  leak        a marker of outside/ (or /etc/passwd) in the site, or a file outside content/ changed

A case may be in several classes (a leak that is also silent); the table counts each class.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_mutations as corpus  # noqa: E402

POSITIONED = re.compile(r"^\S[^:]*:\d+:\d+: error: \S", re.M)
CLEAR = re.compile(r"^(\S[^:]*: )?error: \S|^labs [\w ]*: error: \S", re.M)
CPU_LIMIT = 60  # s
BLOCKED = 20  # s without CPU while running: a process waiting on something that never comes
CLASSES = ("error", "ok", "traceback", "hang", "blow-up", "silent", "unclear", "false-alarm", "leak")


def _group_cpu(pgid: int) -> float:
    """CPU seconds of every live process of the group (user + system)."""
    total = 0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def run(argv: list[str], cwd: Path, env: dict) -> dict:
    """One child: exit code, output, CPU, peak memory and whether it was stopped for hanging."""
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT, CPU_LIMIT + 5))
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))

    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "generator", *argv], cwd=cwd, env=env, stdout=out, stderr=err,
                             stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=limits)
    hung, last_cpu, last_change = None, -1.0, time.monotonic()
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.25)
        cpu = _group_cpu(child.pid)
        if cpu > last_cpu + 0.01:
            last_cpu, last_change = cpu, time.monotonic()
        elif time.monotonic() - last_change > BLOCKED:
            hung = f"blocked: no CPU for {BLOCKED} s"
        if time.monotonic() - started > 900:
            hung = "still running after 900 s"
        if hung:
            os.killpg(child.pid, signal.SIGKILL)
            pid, status, usage = os.wait4(child.pid, 0)
            break
    try:
        os.killpg(child.pid, signal.SIGKILL)  # a worker left behind
    except ProcessLookupError:
        pass
    out.seek(0)
    err.seek(0)
    code = os.waitstatus_to_exitcode(status)
    if code in (-signal.SIGXCPU, -signal.SIGKILL) and not hung:
        hung = f"stopped at {CPU_LIMIT} s of CPU"
    return {"code": code, "out": out.read().decode("utf-8", "replace"), "err": err.read().decode("utf-8", "replace"),
            "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024, "wall": time.monotonic() - started,
            "hung": hung}


def _tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _site_leaks(site: Path) -> list[str]:
    found = []
    if not site.is_dir():
        return found
    for path in site.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path.relative_to(site)} holds {m!r}" for m in corpus.MARKERS if m.encode() in data]
    return found


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def _signature(folder: Path) -> dict[str, tuple]:
    """What each entry under ``folder`` is, without following links: enough to see what an edit changed."""
    found = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(top, name)
            rel = path.relative_to(folder).as_posix()
            st = path.lstat()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = ("dir",)
            elif st.st_size <= 1 << 21 and path.is_file():
                found[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                found[rel] = ("other", st.st_size, st.st_ino, st.st_mode)
    return found


def prune(case: corpus.Case, base_content: dict[str, tuple]) -> list[str]:
    """Remove the labs the mutation left alone when it edited only labs; return the labs kept."""
    labs_dir = case.path("content/labs")
    now = _signature(case.path("content"))
    changed = {rel for rel in set(now) | set(base_content) if now.get(rel) != base_content.get(rel)}
    labs = sorted(p.name for p in labs_dir.iterdir() if p.is_dir())
    touched = {rel.split("/")[1] for rel in changed if rel.startswith("labs/") and rel.count("/") >= 1}
    if not touched or any(not rel.startswith("labs/") for rel in changed):
        return labs
    keep = set(touched)
    for lab in touched:  # a lab that names another's folder (vocabulary: ../tokdemo) needs it
        for file in (labs_dir / lab).glob("*.yaml"):
            small = file.is_file() and file.stat().st_size < 1 << 20
            text = file.read_text(encoding="utf-8", errors="replace") if small else ""
            keep |= {other for other in labs if f"../{other}" in text}
    for lab in labs:
        if lab not in keep:
            shutil.rmtree(labs_dir / lab)
    return sorted(keep & set(labs))


def classify(m: corpus.Mutation, result: dict, baseline: dict, base_site: int, case: corpus.Case,
             outside_before: str) -> tuple[list[str], str]:
    classes, notes = [], []
    code, text = result["code"], result["out"] + result["err"]
    if result["hung"]:
        return ["hang"], result["hung"]
    if "Traceback (most recent call last)" in text or code not in (0, 1, 2):
        last = [line for line in result["err"].splitlines() if line.strip()][-1:] or [f"exit {code}"]
        classes.append("traceback")
        notes.append(last[0][:200])
    base = baseline[m.argv[0]]
    if result["cpu"] > 3 * base["cpu"] + 2 or (result["rss_mb"] > 3 * base["rss_mb"] and result["rss_mb"] > 1024):
        classes.append("blow-up")
        notes.append(f"{result['cpu']:.1f} s CPU, {result['rss_mb']:.0f} MB (baseline {base['cpu']:.1f} s, "
                     f"{base['rss_mb']:.0f} MB)")
    size = _size(case.path("site"))
    if size > base_site + 20_000_000:
        classes.append("blow-up")
        notes.append(f"site of {size / 1e6:.0f} MB")
    leaks = _site_leaks(case.path("site"))
    if _tree_hash(case.path("outside")) != outside_before:
        leaks.append("a file in outside/ changed")
    if leaks:
        classes.append("leak")
        notes.append(leaks[0])
    if "traceback" not in classes:
        if code == 0:
            problem = m.check(case) if m.check else None
            if m.expect == "error" or problem:
                classes.append("silent")
                notes.append(problem or "exit 0")
            else:
                classes.append("ok")
        elif code in (1, 2):
            clear = POSITIONED.search(result["err"]) if m.positioned and code == 1 else (
                CLEAR.search(result["err"]) or POSITIONED.search(result["err"]))
            if m.expect == "ok":
                classes.append("false-alarm")
                notes.append(next(iter(result["err"].splitlines()), "")[:200])
            elif not clear:
                classes.append("unclear")
                notes.append(next((line for line in result["err"].splitlines() if "error" in line),
                                  result["err"][:200])[:200])
            else:
                classes.append("error")
    return classes, "; ".join(notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, default=corpus.ROOT, help="checkout whose generator/ runs")
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--only", default="", help="run only the cases whose id contains this")
    parser.add_argument("--ids", type=Path, default=None, help="run only the cases this file names, one a line")
    parser.add_argument("--sample", type=int, default=1, help="run every Nth case of each area (default: all)")
    parser.add_argument("--json", type=Path, default=None, help="write every case's outcome here")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="mutation-pass-"))
    work.mkdir(parents=True, exist_ok=True)
    code_root = args.code.resolve()
    print(f"code: {code_root}; work: {work}; load average {os.getloadavg()[0]:.1f}", flush=True)
    base = corpus.make_base(work / "base", code_root)
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    baseline, site_size = {}, 0
    for command, extra in (("build", ["build"]), ("embed", ["embed", "--model", str(corpus.MINILM)]),
                           ("next", ["next", "Hello", "--top", "3"])):
        runs = []
        for _ in range(2):
            case = corpus.copy_case(base, work / "cases" / "baseline")
            runs.append(run(extra, case.root, env))
            assert runs[-1]["code"] == 0, runs[-1]["err"]
            site_size = max(site_size, _size(case.path("site")))
        baseline[command] = {"cpu": max(r["cpu"] for r in runs), "rss_mb": max(r["rss_mb"] for r in runs)}
    print("baseline:", json.dumps(baseline), f"site {site_size / 1e6:.1f} MB", flush=True)
    outside_before = _tree_hash(base / "outside")
    counts = {area: collections.Counter() for area in ("all",) + tuple(dict.fromkeys(m.area for m in corpus.CASES))}
    outcomes = []
    wanted = set(args.ids.read_text(encoding="utf-8").split()) if args.ids else None
    seen = collections.Counter()
    cases = []
    for m in corpus.CASES:
        seen[m.area] += 1
        if args.only in m.id and (wanted is None or m.id in wanted) and (seen[m.area] - 1) % args.sample == 0:
            cases.append(m)
    base_content = _signature(base / "content")
    for i, m in enumerate(cases):
        case = corpus.copy_case(base, work / "cases" / "case")
        try:
            m.apply(case)
        except Exception as exc:  # the corpus itself is wrong: say so, do not count it
            print(f"[{i + 1}/{len(cases)}] {m.id}: cannot apply: {type(exc).__name__}: {exc}", flush=True)
            continue
        kept = prune(case, base_content)
        env_case = {**env, **{k: v.replace("{root}", str(case.root)) for k, v in m.env.items()}}
        result = run(list(m.argv), case.root, env_case)
        classes, note = classify(m, result, baseline, site_size, case, outside_before)
        for cls in classes:
            counts["all"][cls] += 1
            counts[m.area][cls] += 1
        flag = "" if set(classes) <= {"error", "ok"} else "  <<<"
        print(f"[{i + 1}/{len(cases)}] {m.id}: {', '.join(classes)} (exit {result['code']}, {result['cpu']:.1f} s CPU, "
              f"{result['rss_mb']:.0f} MB){' — ' + note if note else ''}{flag}", flush=True)
        outcomes.append({"id": m.id, "area": m.area, "expect": m.expect, "classes": classes, "note": note,
                         "labs": kept, "code": result["code"], "cpu": round(result["cpu"], 2), "rss_mb": round(result["rss_mb"]),
                         "stderr": result["err"][-2000:]})
        shutil.rmtree(case.root, ignore_errors=True)
    print(f"\n{len(outcomes)} mutations; load average {os.getloadavg()[0]:.1f}")
    print(f"{'area':<16}" + "".join(f"{c:>12}" for c in CLASSES))
    for area, counter in counts.items():
        print(f"{area:<16}" + "".join(f"{counter[c]:>12}" for c in CLASSES))
    if args.json:
        args.json.write_text(json.dumps({"baseline": baseline, "counts": {a: dict(c) for a, c in counts.items()},
                                         "cases": outcomes}, indent=1), encoding="utf-8")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
