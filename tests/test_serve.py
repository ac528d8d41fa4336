"""``labs serve``: incremental rebuilds equal full builds, requests stay inside the site, and a
person with the page open sees edits and errors without touching the browser.

The server tests run the real command in a subprocess (``python -m generator serve --port 0``)
on a copy of ``content/``, read the URL it prints, and talk to it over raw HTTP or Chromium.
Chromium must be installed (``apt-get install -y chromium``); these tests fail without it,
they never skip.
"""

from __future__ import annotations

import http.client
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from conftest import signals_at_default

from generator import sitefolder
from generator.build import build_files
from generator.errors import ContentError
from generator.serve.incremental import SiteBuilder
from generator.kinds import get_kind
from generator.serve.server import DevServer
from generator.serve.httpd import CSP, LiveHTTPServer, LiveSite, inject_reload, resolve_path
from generator.serve.mirror import Mirror
from generator.serve.watch import ChangeQueue, is_editor_noise

REPO = Path(__file__).absolute().parents[1]
THEME = REPO / "theme"
LAB = "content/labs/attention"
TAB_YAML = "questions:\n  - type: single\n\tprompt: tab\n"  # error at line 3, column 1
SECRET = "secret-token-7c1f"


# -- fixtures: content folders ----------------------------------------------------------------

def copy_content(dest: Path, slugs=("attention",), extra_topic: bool = False) -> Path:
    """``content/`` copied to ``dest/content`` with the attention lab under each slug (numbered 1, 2, …)."""
    content = dest / "content"
    content.mkdir(parents=True)
    site = yaml.safe_load((REPO / "content/site.yaml").read_text(encoding="utf-8"))
    site["labs"] = list(slugs)
    if extra_topic:
        site["topics"].append({"slug": "second-topic", "title": "Second topic", "blurb": "More labs."})
    (content / "site.yaml").write_text(yaml.safe_dump(site, sort_keys=False, allow_unicode=True), encoding="utf-8")
    if (REPO / "content/models").is_dir():  # the model bundle lab 07's in-page model names
        shutil.copytree(REPO / "content/models", content / "models")
    for number, slug in enumerate(slugs, start=1):
        folder = content / "labs" / slug
        shutil.copytree(REPO / LAB, folder)
        lab_yaml = folder / "lab.yaml"
        lab_yaml.write_text(re.sub(r"(?m)^number: .*$", f"number: {number}", lab_yaml.read_text(encoding="utf-8")),
                            encoding="utf-8")
    return content


def edit(path: Path, old: str, new: str) -> Path:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


# -- the incremental build --------------------------------------------------------------------

@pytest.fixture
def three_labs(tmp_path):
    content = copy_content(tmp_path, ("alpha", "beta", "gamma"), extra_topic=True)
    theme = tmp_path / "theme"
    shutil.copytree(THEME, theme)
    return content, theme


def _quiz_prompt(c, t):
    return [edit(c / "labs/beta/quiz.yaml", "what do one word's", "what do a word's")]


def _faq_answer(c, t):
    return [edit(c / "labs/alpha/faq.yaml", "A weighted mix of", "A weighted mixture of")]


def _gist_markdown(c, t):
    return [edit(c / "labs/gamma/gist.md", "At the first layer", "At the first layer (edited)")]


def _widget_prompt(c, t):
    return [edit(c / "labs/beta/lab.yaml", "Click a word (or use", "Pick a word (or use")]


def _lab_title(c, t):
    return [edit(c / "labs/gamma/lab.yaml", "title: Attention", "title: Attention, again")]


def _move_topic(c, t):
    return [edit(c / "labs/alpha/lab.yaml", "topic: llm-engineering", "topic: second-topic")]


def _site_title(c, t):
    return [edit(c / "site.yaml", "title: Attention Labs", "title: Attention Labs, edited")]


def _word_question(c, t):
    return [edit(c / "labs/beta/quiz.yaml", "which word does **sat** attend", "which word does **sat** look at")]


