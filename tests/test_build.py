"""The build: what it writes, where, and that it never hurts what was there.

Builds the fixture content (tests/fixtures/content) with the fixture theme, copied into a
temporary folder so nothing here depends on — or touches — the shipped files.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import lab_data, signals_at_default, tree

import generator.build
import generator.sitefolder
import generator.speed.workers
from generator.build import build, build_files, check
from generator.sitefolder import MARKER, MARKER_TEXT
from generator.errors import BuildError, ContentError

ROOT = Path(__file__).resolve().parent.parent


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Every entry under ``folder`` with its mtime and (for files) content hash."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_mtime_ns,
                                               hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir")
            for p in sorted(folder.rglob("*"))}


def break_content(project: Path) -> None:
    quiz = project / "content/labs/alpha/quiz.yaml"
    quiz.write_text(quiz.read_text(encoding="utf-8").replace("answer: cat", "answer: mat"), encoding="utf-8")


# -- what is written --------------------------------------------------------------------------


def test_output_has_every_page_the_sitemap_robots_and_fingerprinted_assets(project):
    build(project / "content", project / "theme", project / "site")
    files = set(tree(project / "site"))
    css = [f for f in files if re.fullmatch(r"assets/site\.[0-9a-f]{8}\.css", f)]
    js = [f for f in files if re.fullmatch(r"assets/site\.[0-9a-f]{8}\.js", f)]
    kind = [f for f in files if re.fullmatch(r"assets/kind-attention\.[0-9a-f]{8}\.(css|js)", f)]
    later = [f for f in files if re.fullmatch(r"assets/later/quiz\.[0-9a-f]{8}\.js", f)]  # the quiz's code, brought by the quiz
    # Beside each lab page: the fingerprinted files its kind loads on demand, and nothing else.
    beside = [f for f in files if re.fullmatch(r"labs/(alpha|beta)/[a-z0-9_-]+\.[0-9a-f]{8}\.(js|css)", f)]
    # Once for the whole site: what every lab of the kind loads the same (its shared_files).
    shared = [f for f in files if re.fullmatch(r"assets/kinds/attention/[a-z0-9_-]+\.[0-9a-f]{8}\.(js|css)", f)]
    assert len(css) == 1 and len(js) == 1 and len(kind) == 2 and len(later) == 1, files
    assert {f.split("/")[1] for f in beside} == {"alpha", "beta"}
    assert sorted(f.split("/")[-1].split(".")[0] for f in shared) == \
        ["own", "own-real", "pattern", "spotlight-later", "spotlight-more", "sqrt-demo", "sqrt-demo"]
    assert not {f.split("/")[-1] for f in beside} & {f.split("/")[-1] for f in shared}
    # The search (lunr.js, each page's texts) and the code the header's box and a lab's embed tools
    # bring on first use; the index, the embed pages and the hosts' headers files have fixed names.
    search = [f for f in files if re.fullmatch(r"assets/(lunr|search/[a-z0-9-]+)\.[0-9a-f]{8}\.js", f)]
    tools = [f for f in files if re.fullmatch(r"assets/later/(search|embed|embed-code)\.[0-9a-f]{8}\.(js|css)", f)]
    assert sorted(f.split("/")[-1].split(".")[0] for f in search) == ["labs-alpha", "labs-beta", "lunr", "topics-basics"]
    assert sorted(f.split("/")[-1].removesuffix(".js").removesuffix(".css")[:-9] for f in tools) == \
        ["embed", "embed", "embed-code", "search", "search"]
    assert files == {
        "index.html", "labs/alpha/index.html", "labs/beta/index.html", "topics/basics/index.html",
        "topics/later/index.html", "404.html", "sitemap.xml", "robots.txt", "assets/favicon.svg", "assets/nojs.css", MARKER,
        "labs/alpha/embed.html", "labs/beta/embed.html", "assets/search-index.js", "_headers", ".htaccess",
        css[0], js[0], *kind, *later, *beside, *shared, *search, *tools,
    }


def test_every_file_a_lab_page_names_in_its_data_is_in_the_site(project):
    """The scripts and stylesheets #lab-data names (beside the page, or shared by the kind's labs
    in assets/kinds/) resolve, against the page's URL, to files the build wrote."""
    import json
    import posixpath

    build(project / "content", project / "theme", project / "site")
    files = set(tree(project / "site"))
    for slug in ("alpha", "beta"):
        html = (project / "site" / "labs" / slug / "index.html").read_text(encoding="utf-8")
        data = lab_data(html)
        named = re.findall(r'"(?:src|css|finder_src)": ?"([^"]+)"', json.dumps(data)) + \
            list(((data.get("real") or {}).get("srcs") or {}).values())
        assert any(src.startswith("../../assets/kinds/attention/") for src in named), named
        for src in named:
            assert posixpath.normpath(f"labs/{slug}/{src}") in files, src


