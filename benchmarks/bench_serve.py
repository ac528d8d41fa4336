"""Time from saving a file to `labs serve` serving the rebuilt page, as the site grows.

    python benchmarks/bench_serve.py [--sizes 1 100 1000] [--edits 9]

For each size, a temporary content folder holds that many copies of content/labs/attention
(slugs lab-0001, lab-0002, …, numbered 0, 1, …) listed in site.yaml. The real command
(`python -m generator serve --port 0`) runs on it in a subprocess. Each edit rewrites the
middle lab's gist.md with a new sentence; the clock starts when the file is closed and stops
when the server's event stream tells that page to reload (it does so only once the new build
is the one being served); a GET then checks the sentence is on the page. The first edit warms
up and is not counted. Between edits the benchmark waits for the background copy on disk
(--output) to catch up, as an author pausing to look would, and reports that time too.

Prints a Markdown table. The target is a median of at most 150 ms, flat as the site grows.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

REPO = Path(__file__).absolute().parents[1]
TARGET_MS = 150


def make_content(dest: Path, n_labs: int) -> tuple[Path, list[str]]:
    content = dest / "content"
    (content / "labs").mkdir(parents=True)
    slugs = [f"lab-{i:04d}" for i in range(1, n_labs + 1)]
    site = (REPO / "content/site.yaml").read_text(encoding="utf-8")
    site = re.sub(r"(?ms)^labs:.*", "labs:\n" + "".join(f"  - {s}\n" for s in slugs), site)
    (content / "site.yaml").write_text(site, encoding="utf-8")
    for number, slug in enumerate(slugs):  # lab numbers are 0–999
        folder = content / "labs" / slug
        shutil.copytree(REPO / "content/labs/attention", folder)
        lab = folder / "lab.yaml"
        lab.write_text(re.sub(r"(?m)^number: .*$", f"number: {number}", lab.read_text(encoding="utf-8")),
                       encoding="utf-8")
    return content, slugs


class Serve:
    def __init__(self, content: Path, output: Path):
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "generator", "serve", "--port", "0", "--content", str(content),
             "--theme", str(REPO / "theme"), "--output", str(output)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True).start()
        for line in self.proc.stdout:
            self.lines.append(line)
            m = re.search(r"serving (http://\S+/)", line)
            if m:
                self.netloc = urlsplit(m.group(1)).netloc
                break
        else:
            raise SystemExit("the server did not start:\n" + "".join(self.lines))
        threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True).start()
        self.startup = time.perf_counter() - started

    def get(self, path: str) -> bytes:
        conn = http.client.HTTPConnection(self.netloc, timeout=60)
        conn.request("GET", path)
        body = conn.getresponse().read()
        conn.close()
        return body

    def events(self, path: str, etag: str) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(self.netloc, timeout=60)
        conn.request("GET", f"/__labs__/events?path={quote(path, safe='')}&etag={quote(etag, safe='')}")
        return conn.getresponse()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(120)


def next_state(stream: http.client.HTTPResponse) -> dict:
    while True:
        line = stream.fp.readline()
        if not line:
            raise SystemExit("event stream closed")
        if line.startswith(b"data: "):
            return json.loads(line[6:])


def on_disk_has(site: Path, page: Path, sentence: str) -> bool:
    """The page on disk has the sentence, and the atomic swap has cleaned up after itself."""
    if any(p.name.startswith(f".{site.name}-") for p in site.parent.iterdir()):
        return False
    try:
        return sentence.encode() in page.read_bytes()
    except FileNotFoundError:  # between the two renames of the swap
        return False


def measure(n_labs: int, edits: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        content, slugs = make_content(Path(tmp), n_labs)
        slug = slugs[len(slugs) // 2]
        page_path = f"/labs/{slug}/"
        gist = content / "labs" / slug / "gist.md"
        on_disk = Path(tmp) / "site" / "labs" / slug / "index.html"
        original = gist.read_text(encoding="utf-8")
        server = Serve(content, Path(tmp) / "site")
        served, written = [], []
        try:
            for k in range(edits + 1):
                etag = re.search(rb'data-etag="([^"]+)"', server.get(page_path)).group(1).decode()
                stream = server.events(page_path, etag)
                state = next_state(stream)
                if state != {"reload": False, "errors": []}:
                    raise SystemExit(f"the server does not serve a good build: {state}")
                sentence = f"Edit number {k} of the benchmark."
                with gist.open("w", encoding="utf-8") as f:
                    f.write(original + f"\n{sentence}\n")
                saved = time.perf_counter()
                while not next_state(stream)["reload"]:
                    pass
                elapsed = time.perf_counter() - saved
                stream.close()
                assert sentence.encode() in server.get(page_path), "the reload came before the new page"
                while not on_disk_has(Path(tmp) / "site", on_disk, sentence):
                    if time.perf_counter() - saved > 120:
                        raise SystemExit("the site was not written to disk")
                    time.sleep(0.005)
                if k:  # the first edit warms up
                    served.append(elapsed * 1000)
                    written.append((time.perf_counter() - saved) * 1000)
        finally:
            code = server.stop()
        if code != 0:
            raise SystemExit(f"serve exited with {code}:\n" + "".join(server.lines))
        rebuilds = [float(m.group(1)) * 1000 for line in server.lines
                    if (m := re.search(r"→ rebuilt .* in (\d+\.\d+) s", line))]
        return {"labs": n_labs, "startup": server.startup, "served": served, "written": written,
                "rebuild": rebuilds[1:]}


def quartiles(values: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument("--edits", type=int, default=9)
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        print(f"{n} labs …", file=sys.stderr, flush=True)
        rows.append(measure(n, args.edits))
    print("| labs | save → page served, median | p25 – p75 | min – max | server's rebuild, median "
          "| save → on disk, median | first build + start |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        s = r["served"]
        lo, hi = quartiles(s)
        print(f"| {r['labs']} | {statistics.median(s):.0f} ms | {lo:.0f} – {hi:.0f} ms "
              f"| {min(s):.0f} – {max(s):.0f} ms "
              f"| {statistics.median(r['rebuild']):.0f} ms | {statistics.median(r['written']):.0f} ms "
              f"| {r['startup']:.1f} s |")
    worst = max(statistics.median(r["served"]) for r in rows)
    print(f"\n{len(rows[0]['served'])} edits per size after one warm-up; target: median ≤ {TARGET_MS} ms "
          f"({'met' if worst <= TARGET_MS else 'NOT met'}: worst median {worst:.0f} ms).")


if __name__ == "__main__":
    main()