def _model_cache(c, t):
    cache = c / "labs/beta/real-heads.json"
    cache.write_text(cache.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # same heads, new bytes
    return [cache]


def _template(c, t):
    return [edit(t / "templates/base.html", "</footer>", "</footer>\n<!-- edited -->")]


def _stylesheet(c, t):
    css = sorted((t / "static/css").glob("*.css"))
    if not css:
        css = [t / "static/css/zz-test.css"]
        css[0].write_text("", encoding="utf-8")
    with css[0].open("a", encoding="utf-8") as f:
        f.write("\n.test-edit { color: red; }\n")
    return css[:1]


def _add_lab(c, t):
    shutil.copytree(c / "labs/beta", c / "labs/delta")
    edit(c / "labs/delta/lab.yaml", "number: 2", "number: 4")
    return [c / "labs/delta"]


def _remove_lab(c, t):
    shutil.rmtree(c / "labs/gamma")
    return [c / "labs/gamma", edit(c / "site.yaml", "- gamma\n", "")]


def _touch(c, t):
    p = c / "labs/beta/quiz.yaml"
    p.write_bytes(p.read_bytes())
    return [p]


# id, edit, labs whose NumPy precomputation must run, pages that must be rendered (None: all)
EDITS = [
    # The index and topic pages show a card per lab: they are rendered again only when a card changed.
    # A lab page's pager reads its neighbours' number and title: only an edit of those renders them.
    ("quiz-prompt", _quiz_prompt, (), 1),  # beta alone
    ("faq-answer", _faq_answer, (), 1),
    ("gist-markdown", _gist_markdown, (), 1),
    ("widget-prompt", _widget_prompt, ("beta",), 1),
    ("word-question", _word_question, ("beta",), 1),  # its answer key is checked against the weights
    ("model-cache", _model_cache, ("beta",), 1),
    ("lab-title", _lab_title, (), 4),  # gamma + beta (its pager), and the title on its card: topic, index
    ("move-topic", _move_topic, (), 4),  # alpha, both topics, index
    ("site-title", _site_title, (), None),
    ("theme-template", _template, (), None),
    ("theme-stylesheet", _stylesheet, (), None),
    ("add-lab", _add_lab, ("delta",), None),
    ("remove-lab", _remove_lab, (), None),
    ("touch-unchanged", _touch, (), 0),
]


# Every edit as the watcher reports it (the changed paths), and a few with no paths at all
# (then every file is hashed again, and the caches must still find what is unchanged).
CASES = [pytest.param(*edit_, True, id=edit_[0]) for edit_ in EDITS] + [
    pytest.param(*edit_, False, id=f"{edit_[0]}-no-paths") for edit_ in EDITS
    if edit_[0] in ("quiz-prompt", "model-cache", "theme-template", "add-lab", "touch-unchanged")]


@pytest.mark.parametrize("name,make_edit,computed,rendered,hinted", CASES)
def test_rebuild_equals_full_build(three_labs, name, make_edit, computed, rendered, hinted):
    content, theme = three_labs
    builder = SiteBuilder(content, theme)
    first = builder.rebuild()  # equal to a full build: see test_unchanged_lab_is_not_recomputed
    assert sorted(first.labs_computed) == ["alpha", "beta", "gamma"]
    changed = make_edit(content, theme)
    result = builder.rebuild(changed if hinted else None)
    expected = build_files(content, theme)[0]
    assert result.files == expected  # byte for byte, every file
    assert result.labs_computed == computed
    html_pages = sum(p.endswith(".html") for p in expected)
    assert result.pages_rendered == (html_pages if rendered is None else rendered)
    assert result.changed == {p for p in set(first.files) | set(expected) if first.files.get(p) != expected.get(p)}


def _link_to_shared_file(c):
    (c / "shared").mkdir()
    shutil.move(c / "labs/alpha/gist.md", c / "shared/gist.md")
    (c / "labs/alpha/gist.md").symlink_to("../../shared/gist.md")
    return c / "shared/gist.md"


def _link_to_shared_folder(c):
    (c / "shared").mkdir()
    shutil.move(c / "labs/alpha/gist.md", c / "shared/gist.md")
    (c / "labs/alpha/parts").symlink_to("../../shared", target_is_directory=True)
    edit(c / "labs/alpha/lab.yaml", "file: gist.md", "file: parts/gist.md")
    return c / "shared/gist.md"


def _borrow_from_another_lab(c):
    (c / "labs/alpha/gist.md").unlink()
    (c / "labs/alpha/gist.md").symlink_to("../beta/gist.md")
    return c / "labs/beta/gist.md"


@pytest.mark.parametrize("link", [_link_to_shared_file, _link_to_shared_folder, _borrow_from_another_lab],
                         ids=["file-link", "folder-link", "borrowed"])
def test_editing_what_a_link_in_a_lab_points_to_rebuilds_that_lab(three_labs, link):
    content, theme = three_labs
    target = link(content)
    builder = SiteBuilder(content, theme)
    builder.rebuild()
    edit(target, "At the first layer", "At the first layer (through a link)")
    result = builder.rebuild([target])  # the path the watcher reports: the file itself
    assert result.files == build_files(content, theme)[0]
    assert b"(through a link)" in result.files["labs/alpha/index.html"]
    assert "alpha" in result.labs_changed


def test_cards_are_rendered_again_when_what_the_theme_shows_of_a_lab_changes(three_labs):
    """The index and topic pages are kept across a rebuild only while everything they read of the
    changed labs is the same, whatever a custom theme's card shows (here: the tagline as well)."""
    content, theme = three_labs
    card = theme / "templates/partials/lab_card.html"
    card.write_text(card.read_text(encoding="utf-8").replace("<p>{{ card_lab.summary }}</p>",
                                                             "<p>{{ card_lab.summary }}</p><p>{{ card_lab.tagline }}</p>"),
                    encoding="utf-8")
    builder = SiteBuilder(content, theme)
    builder.rebuild()
    yaml_path = content / "labs/gamma/lab.yaml"
    text = yaml_path.read_text(encoding="utf-8")
    yaml_path.write_text(text.replace("tagline: >-\n  ", "tagline: >-\n  Edited. ", 1), encoding="utf-8")
    result = builder.rebuild([yaml_path])
    assert result.files == build_files(content, theme)[0]
    assert b"Edited. " in result.files["index.html"] and b"Edited. " in result.files["topics/llm-engineering/index.html"]
    assert result.pages_rendered == 3  # gamma (beta's pager reads no tagline), the topic, the index
    assert "tagline" in builder.shown_fields


def test_editing_one_labs_gist_recomputes_nothing_and_renders_that_lab_alone(three_labs, monkeypatch):
    """A gist is prose: no lab computes again, and the neighbours' pages (their pager reads this
    lab's number and title only) are kept; the site is still byte for byte a full build's."""
    content, theme = three_labs
    builder = SiteBuilder(content, theme)
    first = builder.rebuild()
    rendered = []
    render_lab = SiteBuilder._render_lab
    monkeypatch.setattr(SiteBuilder, "_render_lab", lambda self, r, i, p: rendered.append(i) or render_lab(self, r, i, p))
    result = builder.rebuild([edit(content / "labs/beta/gist.md", "At the first layer", "At the first layer (edited)")])
    assert (result.labs_computed, result.labs_changed, rendered, result.pages_rendered) == ((), ("beta",), [1], 1)
    assert "labs/beta/index.html" in result.changed
    assert not any(p.startswith(("labs/alpha/", "labs/gamma/")) for p in result.changed), result.changed
    assert result.files == build_files(content, theme)[0] and result.files != first.files


def test_unchanged_lab_is_not_recomputed(three_labs, monkeypatch):
    content, theme = three_labs
    calls = []
    kind = get_kind("attention")
    real = kind.compute
    monkeypatch.setattr(kind, "compute", lambda lab, *a, **kw: calls.append(lab.slug) or real(lab, *a, **kw))
    builder = SiteBuilder(content, theme)
    assert builder.rebuild().files == build_files(content, theme)[0]
    assert sorted(calls) == ["alpha", "alpha", "beta", "beta", "gamma", "gamma"]  # ours, then build_files'
    calls.clear()
    calls.clear()
    builder.rebuild(_quiz_prompt(content, theme) + _gist_markdown(content, theme) + _template(content, theme))
    assert calls == []  # prose, quiz and theme edits reuse every computed lab
    builder.rebuild(_widget_prompt(content, theme))
    assert calls == ["beta"]
    calls.clear()
    edit(content / "labs/beta/lab.yaml", "Pick a word (or use", "Click a word (or use")  # undo: cached by content
    builder.rebuild([content / "labs/beta/lab.yaml"])
    assert calls == []
    assert builder.rebuild().files == build_files(content, theme)[0]


def test_errors_are_those_of_a_full_build_and_a_fix_recovers(three_labs):
    content, theme = three_labs
    builder = SiteBuilder(content, theme)
    builder.rebuild()
    quiz = content / "labs/beta/quiz.yaml"
    good = quiz.read_text(encoding="utf-8")
    quiz.write_text(TAB_YAML, encoding="utf-8")
    edit(content / "labs/gamma/lab.yaml", "topic: llm-engineering", "topic: llm-engineerin")
    gist = edit(content / "labs/alpha/gist.md", "At the first layer", "[At the first layer](lab:beta#no-such-anchor)")
    with pytest.raises(ContentError) as incremental_error:
        builder.rebuild([quiz, content / "labs/gamma/lab.yaml", gist])
    with pytest.raises(ContentError) as full_error:
        build_files(content, theme)
    # Both compute and link-check the labs with load errors as far as they loaded (here finding
    # alpha's broken anchor in beta too): one rule, the same diagnostics in the same order.
    full = [str(d) for d in full_error.value.diagnostics]
    assert [str(d) for d in incremental_error.value.diagnostics] == full
    assert any("#no-such-anchor" in line for line in full)
    assert "content/labs/beta/quiz.yaml:3:1: error: invalid YAML" in str(incremental_error.value)
    quiz.write_text(good, encoding="utf-8")
    edit(content / "labs/gamma/lab.yaml", "topic: llm-engineerin", "topic: llm-engineering")
    with pytest.raises(ContentError) as incremental_error:  # content loads; the broken link is found later
        builder.rebuild([quiz, content / "labs/gamma/lab.yaml", gist])
    with pytest.raises(ContentError) as full_error:
        build_files(content, theme)
    assert [str(d) for d in incremental_error.value.diagnostics] == [str(d) for d in full_error.value.diagnostics]
    assert "#no-such-anchor" in str(incremental_error.value)
    edit(gist, "[At the first layer](lab:beta#no-such-anchor)", "At the first layer")
    result = builder.rebuild([gist])
    assert result.files == build_files(content, theme)[0]
    assert result.labs_computed == ()


def test_the_overlay_lists_every_mistake_the_terminal_of_labs_build_lists(three_labs, monkeypatch, capsys):
    """Load errors in two labs (one loads in part), and a link from a third to an anchor the one
    that loaded in part lacks: labs serve's overlay, its terminal and labs build's terminal say
    the same mistakes, line for line."""
    from conftest import run_labs

    content, theme = three_labs
    monkeypatch.chdir(content.parent)  # paths as an author types them, from the site's folder
    (content / "labs/beta/quiz.yaml").write_text(TAB_YAML, encoding="utf-8")
    edit(content / "labs/gamma/lab.yaml", "topic: llm-engineering", "topic: llm-engineerin")
    edit(content / "labs/alpha/gist.md", "At the first layer", "[At the first layer](lab:beta#no-such-anchor)")
    code, _, printed = run_labs(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 1 and printed[-1].endswith("errors; nothing was written")
    warned: list[str] = []
    server = DevServer(Path("content"), Path("theme"), None, report=lambda _: None, warn=warned.append)
    assert server.run_build(None) is None
    overlay = [f"{e['path']}:{e['line']}:{e['column']}: error: {e['message']}" for e in server.live.errors]
    assert overlay == printed[:-1]
    assert warned[1:] == printed[:-1]  # after "N errors in the site; nothing to serve until it builds"
    assert len(overlay) >= 3 and any("#no-such-anchor" in line for line in overlay)
    assert any("quiz.yaml:3:1: error: invalid YAML" in line for line in overlay)
    assert any("llm-engineerin" in line for line in overlay)


# -- pieces of the server ---------------------------------------------------------------------

SITE = {"index.html": b"", "labs/x/index.html": b"", "assets/site.css": b"", "404.html": b"", ".labs-build": b""}


@pytest.mark.parametrize("raw,expected", [
    ("/", (200, "index.html")),
    ("/?q=1", (200, "index.html")),
    ("/labs/x/", (200, "labs/x/index.html")),
    ("/labs/x/index.html", (200, "labs/x/index.html")),
    ("/labs/x", (301, "/labs/x/")),
    ("/labs/x?a=b", (301, "/labs/x/?a=b")),
    ("/assets/site.css", (200, "assets/site.css")),
    ("/labs/y/", (404, "")),
    ("/.labs-build", (404, "")),
    ("//index.html", (404, "")),
    ("/../index.html", (400, None)),
    ("/labs/../index.html", (400, None)),
    ("/./index.html", (400, None)),
    ("/%2e%2e/index.html", (400, None)),
    ("/%2E%2E/%2e%2E/etc/passwd", (400, None)),
    ("/labs%2fx/index.html", (400, None)),
    ("/labs%2Fx/index.html", (400, None)),
    ("/labs\\x\\index.html", (400, None)),
    ("/labs%5cx/index.html", (400, None)),
    ("/index.html%00", (400, None)),
    ("/index.html\0", (400, None)),
    ("/%0aindex.html", (400, None)),
    ("/%c0%ae%c0%ae/index.html", (400, None)),  # overlong UTF-8 for ".."
    ("/%252e%252e/index.html", (404, "")),  # decoded once only: a literal "%2e%2e" folder
    ("index.html", (400, None)),
    ("http://example.com/index.html", (400, None)),
], ids=lambda v: repr(v) if isinstance(v, str) else None)
def test_resolve_path(raw, expected):
    status, where = resolve_path(raw, SITE)
    assert status == expected[0]
    if expected[1] is not None:
        assert where == expected[1]


def test_reload_script_goes_before_the_last_body_end():
    page = b"<html><body><p>&lt;/body&gt;</p></BODY></html>"
    out = inject_reload(page, "e1")
    assert out == (b'<html><body><p>&lt;/body&gt;</p>'
                   b'<script src="/__labs__/reload.js" data-etag="e1" defer></script>\n</BODY></html>')
    assert inject_reload(b"<p>no body</p>", "e2").endswith(b'defer></script>\n')


@pytest.mark.parametrize("name,noise", [
    ("content/labs/x/quiz.yaml", False),
    ("content/labs/x/gist.md", False),
    ("theme/static/css/site.css", False),
    ("content/labs/x/.quiz.yaml.swp", True),
    ("content/labs/x/.#quiz.yaml", True),
    ("content/labs/x/#quiz.yaml#", True),
    ("content/labs/x/quiz.yaml~", True),
    ("content/labs/x/4913", True),
    ("content/labs/x/quiz.yaml.tmp", True),
    ("content/labs/x/quiz.yaml___jb_tmp___", True),
    ("content/.git/index", True),
], ids=lambda v: v if isinstance(v, str) else None)
def test_editor_noise_is_ignored(name, noise):
    assert is_editor_noise(Path("/w") / name, Path("/w")) is noise


def test_change_queue_hands_over_a_burst_as_one_batch():
    """What was added before a batch is taken comes in that batch; what comes after, in the next.
    Each step waits for what it can see (a batch handed over), not for a time."""
    changes = ChangeQueue(quiet=0.05, max_wait=1.0)
    batches: queue.Queue[set[str] | None] = queue.Queue()
    for name in ("a", "b", "c"):
        changes.add(name)

    def hand_over() -> None:
        for batch in iter(changes.take, None):
            batches.put(batch)

    worker = threading.Thread(target=hand_over)
    worker.start()
    try:
        assert batches.get(timeout=10) == {"a", "b", "c"}
        changes.add("d")
        assert batches.get(timeout=10) == {"d"}
    finally:
        changes.close()
        worker.join(10)
    assert not worker.is_alive() and batches.empty()


def test_change_queue_waits_for_quiet_but_not_past_its_longest_wait():
    """A steady stream of events is cut after ``max_wait`` (here the stream never pauses)."""
    changes = ChangeQueue(quiet=60, max_wait=0.2)
    changes.add("a")
    started = time.monotonic()
    assert changes.take() == {"a"}
    assert time.monotonic() - started < 30  # the quiet window (60 s) did not hold it
    changes.close()
    assert changes.take() is None


# -- the server, in a subprocess --------------------------------------------------------------

class Server:
    """``python -m generator serve --port 0`` with its output collected line by line."""

    def __init__(self, content: Path, output: Path, *extra: str):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "generator", "serve", "--port", "0", "--content", str(content),
             "--theme", str(THEME), "--output", str(output), *extra],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
            preexec_fn=signals_at_default)
        self.out: list[str] = []
        self.err: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        self._pumps = [threading.Thread(target=self._pump, args=(stream, sink), daemon=True)
                       for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for pump in self._pumps:
            pump.start()
        self.url = self.wait_for(r"serving (http://\S+/)", timeout=60).group(1)
        self.netloc = urlsplit(self.url).netloc

    def _pump(self, stream, sink: list[str]) -> None:
        for line in stream:
            sink.append(line.rstrip("\n"))
            self._lines.put(line)

    def wait_for(self, pattern: str, timeout: float = 30) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.out + self.err:
                m = re.search(pattern, line)
                if m:
                    return m
            try:
                self._lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
        raise AssertionError(f"no line matching {pattern!r}; stdout: {self.out}; stderr: {self.err}")

    def request(self, target: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.netloc, timeout=10)
        conn.putrequest(method, target, skip_host=False, skip_accept_encoding=True)
        conn.endheaders()
        response = conn.getresponse()
        body = response.read()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body

    def raw(self, target: str, host_header: str = "localhost") -> tuple[int, bytes]:
        """Send a request line byte for byte (no client normalises the path)."""
        host, port = self.netloc.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"GET " + target.encode("latin-1") + b" HTTP/1.1\r\nHost: " + host_header.encode()
                      + b"\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        status = int(data.split(b" ", 2)[1])
        return status, data

    def interrupt(self, timeout: float = 20) -> int:
        """Ctrl-C; the exit code, once all output has been read."""
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout)
        for pump in self._pumps:
            pump.join(timeout)
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def start_server():
    servers = []

    def start(content: Path, output: Path, *extra: str) -> Server:
        server = Server(content, output, *extra)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shared")
    (tmp / "secret.txt").write_text(SECRET, encoding="utf-8")
    server = Server(copy_content(tmp), tmp / "site")
    yield server, tmp
    server.close()