def test_css_is_the_theme_files_minified_and_concatenated_in_name_order(project):
    """A custom theme's static/css files join the default theme's, all in file-name order."""
    import rcssmin

    from generator.theme import default_theme_dir

    result = build(project / "content", project / "theme", project / "site")
    css = next(data for name, data in result.files.items() if re.fullmatch(r"assets/site\.[0-9a-f]{8}\.css", name))
    by_name = {p.name: p for p in sorted((default_theme_dir() / "static/css").glob("*.css"))}
    by_name.update({p.name: p for p in (project / "theme/static/css").glob("*.css")})
    parts = [rcssmin.cssmin(by_name[n].read_text(encoding="utf-8")) for n in sorted(by_name)]
    assert "10-first.css" in by_name and "10-base.css" in by_name and all(parts)
    assert css == ("\n".join(parts) + "\n").encode()
    digest = hashlib.sha256(css).hexdigest()[:8]
    assert f"assets/site.{digest}.css" in result.files


def test_a_script_that_a_part_brings_is_its_own_file_and_a_custom_theme_can_replace_it(project):
    """static/js/later/*.js: not in the bundle, each minified alone and fingerprinted, named by the
    part that brings it (the quiz's, theme/README.md "Parts kept for later")."""
    import rjsmin

    (project / "theme/static/js/later").mkdir(parents=True)
    (project / "theme/static/js/later/quiz.js").write_text("/* mine */\nwindow.mine = 1;\n", encoding="utf-8")
    result = build(project / "content", project / "theme", project / "site")
    [name] = [n for n in result.files if n.startswith("assets/later/quiz.")]
    data = result.files[name]
    assert data == rjsmin.jsmin("/* mine */\nwindow.mine = 1;\n").encode() + b"\n"
    assert name == f"assets/later/quiz.{hashlib.sha256(data).hexdigest()[:8]}.js"
    site_js = next(d for n, d in result.files.items() if re.fullmatch(r"assets/site\.[0-9a-f]{8}\.js", n))
    assert b"window.mine" not in site_js  # (test_site.py checks that the lab page's quiz names it)


def test_a_file_of_the_custom_theme_replaces_the_default_one_of_the_same_path(project):
    from generator.theme import default_theme_dir

    default_quiz = (default_theme_dir() / "static/css/40-quiz.css").read_text(encoding="utf-8")
    (project / "theme/static/css/40-quiz.css").write_text(".quiz{outline:3px solid red}\n", encoding="utf-8")
    result = build(project / "content", project / "theme", project / "site")
    css = next(data for name, data in result.files.items() if re.fullmatch(r"assets/site\.[0-9a-f]{8}\.css", name))
    import rcssmin

    assert b".quiz{outline:3px solid red}" in css
    assert rcssmin.cssmin(default_quiz).encode() not in css


