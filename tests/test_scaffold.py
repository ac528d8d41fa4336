"""``labs new SLUG``: a lab that is valid and builds out of the box, and never overwrites."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_labs as run
import yaml
from bs4 import BeautifulSoup


ROOT = Path(__file__).resolve().parent.parent
THEME = ROOT / "theme"


pytestmark = pytest.mark.project("shipped")  # the project fixture (conftest.py) starts from it



def build(capsys):
    return run(capsys, "build", "--content", "content", "--theme", str(THEME), "--output", "site")


def lab_numbers(content: Path) -> list[int]:
    return [int(re.search(r"^number: (\d+)", p.read_text(encoding="utf-8"), re.M).group(1))
            for p in sorted(content.glob("labs/*/lab.yaml"))]


def site_title(project: Path) -> str:
    return yaml.safe_load((project / "content/site.yaml").read_text(encoding="utf-8"))["title"]


def title_of(project: Path, slug: str) -> str:
    """The <title> of a built lab page, as a browser shows it."""
    html = (project / "site/labs" / slug / "index.html").read_text(encoding="utf-8")
    return BeautifulSoup(html, "html.parser").title.get_text()


def test_new_lab_builds_out_of_the_box(project, capsys):
    numbers = lab_numbers(project / "content")
    code, out, err = run(capsys, "new", "demo", "--content", "content")
    assert (code, out[0], err) == (0, "created content/labs/demo/ — edit its files, then run `labs build`", [])
    assert out[1].startswith(f"as lab {max(numbers) + 1:02d} it appears after ") and len(out) == 2, out
    assert sorted(p.name for p in (project / "content/labs/demo").iterdir()) == [
        "faq.yaml", "gist.md", "lab.yaml", "quiz.yaml", "under-the-hood.md"]
    code, out, err = build(capsys)
    assert (code, err) == (0, []), err
    assert title_of(project, "demo") == f"{max(numbers) + 1:02d} · Demo — A first look | {site_title(project)}"


def test_new_lab_passes_check(project, capsys):
    run(capsys, "new", "demo", "--content", "content")
    code, out, err = run(capsys, "check", "--content", "content", "--theme", str(THEME))
    assert (code, err) == (0, [])


def test_new_refuses_to_overwrite(project, capsys):
    run(capsys, "new", "demo", "--content", "content")
    gist = project / "content/labs/demo/gist.md"
    gist.write_text("My own words.\n", encoding="utf-8")
    code, out, err = run(capsys, "new", "demo", "--content", "content")
    assert (code, out, err) == (1, [], ["content/labs/demo: error: already exists; `labs new` never overwrites"])
    assert gist.read_text(encoding="utf-8") == "My own words.\n"


def test_new_refuses_an_existing_lab(project, capsys):
    before = {p: p.read_bytes() for p in (project / "content/labs/attention").iterdir()}
    code, _, err = run(capsys, "new", "attention", "--content", "content")
    assert (code, err) == (1, ["content/labs/attention: error: already exists; `labs new` never overwrites"])
    assert {p: p.read_bytes() for p in (project / "content/labs/attention").iterdir()} == before


@pytest.mark.parametrize("slug", ["Demo", "my_lab", "-demo", "demo-", "de mo", "../escape", "démo"])
def test_bad_slugs_are_refused_with_a_clear_message(project, capsys, slug):
    before = sorted(p.name for p in (project / "content/labs").iterdir())
    code, out, err = run(capsys, "new", "--content", "content", "--", slug)  # "--": "-demo" is not an option
    assert (code, out) == (2, [])  # a usage error, as argparse's own
    assert err[0].startswith("usage: labs new ")
    assert err[-1] == (f"labs new: error: argument SLUG: lab slug {slug!r} must be lower-case letters, digits and "
                       f"dashes, e.g. 'self-attention'")
    assert sorted(p.name for p in (project / "content/labs").iterdir()) == before
    assert not (project / "escape").exists()


@pytest.mark.parametrize("title", [
    "Positional encoding", "Attention: the sequel", "- Intro", "? Why", "null", "~", "yes", "123",
    'Quotes "and" \\backslashes', "#1 lab", "Tab\there", "Ünïcode — ok",
], ids=["plain", "colon", "dash", "question-mark", "null", "tilde", "yes", "number", "quotes", "hash", "tab",
        "unicode"])
def test_title_option_is_used_exactly(project, capsys, title):
    code, _, err = run(capsys, "new", "demo", "--content", "content", "--title", title)
    assert (code, err) == (0, [])
    code, _, err = build(capsys)
    assert (code, err) == (0, []), err
    number = max(lab_numbers(project / "content"))
    assert title_of(project, "demo") == f"{number:02d} · {title} — A first look | {site_title(project)}"


@pytest.mark.parametrize("title", ["", "   ", "two\nlines"], ids=["empty", "blank", "two-lines"])
def test_a_title_must_be_one_line_of_text(project, capsys, title):
    code, _, err = run(capsys, "new", "demo", "--content", "content", "--title", title)
    assert (code, err) == (1, ["error: the title must be one line of text, e.g. --title 'Positional encoding'"])
    assert not (project / "content/labs/demo").exists()


def test_unknown_topic_is_refused(project, capsys):
    code, _, err = run(capsys, "new", "demo", "--content", "content", "--topic", "cooking")
    assert (code, err) == (1, ["content/site.yaml: error: unknown topic 'cooking'; site.yaml declares: llm-engineering"])
    assert not (project / "content/labs/demo").exists()


def test_new_without_a_site_yaml_is_an_error(project, capsys):
    (project / "content/site.yaml").unlink()
    code, _, err = run(capsys, "new", "demo", "--content", "content")
    assert (code, err) == (1, ["error: no site here: content/site.yaml not found. Run `labs init DIR` to start a "
                               "site, then `labs new` inside it (or pass --content DIR)"])
    assert not (project / "content/labs/demo").exists()


@pytest.mark.parametrize("prefix", ["first", "my", "demo", "intro"])  # first-attention-lab, as labs init makes, warned
def test_a_new_lab_of_every_kind_builds_without_a_warning(project, capsys, prefix):
    """The order of the first question's options is drawn from the slug; for some slugs it put the
    right option where the kind's own question puts its own, and the build warned of it."""
    from generator.kinds import kind_names

    for kind in kind_names():
        code, _, err = run(capsys, "new", f"{prefix}-{kind}-lab", "--kind", kind, "--content", "content")
        assert (code, err) == (0, []), err
    code, _, err = run(capsys, "check", "--content", "content")
    assert (code, [e for e in err if f"/{prefix}-" in e]) == (0, []), err