def open_page(browser, url: str):
    """A new tab at ``url`` that fails the test on any Content-Security-Policy violation: the
    reload script and its event stream must work under the site's own policy."""
    page = browser.new_page()
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(url)
    page.violations = violations
    return page


def test_served_pages_carry_the_reload_script_and_built_pages_do_not(shared_server, tmp_path):
    server, tmp = shared_server
    tag = b'<script src="/__labs__/reload.js" data-etag="'
    for target in ("/", "/labs/attention/", "/topics/llm-engineering/", "/no-such-page"):
        status, headers, body = server.request(target)
        assert body.count(tag) == 1, target
        assert body.index(tag) < body.lower().rindex(b"</body>"), target
    status, headers, body = server.request("/__labs__/reload.js")
    assert (status, headers["content-type"]) == (200, "application/javascript; charset=utf-8")
    assert b"EventSource" in body
    built = tmp_path / "built"
    run = subprocess.run([sys.executable, "-m", "generator", "build", "--content", str(tmp / "content"),
                          "--theme", str(THEME), "--output", str(built)],
                         cwd=REPO, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    pages = list(built.rglob("*.html"))
    assert len(pages) >= 4
    for page in pages:
        assert b"__labs__" not in page.read_bytes(), page


def test_responses_have_the_right_status_type_and_cache_headers(shared_server):
    server, _ = shared_server
    _, _, index = server.request("/")
    css = "/" + re.search(rb'assets/site\.[0-9a-f]{8}\.css', index).group().decode()
    js = "/" + re.search(rb'assets/site\.[0-9a-f]{8}\.js', index).group().decode()
    expected = [
        ("/", 200, "text/html; charset=utf-8"),
        ("/labs/attention/", 200, "text/html; charset=utf-8"),
        ("/labs/attention/index.html", 200, "text/html; charset=utf-8"),
        (css, 200, "text/css; charset=utf-8"),
        (js, 200, "application/javascript; charset=utf-8"),
        ("/assets/favicon.svg", 200, "image/svg+xml"),
        ("/sitemap.xml", 200, "application/xml"),
        ("/robots.txt", 200, "text/plain; charset=utf-8"),
        ("/no/such/page", 404, "text/html; charset=utf-8"),
        ("/.labs-build", 404, "text/html; charset=utf-8"),
    ]
    for target, status, ctype in expected:
        got_status, headers, body = server.request(target)
        assert (target, got_status, headers["content-type"]) == (target, status, ctype)
        assert headers["cache-control"] == "no-store"
        assert headers["content-security-policy"] == CSP
        assert int(headers["content-length"]) == len(body)
    _, _, not_found = server.request("/no/such/page")
    assert b"Page not found" in not_found  # the site's own 404.html
    status, headers, body = server.request("/labs/attention")
    assert (status, headers["location"]) == (301, "/labs/attention/")
    status, headers, body = server.request("/", method="HEAD")
    assert (status, body) == (200, b"") and int(headers["content-length"]) > 0
    assert server.raw("/", host_header=f"localhost:{server.netloc.rsplit(':', 1)[1]}")[0] == 200
    assert server.raw("/", host_header="attacker.example")[0] == 400  # a DNS name rebound to 127.0.0.1


TRAVERSALS = [
    "/../secret.txt",
    "/../../../../../../etc/passwd",
    "/labs/attention/../../../secret.txt",
    "/%2e%2e/secret.txt",
    "/%2E%2E/%2E%2E/%2E%2E/etc/passwd",
    "/labs/..%2f..%2fsecret.txt",
    "/..%2Fsecret.txt",
    "/..\\secret.txt",
    "/labs\\..\\..\\secret.txt",
    "/%5c..%5csecret.txt",
    "/secret.txt%00.html",
    "/%00",
    "/%252e%252e/secret.txt",
    "/%c0%ae%c0%ae/secret.txt",
    "//etc/passwd",
    "http://localhost/../secret.txt",
]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_paths_outside_the_site_are_refused(shared_server, target):
    server, _ = shared_server
    status, response = server.raw(target)
    assert status in (400, 404)
    assert SECRET.encode() not in response and b"root:" not in response


def test_sigint_stops_cleanly_with_exit_0_and_no_temp_folders(start_server, tmp_path):
    content = copy_content(tmp_path / "in")
    out = tmp_path / "out"
    server = start_server(content, out / "site")
    edit(content / "labs/attention/gist.md", "At the first layer", "At the first layer, edited,")
    # The gist is not on the cards: one page. On a busy machine the rescan that follows the first
    # build can be the one to find the edit, and says so.
    server.wait_for(r"changed (content/labs/attention/gist\.md|files during the first build) → rebuilt 1 lab, 1 page in "
                    r"\d+\.\d\d s")
    assert server.interrupt() == 0
    assert [p.name for p in out.iterdir()] == ["site"]  # no .site-new-*/.site-old-* left behind
    assert b"At the first layer, edited," in (out / "site/labs/attention/index.html").read_bytes()
    assert b"__labs__" not in (out / "site/labs/attention/index.html").read_bytes()
    assert server.out[-1] == "stopped"


@pytest.mark.parametrize("make", ["fifo", "dev-zero-link"])
def test_a_special_file_appearing_while_serving_is_refused_and_ctrl_c_still_stops(start_server, tmp_path, make):
    content = copy_content(tmp_path / "in")
    server = start_server(content, tmp_path / "out/site")
    special = content / "labs/attention/notes.md"
    if make == "fifo":
        os.mkfifo(special)
    else:
        special.symlink_to("/dev/zero")
    server.wait_for(r"^content/labs/attention/notes\.md:1:1: error: \S+ is (a named pipe \(FIFO\)|a character device)")
    special.unlink()
    edit(content / "labs/attention/gist.md", "At the first layer", "At the first layer, edited,")
    server.wait_for(r"changed content/labs/attention/\S+( and 1 more)? → rebuilt 1 lab")  # later rebuilds still work
    status, _, body = server.request("/labs/attention/")
    assert status == 200 and b"At the first layer, edited," in body
    if make == "fifo":
        os.mkfifo(special)
    else:
        special.symlink_to("/dev/zero")
    server.wait_for(r"notes\.md:1:1: error: .*not a regular file", timeout=30)
    started = time.monotonic()
    assert server.interrupt(timeout=5) == 0
    assert time.monotonic() - started < 2


def test_editing_another_labs_markdown_a_lab_links_to_rebuilds_both_while_serving(start_server, tmp_path):
    content = copy_content(tmp_path / "in", ("alpha", "beta"))
    (content / "labs/alpha/gist.md").unlink()
    (content / "labs/alpha/gist.md").symlink_to("../beta/gist.md")
    server = start_server(content, tmp_path / "out/site")
    for word in ("borrowed", "borrowed again"):  # the first edit may fall into the rescan after the first build
        seen = len(server.out)
        edit(content / "labs/beta/gist.md", "At the first layer", f"At the first layer, {word},")
        _await(lambda: any("→ rebuilt 2 labs" in line for line in server.out[seen:]), timeout=30,
               what=f"both labs rebuilt: {server.out}")
    assert re.search(r"^changed content/labs/beta/gist\.md → rebuilt 2 labs", server.out[-1])
    for slug in ("alpha", "beta"):
        status, _, body = server.request(f"/labs/{slug}/")
        assert status == 200 and b"At the first layer, borrowed again," in body
    assert server.interrupt() == 0


def test_a_refused_special_file_does_not_lose_the_edits_saved_with_it(tmp_path):
    content = copy_content(tmp_path, ("alpha", "beta"))
    warned: list[str] = []
    server = DevServer(content, THEME, None, report=lambda _: None, warn=warned.append)
    assert server.run_build(None) is not None
    gist = edit(content / "labs/alpha/gist.md", "At the first layer", "At the first layer, kept,")
    (content / "shared").mkdir()
    (content / "labs/beta/shared").symlink_to("../../shared", target_is_directory=True)
    pipe = content / "shared/pipe.md"  # reached through beta's link to the folder
    os.mkfifo(pipe)
    assert server.run_build({str(gist), str(content / "labs/beta/shared")}) is None  # refused, never opened
    assert any(re.search(r"content/shared/pipe\.md:1:1: error: \S+ is a named pipe \(FIFO\)", w) for w in warned)
    assert b"kept," not in server.live.files["labs/alpha/index.html"]  # the last good site stays served
    pipe.unlink()
    result = server.run_build({str(pipe)})  # only the FIFO's removal is reported now
    assert result is not None and b"At the first layer, kept," in result.files["labs/alpha/index.html"]


def test_binding_beyond_loopback_warns_loudly(start_server, tmp_path):
    server = start_server(copy_content(tmp_path), tmp_path / "site", "--host", "0.0.0.0")
    server.wait_for(r"^WARNING: serving on 0\.0\.0\.0: anyone who can reach this machine")
    assert server.interrupt() == 0


@pytest.mark.browser
def test_an_edit_shows_up_in_the_open_page_by_itself(start_server, browser, tmp_path):
    from playwright.sync_api import expect

    content = copy_content(tmp_path)
    server = start_server(content, tmp_path / "site")
    page = open_page(browser, server.url + "labs/attention/")
    expect(page.locator("h1")).to_contain_text("Attention")
    page.evaluate("window.__untouched = true")
    token = "An edited sentence nobody has seen before."
    with (content / "labs/attention/gist.md").open("a", encoding="utf-8") as f:
        f.write(f"\n{token}\n")
    expect(page.get_by_text(token)).to_be_visible(timeout=30000)
    assert page.evaluate("window.__untouched") is None  # the page reloaded itself
    assert page.violations == []
    page.close()


def until(page, condition: str, timeout_ms: int = 10000) -> bool:
    """Whether ``condition`` (a JavaScript function's source) comes true within the time, checked
    every frame in the page (page.wait_for_function would need eval, which the site's CSP forbids)."""
    return page.evaluate(f"""() => new Promise((done) => {{
      const test = {condition}, end = performance.now() + {timeout_ms};
      const check = () => test() ? done(true) : performance.now() > end ? done(false) : requestAnimationFrame(check);
      check();
    }})""")


@pytest.mark.browser
@pytest.mark.parametrize("watched", [True, False], ids=["parts-come-in-near-the-view", "parts-come-in-when-asked"])
def test_a_reload_puts_the_reader_back_where_they_were(start_server, browser, tmp_path, watched):
    """Reading the FAQ, far below parts that come in late, an edit above it reloads the page and
    the FAQ's heading is back where it sat on screen, and stays there once the parts around it
    have come in (the browser's own restoring of scrollY would leave it elsewhere). The place
    kept is the last id in the top third of the view: a question of the FAQ's list, itself a part
    that comes in late. The reload brings that part in at once, not only once the page's observer
    of the view gets to it (under load it once came too late): with the observer made blind
    after the first load, the place is still put back."""
    from playwright.sync_api import expect

    content = copy_content(tmp_path)
    server = start_server(content, tmp_path / "site")
    page = open_page(browser, server.url + "labs/attention/")
    page.set_viewport_size({"width": 1280, "height": 800})
    expect(page.locator("h1")).to_contain_text("Attention", timeout=60000)
    page.wait_for_load_state("load")
    place = """() => { const h = document.getElementById("faq-title");
                       return h ? Math.round(h.getBoundingClientRect().top) : null; }"""
    settled = """() => document.readyState === "complete" && !document.querySelector("noscript[data-later]")"""
    # The quiz's script held back until the reader sits at the FAQ: it then makes the quiz, above
    # the view, taller, and the view stays (the place kept at the reload is where the reader was).
    quiz_js, held = "**/assets/later/quiz.*.js", []
    page.route(quiz_js, lambda route: held.append(route))
    page.evaluate("Labs.later.all()")  # every part in, so the place is measured on the whole page
    assert until(page, settled)
    assert until(page, """() => { const h = document.getElementById("faq-title");
                                  const off = Math.round(h.getBoundingClientRect().top) - 200;
                                  if (off) scrollBy(0, off);
                                  return off === 0; }"""), (page.evaluate(place), page.evaluate("[scrollY, document.documentElement.scrollHeight, innerHeight]"))
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the quiz's script was never asked for"
    held[0].continue_()
    page.unroute(quiz_js)
    expect(page.locator("#quiz-score")).to_be_visible()  # its script has run
    assert page.evaluate(place) == 200
    page.evaluate("window.__untouched = true")
    if not watched:  # from the reload on, parts come in only when something asks for them
        page.add_init_script("window.IntersectionObserver = class { observe() {} unobserve() {} disconnect() {} };")
    token = "An edited sentence nobody has seen before."
    with (content / "labs/attention/gist.md").open("a", encoding="utf-8") as f:
        f.write(f"\n{token}\n")
    expect(page.get_by_text(token)).to_be_attached(timeout=30000)
    assert page.evaluate("window.__untouched") is None  # the page reloaded itself
    assert until(page, f"() => ({place})() !== null && Math.abs(({place})() - 200) <= 2", 15000), page.evaluate(place)
    page.evaluate("Labs.later.all()")  # what would still come in as the reader moves on
    assert until(page, settled)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
    assert abs(page.evaluate(place) - 200) <= 2, page.evaluate(place)
    assert page.violations == []
    page.close()


@pytest.mark.browser
def test_an_error_shows_an_overlay_until_it_is_fixed(start_server, browser, tmp_path):
    from playwright.sync_api import expect

    content = copy_content(tmp_path)
    server = start_server(content, tmp_path / "site")
    page = open_page(browser, server.url + "labs/attention/")
    overlay = page.locator("#labs-error-overlay")
    expect(page.locator("h1")).to_contain_text("Attention")
    quiz = content / "labs/attention/quiz.yaml"
    good = quiz.read_text(encoding="utf-8")
    quiz.write_text(TAB_YAML, encoding="utf-8")
    expect(overlay).to_be_visible(timeout=30000)
    expect(overlay.locator(".labs-error-where")).to_have_text("content/labs/attention/quiz.yaml:3:1")
    expect(overlay.locator(".labs-error-message")).to_contain_text("invalid YAML")
    expect(overlay.locator(".labs-error-source")).to_contain_text("prompt: tab")
    server.wait_for(r"^content/labs/attention/quiz\.yaml:3:1: error: invalid YAML")
    # The server is still up and still serves the last good page, overlay script and all.
    status, _, body = server.request("/labs/attention/")
    assert status == 200 and b"what do one word" in body
    other = open_page(browser, server.url)  # a page opened while the error stands shows it too
    expect(other.locator("#labs-error-overlay")).to_be_visible(timeout=30000)
    quiz.write_text(good, encoding="utf-8")
    expect(overlay).to_have_count(0, timeout=30000)
    expect(other.locator("#labs-error-overlay")).to_have_count(0, timeout=30000)
    server.wait_for(r"errors fixed")
    assert page.violations == [] and other.violations == []
    page.close()
    other.close()


def test_the_mirror_writes_only_the_files_that_changed(tmp_path):
    output = tmp_path / "site"
    mirror = Mirror(output, lambda message: pytest.fail(message), delay=0)

    def settle(expected: dict[str, bytes]) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            on_disk = {p.relative_to(output).as_posix(): p.read_bytes() for p in output.rglob("*") if p.is_file()} \
                if output.is_dir() else {}
            if on_disk == expected:
                return
            time.sleep(0.02)
        pytest.fail(f"the mirror never wrote {sorted(expected)}")

    first = {sitefolder.MARKER: sitefolder.MARKER_TEXT, "index.html": b"one", "labs/a/index.html": b"a",
             "labs/b/index.html": b"b"}
    try:
        mirror.submit(first, now=True)
        settle(first)
        untouched = (output / "labs/a/index.html").stat()
        second = {**first, "index.html": b"two", "labs/c/index.html": b"c"}
        del second["labs/b/index.html"]
        mirror.submit(second, now=True)
        settle(second)
        after = (output / "labs/a/index.html").stat()
        assert (after.st_ino, after.st_mtime_ns) == (untouched.st_ino, untouched.st_mtime_ns), "rewritten"
        assert not (output / "labs/b").exists(), "a lab's folder that went away is removed"
        (output / sitefolder.MARKER).unlink()  # not ours any more: the next write is a whole site again
        mirror.submit(first, now=True)
        settle(first)
    finally:
        mirror.close()


def test_the_overlay_caps_errors_per_file_and_counts_them_all(tmp_path):
    content = copy_content(tmp_path)
    (content / "labs/attention/faq.yaml").write_text(
        "".join(f"- question: Question {i}?\n  answr: no\n" for i in range(30)), encoding="utf-8")
    warned: list[str] = []
    server = DevServer(content, THEME, None, report=lambda _: None, warn=warned.append)
    assert server.run_build(None) is None
    errors = server.live.errors
    assert len(errors) == 21
    assert errors[-1]["message"] == "… and 40 more errors in this file" and errors[-1]["more"] == 40
    assert errors[-1]["path"].endswith("labs/attention/faq.yaml")
    assert warned[0].startswith("60 errors in the site")
    assert len(warned) == 22 and warned[-1].endswith("faq.yaml: … and 40 more errors in this file")


# -- the HTTP layer under abuse: timeouts, a bounded number of threads, headers on every answer -------

SECURITY = {"cache-control": "no-store", "x-content-type-options": "nosniff", "content-security-policy": CSP,
            "x-frame-options": "DENY", "referrer-policy": "no-referrer"}


@pytest.fixture
def http_server():
    """The server in this process on 127.0.0.1 (a free port), serving two small files, with a short
    idle timeout; ``http_server(max_connections=3)`` for another limit."""
    servers = []

    def start(max_connections: int = 64, max_streams: int = 64) -> LiveHTTPServer:
        live = LiveSite()
        live.publish({"index.html": b"<html><body>hi</body></html>", "404.html": b"<html><body>no</body></html>"})
        server = LiveHTTPServer(("127.0.0.1", 0), live, max_connections=max_connections, request_timeout=0.5,
                                max_streams=max_streams)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return server

    yield start
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _exchange(server, data: bytes, wait: float = 5) -> bytes:
    with socket.create_connection(server.server_address[:2], timeout=wait) as s:
        s.sendall(data)
        out = b""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            out += chunk
    return out


def _headers(response: bytes) -> tuple[int, dict[str, str]]:
    head = response.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    return int(head[0].split(" ")[1]), {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}


@pytest.mark.parametrize("request_bytes, status", [
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: localhost\r\n" + b"X-A: b\r\n" * 120 + b"\r\n", 431),
    (b"BREW / HTTP/1.1\r\nHost: localhost\r\n\r\n", 501),
    (b"GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 200),
], ids=["bad-request-line", "uri-too-long", "too-many-headers", "unknown-method", "foreign-host", "ok"])
def test_every_response_carries_the_security_headers(http_server, request_bytes, status):
    got, headers = _headers(_exchange(http_server(), request_bytes))
    assert got == status
    assert {k: headers.get(k) for k in SECURITY} == SECURITY


def test_an_idle_or_half_sent_connection_is_closed_after_the_timeout(http_server):
    server = http_server()
    started = time.monotonic()
    assert _exchange(server, b"GET / HTTP/1.1\r\nHost: loc", wait=10) == b""  # closed, no answer
    assert time.monotonic() - started < 5


def test_beyond_the_limit_the_longest_waiting_connection_makes_room_and_threads_stay_bounded(http_server):
    server = http_server(max_connections=3)
    before = threading.active_count()
    idle = [socket.create_connection(server.server_address[:2], timeout=5) for _ in range(3)]
    try:
        for s in idle:
            s.sendall(b"GET / HTTP/1.1\r\n")  # half-sent: each holds a slot until its time is up
        _await(lambda: server.counts()[0] == 3, what="3 slots held")
        got = _exchange(server, b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", wait=2)
        assert _headers(got)[0] == 200
        try:
            assert idle[0].recv(4096) == b""  # the oldest was closed to make room
        except ConnectionResetError:  # closed before its thread read what it had sent
            pass
        assert server.counts()[0] <= 3
        _await(lambda: threading.active_count() <= before + 3, what="the evicted and answered threads gone")
    finally:
        for s in idle:
            s.close()


# -- slow senders and open pages cannot lock out requests ---------------------------------------

@pytest.fixture
def crowd():
    """Sockets opened by a test, and a thread that trickles one byte of a request into each
    ``slow`` one every ``interval`` seconds; all closed at the end."""
    sockets: list[socket.socket] = []
    slow: list[socket.socket] = []
    stop = threading.Event()

    def trickle(interval: float) -> None:
        while not stop.wait(interval):
            for s in list(slow):
                try:
                    s.send(b"X")
                except OSError:
                    slow.remove(s)

    class Crowd:
        def open(self, server, first: bytes = b"") -> socket.socket:
            s = socket.create_connection(server.server_address[:2], timeout=5)
            sockets.append(s)
            if first:
                s.sendall(first)
            return s

        def slow(self, server, n: int, interval: float) -> list[socket.socket]:
            opened = [self.open(server, b"GET / HTTP/1.1\r\nX-Slow: ") for _ in range(n)]
            slow.extend(opened)
            thread = threading.Thread(target=trickle, args=(interval,), daemon=True)
            thread.start()
            threads.append(thread)
            return opened

        def stream(self, server) -> socket.socket:
            s = self.open(server, b"GET /__labs__/events?path=/&etag=x HTTP/1.1\r\nHost: localhost\r\n\r\n")
            head = b""
            while b"retry:" not in head:
                chunk = s.recv(4096)
                assert chunk, head
                head += chunk
            assert head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200"), head
            return s

    threads: list[threading.Thread] = []
    yield Crowd()
    stop.set()
    for thread in threads:
        thread.join(5)
    for s in sockets:
        s.close()


def _await(condition, timeout: float = 5.0, what: str = "condition") -> float:
    """Wait until ``condition()`` holds; the seconds it took."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"{what} did not hold within {timeout} s"
        threading.Event().wait(0.02)
    return time.monotonic() - started


def _answered_within(server, seconds: float) -> None:
    started = time.monotonic()
    got = _exchange(server, b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", wait=seconds + 1)
    assert got and _headers(got)[0] == 200, got
    assert time.monotonic() - started < seconds


def test_a_request_trickling_in_is_closed_once_its_whole_time_is_up(http_server, crowd):
    server = http_server()  # a request must arrive within 0.5 s
    (slow,) = crowd.slow(server, 1, interval=0.1)  # never idle for 0.5 s, but never done
    slow.settimeout(5)
    started = time.monotonic()
    try:
        while slow.recv(4096):
            pass
    except ConnectionResetError:
        pass
    assert time.monotonic() - started < 3


def test_slow_senders_holding_every_slot_do_not_lock_out_a_request(http_server, crowd):
    server = http_server()
    server.request_timeout = 30  # the slow senders stay for the whole test
    crowd.slow(server, 64, interval=0.2)
    _await(lambda: server.counts()[0] == 64, what="64 slow connections held")
    _answered_within(server, 2)


def test_open_event_streams_are_capped_apart_from_requests_and_freed_when_closed(http_server, crowd):
    server = http_server()
    streams = [crowd.stream(server) for _ in range(64)]
    assert server.counts() == (0, 64)
    _answered_within(server, 2)
    refused = _exchange(server, b"GET /__labs__/events?path=/ HTTP/1.1\r\nHost: localhost\r\n\r\n", wait=2)
    assert _headers(refused)[0] == 503
    for s in streams:
        s.close()
    assert _await(lambda: server.counts()[1] == 0, what="closed streams noticed") < 2
    crowd.stream(server)


def test_64_slow_senders_and_64_open_pages_leave_room_for_a_request(http_server, crowd):
    server = http_server()
    server.request_timeout = 30
    for _ in range(64):
        crowd.stream(server)
    crowd.slow(server, 64, interval=0.2)
    _await(lambda: server.counts() == (64, 64), what="64 slow connections and 64 streams held")
    _answered_within(server, 2)
    assert threading.active_count() < 200


@pytest.mark.browser
def test_a_page_refused_a_live_reload_stream_asks_again_later(http_server, crowd, browser):
    server = http_server(max_streams=1)
    held = crowd.stream(server)
    host, port = server.server_address[:2]
    page = open_page(browser, f"http://{host}:{port}/")
    try:
        _await(lambda: server.streams_refused == 1, what="the page's stream refused")
        held.close()
        server.live.publish(None, [{"path": "content/site.yaml", "line": 1, "column": 1, "message": "late",
                                    "source_line": ""}])
        page.wait_for_selector("#labs-error-overlay", timeout=15_000)  # it asked again and was told
        assert page.violations == []
    finally:
        page.close()