def test_sitemap_lists_every_page_at_its_canonical_url(project):
    build(project / "content", project / "theme", project / "site")
    sitemap = (project / "site/sitemap.xml").read_text(encoding="utf-8")
    assert re.findall(r"<loc>(.*?)</loc>", sitemap) == [
        "https://example.org/labs/", "https://example.org/labs/labs/alpha/", "https://example.org/labs/labs/beta/",
        "https://example.org/labs/topics/basics/", "https://example.org/labs/topics/later/",
    ]
    assert (project / "site/robots.txt").read_text(encoding="utf-8") == (
        "User-agent: *\nAllow: /\nSitemap: https://example.org/labs/sitemap.xml\n")


def test_base_url_option_overrides_site_yaml(project):
    build(project / "content", project / "theme", project / "site", base_url="https://other.example/x")
    page = (project / "site/labs/alpha/index.html").read_text(encoding="utf-8")
    assert '<link rel="canonical" href="https://other.example/x/labs/alpha/">' in page
    assert "example.org" not in page
    assert "Sitemap: https://other.example/x/sitemap.xml" in (project / "site/robots.txt").read_text(encoding="utf-8")


def test_without_a_base_url_there_are_no_absolute_urls(project):
    site_yaml = project / "content/site.yaml"
    site_yaml.write_text(site_yaml.read_text(encoding="utf-8").replace("base_url: https://example.org/labs/\n", ""),
                         encoding="utf-8")
    result = build(project / "content", project / "theme", project / "site")
    assert not any(b"example.org" in data for data in result.files.values())
    page = result.files["labs/alpha/index.html"].decode()
    assert 'rel="canonical"' not in page and "og:url" not in page
    assert result.files["robots.txt"] == b"User-agent: *\nAllow: /\n"
    assert "sitemap.xml" not in result.files  # a sitemap needs absolute URLs


def test_the_404_page_links_from_the_site_root_path(project):
    build(project / "content", project / "theme", project / "site")
    page = (project / "site/404.html").read_text(encoding="utf-8")
    urls = re.findall(r'(?:href|src)="([^"]*)"', page)
    assert urls and all(u.startswith("/labs/") for u in urls), urls


# -- determinism --------------------------------------------------------------------------------


def test_builds_are_byte_identical_whatever_the_hash_seed(project):
    outputs = []
    for seed in ("1", "2"):
        out = project / f"site-{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        env.pop("SOURCE_DATE_EPOCH", None)
        subprocess.run([sys.executable, "-m", "generator", "build", "--content", "content", "--theme", "theme",
                        "--output", str(out)], check=True, env=env, capture_output=True)
        outputs.append({p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()})
    assert outputs[0] == outputs[1]


def test_no_timestamps_unless_source_date_epoch(project, monkeypatch):
    plain = build(project / "content", project / "theme", project / "a").files
    assert not any(b"lastmod" in data or b"1970" in data for data in plain.values())
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    dated = build(project / "content", project / "theme", project / "b").files
    assert {k for k in plain if plain[k] != dated[k]} == {"sitemap.xml"}
    sitemap = dated["sitemap.xml"].decode()
    assert sitemap.count("<lastmod>1970-01-02</lastmod>") == sitemap.count("<url>") == 5


# -- builds that never hurt ------------------------------------------------------------------------


def test_a_failed_build_leaves_the_previous_site_byte_for_byte(project):
    build(project / "content", project / "theme", project / "site")
    before, listing = tree(project / "site"), sorted(os.listdir(project))
    break_content(project)
    with pytest.raises(ContentError):
        build(project / "content", project / "theme", project / "site")
    assert tree(project / "site") == before
    assert sorted(os.listdir(project)) == listing  # no temporary folder left beside it


