"""A fuzz corpus over the content schema: seeded mutations of the fixture site, each built by
``labs build`` in this process.

Every case must end in a correct build (exit 0) or in clear errors (exit 1 with at least one
``path:line:col: error:`` line) — never a traceback or a hang — and a failed build must leave
the previous site byte-identical, no temporary folder beside it and the content as it was.
The mutations are generated from fixed seeds, so a failing case is reproduced by its id
(``file-seed``); the payloads below are the ones that once broke a build or nearly did.
"""

from __future__ import annotations

import random
import re
import shutil
import time
from pathlib import Path

import pytest
from conftest import run_labs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FILES = ("content/site.yaml", "content/labs/alpha/lab.yaml", "content/labs/alpha/quiz.yaml",
         "content/labs/alpha/faq.yaml", "content/labs/alpha/gist.md", "content/labs/beta/lab.yaml")
CASES_PER_FILE = 55  # 6 files: 330 mutations
POSITIONED = re.compile(r"^\S[^:]*:\d+:\d+: error: \S")

# Text that has broken parsers, patterns or renderers somewhere: YAML syntax and tags, types in
# the wrong place, digits that are not ASCII, the math placeholders, control characters, long
# runs that backtracking patterns choke on, deep nesting, raw HTML and link schemes.
PAYLOADS = (
    '"', "'", ": ", "- ", "[", "]", "{", "}", "#", "&a", "*a", "!!python/object/apply:os.system ['true']",
    "\t", "\0", "\x07", "\ufeff", "\u2028", "\ue000", "\ue001", "²", "٧", "10" * 20, "-1", "1e309", ".nan",
    "true", "~", "null", "[]", "{}", "|", ">", "%", "@", "`", "$x^2$", "$$\\frac{1}{", "\\href{javascript:x}{y}",
    "on ->" + " " * 3000 + "mat(", "sat -> cat (>= " + "9" * 400, "[" * 3000, "<" * 2000, "> " * 300,
    "- " * 300, "<script>alert(1)</script>", '<img src=x onerror="alert(1)">', "[x](javascript:alert(1))",
    "[x](lab:nowhere#x)", "[x](lab:beta#nowhere)", '<h2 id="quiz">x</h2>', "\n---\n", "...", "word/NOUN" * 40,
    "cat#99", "x/NOTATAG", "é" * 5000,
    # huge integers (beyond float range, beyond Python's digit limit), wrong-typed ids, prototype
    # names as ids, control characters from escapes, URLs with a query and a fragment
    "9" * 400, "-" + "9" * 400, "9" * 5000, "{id: [a, b]}", "[[cat-mat]]", "{a: {b: c}}", "constructor",
    "__proto__", "toString", "hasOwnProperty", '"\\0"', '"a\\x1bb"', '"\\a"', '"\\x85"',
    "https://example.org/labs/?q=1#top", "[x](lab:beta?x=1#gist)", "[x](https://e.org/?a=b#c)",
)


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    kind = rng.randrange(8)
    i = rng.randrange(len(lines))
    if kind == 0:  # drop a line
        del lines[i]
    elif kind == 1:  # repeat a line
        lines.insert(i, lines[i])
    elif kind == 2:  # swap two lines
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 3:  # re-indent a line
        lines[i] = " " * rng.choice((0, 1, 3, 5, 8)) + lines[i].lstrip()
    elif kind == 4:  # cut the file short
        return text[: rng.randrange(len(text) + 1)]
    elif kind == 5:  # replace a value with a payload
        key, sep, _ = lines[i].partition(": ")
        lines[i] = key + (sep or ": ") + rng.choice(PAYLOADS)
    else:  # insert a payload anywhere
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice(PAYLOADS) + text[at:]
    return "\n".join(lines)


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(FIXTURES / "theme", root / "theme")
    return root


@pytest.mark.parametrize("file", FILES, ids=lambda f: f.split("/", 1)[1].replace("/", "-"))
def test_mutated_content_builds_or_fails_cleanly(workspace, capsys, monkeypatch, file):
    monkeypatch.chdir(workspace)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    started = time.process_time()  # CPU, not wall time: a busy machine must not fail a case
    outcomes = {0: 0, 1: 0}
    for seed in range(CASES_PER_FILE):
        content = workspace / "content"
        shutil.rmtree(content, ignore_errors=True)
        shutil.copytree(FIXTURES / "content", content)
        if not (workspace / "site").exists():
            assert run_labs(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")[0] == 0
        rng = random.Random(f"{file}-{seed}")
        path = workspace / file
        original = path.read_text(encoding="utf-8")
        for _ in range(rng.choice((1, 1, 2, 3))):
            mutated = _mutate(path.read_text(encoding="utf-8"), rng)
            path.write_text(mutated, encoding="utf-8")
        if path.read_text(encoding="utf-8") == original:
            path.write_text(original + rng.choice(PAYLOADS), encoding="utf-8")
        content_before, site_before = _tree(content), _tree(workspace / "site")
        listing = sorted(p.name for p in workspace.iterdir())
        case_started = time.process_time()
        code, out, err = run_labs(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
        case = f"{file}-{seed}"
        # Never a hang: a stalling pattern or parser runs for minutes; a case is a fraction of a second.
        assert time.process_time() - case_started < 10, f"{case}: a build took more than 10 s of CPU"
        assert code in (0, 1), f"{case}: exit {code}; stderr: {err[-5:]}"
        assert not any("Traceback" in line for line in out + err), f"{case}: {err}"
        assert _tree(content) == content_before, f"{case}: the build changed content/"
        assert sorted(p.name for p in workspace.iterdir()) == listing, f"{case}: litter beside the site"
        if code == 1:
            assert any(POSITIONED.match(line) for line in err), f"{case}: no path:line:col line in {err}"
            assert _tree(workspace / "site") == site_before, f"{case}: a failed build touched the site"
        outcomes[code] += 1
    assert outcomes[1] > 0  # the mutations do reach the error paths
    assert time.process_time() - started < 30, f"{CASES_PER_FILE} cases of {file} took too much CPU"