def test_a_failed_write_puts_the_previous_site_back(project, monkeypatch):
    build(project / "content", project / "theme", project / "site")
    before, listing = tree(project / "site"), sorted(os.listdir(project))
    real_replace = os.replace

    def failing_swap(src, dst):
        if Path(src).name.startswith(".site-new-"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(generator.sitefolder.os, "replace", failing_swap)
    monkeypatch.setattr(generator.sitefolder, "_exchange", lambda a, b: False)  # a file system without renameat2
    (project / "content/labs/beta/gist.md").write_text("Changed.\n", encoding="utf-8")
    with pytest.raises(BuildError) as exc:
        build(project / "content", project / "theme", project / "site")
    assert str(exc.value) == "site: error: cannot write the site: No space left on device"
    assert tree(project / "site") == before
    assert sorted(os.listdir(project)) == listing


def test_a_successful_build_leaves_no_temporary_folders(project):
    build(project / "content", project / "theme", project / "site")
    build(project / "content", project / "theme", project / "site")  # a rebuild swaps an old site out
    assert sorted(os.listdir(project)) == ["content", "site", "theme"]


def test_build_and_check_never_write_into_content_or_theme(project):
    def both():
        return snapshot(project / "content"), snapshot(project / "theme")

    before = both()
    build(project / "content", project / "theme", project / "site")
    check(project / "content", project / "theme")
    assert both() == before
    break_content(project)
    broken = both()
    with pytest.raises(ContentError):
        build(project / "content", project / "theme", project / "site")
    assert both() == broken


def test_check_writes_nothing(project):
    result = check(project / "content", project / "theme")
    assert result.output is None and result.pages == 8  # 4 site pages, 2 labs, their 2 embed pages
    assert sorted(os.listdir(project)) == ["content", "theme"]


def test_a_rebuild_replaces_the_whole_previous_site(project):
    build(project / "content", project / "theme", project / "site")
    (project / "site/stale.html").write_text("left over", encoding="utf-8")
    build(project / "content", project / "theme", project / "site")
    assert not (project / "site/stale.html").exists() and (project / "site" / MARKER).is_file()


def test_an_empty_output_folder_may_be_used(project):
    (project / "site").mkdir()
    build(project / "content", project / "theme", project / "site")
    assert (project / "site/index.html").is_file()


REFUSED = [
    pytest.param("site", lambda p: (p / "site").mkdir() or (p / "site/notes.txt").write_text("mine"),
                 "site: error: refusing to replace a folder that was not built by labs (no .labs-build in it); "
                 "empty it or choose another --output", id="non-empty-folder-without-marker"),
    pytest.param("content/site", None,
                 "content/site: error: the output folder must not contain or be inside the content folder content/",
                 id="inside-content"),
    pytest.param(".", None,
                 ".: error: the output folder must not contain or be inside the content folder content/",
                 id="containing-content"),
    pytest.param("theme", None,
                 "theme: error: the output folder must not contain or be inside the theme folder theme/",
                 id="the-theme-folder"),
    pytest.param("site", lambda p: (p / "site").write_text("a file"),
                 "site: error: output exists and is not a folder", id="a-file"),
]


@pytest.mark.parametrize("output, prepare, message", REFUSED)
def test_unsafe_output_folders_are_refused_untouched(project, output, prepare, message):
    if prepare:
        prepare(project)
    before = snapshot(project)
    with pytest.raises(BuildError) as exc:
        build(project / "content", project / "theme", Path(output))
    assert str(exc.value) == message
    assert snapshot(project) == before


# -- links and theme errors ---------------------------------------------------------------------------


def test_a_theme_link_to_a_missing_page_is_an_error(project):
    topic = project / "theme/templates/topic.html"
    topic.write_text(topic.read_text(encoding="utf-8").replace("<p>{{ topic.blurb }}</p>",
                                                               '<p><a href="../nowhere/">x</a></p>'), encoding="utf-8")
    with pytest.raises(ContentError) as exc:
        build(project / "content", project / "theme", project / "site")
    assert [str(d) for d in exc.value.diagnostics] == [
        f"theme/templates (page topics/{slug}/index.html):1:1: error: link to a page that does not exist: ../nowhere/"
        for slug in ("basics", "later")
    ]


@pytest.mark.parametrize("expression, message", [
    ("{{ lab.summary }", "unexpected '}'"),
    ("{{ lab.nothing }}", "'generator.model.Lab object' has no attribute 'nothing'"),
    ("{{ lab.summary + 1 }}", 'TypeError: can only concatenate str (not "int") to str'),
], ids=["syntax", "undefined", "type-error"])
def test_template_mistakes_name_the_template_line(project, expression, message):
    lab = project / "theme/templates/lab.html"
    text = lab.read_text(encoding="utf-8")
    line = text[: text.index("{{ lab.summary }}")].count("\n") + 1
    lab.write_text(text.replace("{{ lab.summary }}", expression), encoding="utf-8")
    with pytest.raises(ContentError) as exc:
        build(project / "content", project / "theme", project / "site")
    column = len(text.splitlines()[line - 1]) - len(text.splitlines()[line - 1].lstrip()) + 1
    assert [str(d) for d in exc.value.diagnostics] == [
        f"theme/templates/lab.html:{line}:{column}: error: template error: {message}"]


# -- crash safety: real SIGKILLs of a real build ----------------------------------------------------


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def _orphans_of(project: Path) -> list[int]:
    """Processes adopted by init (or a subreaper) that are builds of ``project``: python running the generator there."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if b"generator" in cmdline and cwd == str(project):
            found.append(int(entry.name))
    return found


def _start_paused_build(project: Path, point: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("LABS_SERIAL", "SOURCE_DATE_EPOCH")}
    env["LABS_TEST_PAUSE_AT"] = point
    proc = subprocess.Popen([sys.executable, "-m", "generator", "build", "--content", "content", "--theme", "theme",
                             "--output", "site"], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=signals_at_default)
    import select
    import time

    deadline, seen = time.monotonic() + 60, b""
    try:
        while f"paused at {point}".encode() not in seen:
            assert time.monotonic() < deadline and proc.poll() is None, f"the build never reached {point}: {seen!r}"
            if select.select([proc.stderr], [], [], 1)[0]:
                seen += os.read(proc.stderr.fileno(), 4096)
    except BaseException:
        _kill(proc)
        raise
    return proc


def _kill(proc: subprocess.Popen) -> None:
    """End a build a test gave up on, so no build outlives its test."""
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


@pytest.fixture
def big_project(project):
    """The fixtures with enough labs for the build to use its process pool."""
    for i in range(generator.speed.workers.PARALLEL_MIN_LABS + 2):
        copy = project / f"content/labs/copy-{i:02d}"
        shutil.copytree(project / "content/labs/alpha", copy)
        lab = copy / "lab.yaml"
        lab.write_text(lab.read_text(encoding="utf-8").replace("number: 1\n", f"number: {10 + i}\n", 1),
                       encoding="utf-8")
    return project


@pytest.mark.parametrize("point", ["compute", "write"])
def test_a_killed_build_leaves_no_stray_process_no_litter_and_the_site_intact(big_project, point):
    import select
    import signal
    import time

    project = big_project
    build(project / "content", project / "theme", project / "site")
    before = tree(project / "site")
    proc = _start_paused_build(project, point)
    workers = _children(proc.pid)
    if point == "compute" and (os.cpu_count() or 1) >= 2:
        assert workers, "the build should be using its process pool here"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _orphans_of(project) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _orphans_of(project) == []
    # nothing holds the killed build's pipes open: a reader gets end-of-file at once
    for pipe in (proc.stdout, proc.stderr):
        deadline = time.monotonic() + 5
        while select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))[0]:
            if os.read(pipe.fileno(), 65536) == b"":
                break
        else:
            pytest.fail("a pipe of the killed build is still held open")
    proc.stdout.close()
    proc.stderr.close()
    assert tree(project / "site") == before
    build(project / "content", project / "theme", project / "site")  # the next build cleans up after it
    # (the build cache beside content/ is no litter: its entries are written whole or not at all)
    assert sorted(set(os.listdir(project)) - {".labs-cache"}) == ["content", "site", "theme"]
    assert not list(project.glob(".labs-cache/**/.tmp-*"))
    assert tree(project / "site") == before


@pytest.mark.parametrize("point", ["compute", "write", "swap"])
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_a_build_stopped_by_sigterm_or_ctrl_c_removes_its_new_folder_at_once(project, point, stop, monkeypatch):
    import signal

    build(project / "content", project / "theme", project / "site")
    before = tree(project / "site")
    if point == "swap":  # the two-rename swap (where the OS could exchange the folders in one step),
        monkeypatch.setenv("LABS_TEST_NO_EXCHANGE", "1")  # which a signal waits for
        monkeypatch.setenv("LABS_TEST_PAUSE_SECONDS", "2")
    proc = _start_paused_build(project, point)
    proc.send_signal(getattr(signal, stop))
    try:
        out, err = proc.communicate(timeout=20)
    finally:
        _kill(proc)
    assert b"Traceback" not in err, err
    # stopped while writing: nothing swapped in, nothing left beside it; stopped mid-swap: the
    # swap is finished first (the same site here), then the build stops
    assert sorted(set(os.listdir(project)) - {".labs-cache"}) == ["content", "site", "theme"]
    assert tree(project / "site") == before
    assert proc.returncode == (130 if stop == "SIGINT" else 128 + signal.SIGTERM)


def test_a_build_killed_between_the_two_renames_is_repaired_by_the_next(project):
    """Where the OS cannot exchange two folders in one step, the swap is two renames; a kill
    between them leaves no site, the previous one in .site-old-*: the next build puts it back."""
    build(project / "content", project / "theme", project / "site")
    before = tree(project / "site")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    os.rename(project / "site", project / f".site-old-{dead.pid}-x1")
    half = project / f".site-new-{dead.pid}-x2"
    half.mkdir()
    (half / MARKER).write_bytes(MARKER_TEXT)
    (half / "index.html").write_text("half written")
    empty = project / f".site-new-{dead.pid}-x3"  # killed right after it was made
    empty.mkdir()
    build(project / "content", project / "theme", project / "site")
    assert sorted(os.listdir(project)) == ["content", "site", "theme"]
    assert tree(project / "site") == before


def test_litter_that_is_not_provably_ours_is_left_alone(project):
    build(project / "content", project / "theme", project / "site")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    foreign = project / f".site-new-{dead.pid}-mine"  # no marker: someone else's folder
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    live = project / f".site-new-{os.getppid()}-busy"  # a build that is still running
    live.mkdir()
    (live / MARKER).write_bytes(MARKER_TEXT)
    build(project / "content", project / "theme", project / "site")
    assert (foreign / "notes.txt").read_text() == "keep me" and live.is_dir()


def test_the_swap_exchanges_the_folders_in_one_step(project, monkeypatch):
    """On Linux the output path is never missing: no rename moves it away before the new one arrives."""
    if not sys.platform.startswith("linux"):
        pytest.skip("renameat2 is Linux's")
    build(project / "content", project / "theme", project / "site")
    moved = []
    real_replace = os.replace
    monkeypatch.setattr(generator.sitefolder.os, "replace", lambda a, b: moved.append((a, b)) or real_replace(a, b))
    (project / "content/labs/beta/gist.md").write_text("Changed.\n", encoding="utf-8")
    build(project / "content", project / "theme", project / "site")
    assert moved == []
    assert "Changed." in (project / "site/labs/beta/index.html").read_text(encoding="utf-8")


def test_a_symlinked_output_stays_a_link_and_the_folder_it_points_to_is_rebuilt(project):
    (project / "real-site").mkdir()
    (project / "site").symlink_to(project / "real-site", target_is_directory=True)
    build(project / "content", project / "theme", project / "site")
    build(project / "content", project / "theme", project / "site")
    assert (project / "site").is_symlink() and (project / "real-site/index.html").is_file()
    assert sorted(os.listdir(project)) == ["content", "real-site", "site", "theme"]


def test_a_lab_page_does_not_grow_with_the_number_of_labs(tmp_path):
    """What a page carries about other labs is constant: at 200 labs a lab page is at most
    1 KB larger than at 1 lab (the pager names its two neighbours, nothing lists them all)."""
    from generator.scaffold import new_lab

    sizes = {}
    for n in (1, 200):
        content = tmp_path / f"c{n}" / "content"
        shutil.copytree(ROOT / "content", content)
        for extra in sorted(p.name for p in (content / "labs").iterdir()):
            if extra != "attention":
                shutil.rmtree(content / "labs" / extra)
        site_yaml = content / "site.yaml"
        site_yaml.write_text(re.sub(r"(?ms)^labs:\n(  - .*\n)+", "labs:\n  - attention\n",
                                    site_yaml.read_text(encoding="utf-8")), encoding="utf-8")
        for i in range(n - 1):
            new_lab(content, f"extra-{i:03d}", kind="sampling")
        files, _ = build_files(content, None)
        sizes[n] = len(files["labs/attention/index.html"])
        assert sum(p.startswith("labs/") and p.endswith("/index.html") for p in files) == n
    assert sizes[200] - sizes[1] <= 1000, sizes


def test_the_site_written_by_workers_is_byte_for_byte_the_one_built_in_memory(big_project):
    project = big_project
    result = build(project / "content", project / "theme", project / "site")
    files, _ = build_files(project / "content", project / "theme")
    on_disk = {p.relative_to(project / "site").as_posix(): p.read_bytes()
               for p in (project / "site").rglob("*") if p.is_file()}
    assert on_disk == files
    assert dict(result.files) == files and result.pages == sum(p.endswith(".html") for p in files)


def test_computing_and_rendering_a_lab_leaves_no_reference_cycles():
    """A build pauses the cyclic collector, so whatever a lab's page leaves in a reference cycle
    stays until the worker ends (a template macro once kept each page's whole payload: 0.6 MB a
    lab). Computing and rendering a lab must leave no garbage that only the collector can free."""
    import gc

    from generator.build import _compute_and_render, _set_lab_state
    from generator.content import assemble_partial, load_lab, load_site

    source = load_site(ROOT / "content")
    content, problems = assemble_partial(source, [load_lab(source, slug) for slug in source.order])
    assert not problems
    _set_lab_state(content, None, None, None, None, None, {})
    try:
        for i in range(len(content.labs)):  # once to warm the caches, then measured
            _compute_and_render(i)
        collecting = gc.isenabled()
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for i in range(len(content.labs)):
                _compute_and_render(i)
            gc.collect()
            kinds = sorted({type(o).__name__ for o in gc.garbage})
            assert not gc.garbage, f"{len(gc.garbage)} objects in reference cycles: {kinds}"
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            if collecting:
                gc.enable()
    finally:
        generator.build._LAB_STATE.clear()


def test_ids_are_the_whitespace_preceded_id_attributes():
    """page_links searches for ``id="`` as a literal and checks the character before it: the same
    ids, in the same order, as the pattern ``\\sid="…"`` it replaced, on every golden page and on
    the edge cases (an id at the very start, data-id, grid="…", a tab or newline before)."""
    import re

    from generator.links import page_links

    old = re.compile(r'\sid="([^"]+)"')
    pages = [p.read_text(encoding="utf-8") for p in (Path(__file__).parent / "golden").rglob("*.html")]
    tricky = ['id="start" <p id="a">', '<p data-id="x" grid="y" valid="z">', '<p\tid="tab">\n<b\nid="nl">', 'id=""']
    assert pages
    for html in pages + tricky:
        assert page_links(html)[0] == old.findall(html)


def test_the_pool_hashes_lab_folders_to_the_same_cache_keys_as_one_process(big_project):
    from generator.build import _lab_keys
    from generator.speed.workers import lab_pool
    from generator.content import load_site

    content = big_project / "content"
    source = load_site(content)
    serial = _lab_keys(source, big_project / "theme", None, None)
    with lab_pool(content, len(source.order)) as map_labs:
        assert map_labs is not map or (os.cpu_count() or 1) < 2
        pooled = _lab_keys(source, big_project / "theme", None, None, map_labs)
    assert pooled == serial and len(set(serial.values())) == len(source.order)
