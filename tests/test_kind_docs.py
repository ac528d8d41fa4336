"""Each documented kind has a reference page whose complete example builds."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import run_labs
from generator.kinds import get_kind

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "kinds"
README = ROOT / "README.md"


def _example(text: str, kind: str) -> tuple[str, str | None]:
    """The kind's section of lab.yaml (from its first key on) and quiz.yaml's questions (or None)
    in the page's complete example: its yaml blocks after that heading."""
    first = get_kind(kind).keys[0]  # the kind's first key of lab.yaml: `widget` for attention
    heading = re.search(r"^## (A )?[Cc]omplete example$", text, re.M)
    assert heading, "no complete example"
    blocks = re.findall(r"```yaml\n(.*?)```", text[heading.end():], re.S)
    lab = next(b for b in blocks if re.search(rf"^{first}:$", b, re.M))
    lab = lab[re.search(rf"^{first}:$", lab, re.M).start():]
    quiz = next((b for b in blocks if b.lstrip().startswith("- type:")), None)
    return lab, quiz


def _single_question() -> str:
    return ("  - type: single\n    prompt: Which is right?\n    options:\n"
            "      - {text: This one, correct: true, why: It is.}\n      - {text: That one, why: It is not.}\n")


def _check_example(tmp_path, monkeypatch, capsys, kind: str, text: str | None = None) -> tuple[int, list[str]]:
    """`labs check` of a new site whose `kind` lab has the example of the kind's page (or of
    ``text``): its exit code and stderr lines."""
    text = (DOCS / f"{kind}.md").read_text(encoding="utf-8") if text is None else text
    lab_yaml, quiz_yaml = _example(text, kind)
    first = get_kind(kind).keys[0]
    monkeypatch.chdir(tmp_path)
    assert run_labs(capsys, "init", "s")[0] == 0
    if "../../models/" in lab_yaml:  # a bundle the shipped content has
        shutil.copytree(ROOT / "content" / "models", tmp_path / "s" / "content" / "models")
    lab = next(p for p in (tmp_path / "s/content/labs").iterdir() if kind in p.name)
    if kind == "sampling":  # the model's results for the example's prompt, as `labs decode` stored them for lab 08
        shutil.copy(ROOT / "content" / "labs" / "sampling" / "decoded.json", lab / "decoded.json")
    own = (lab / "lab.yaml").read_text(encoding="utf-8")
    (lab / "lab.yaml").write_text(own[: own.index(f"\n{first}:") + 1] + lab_yaml, encoding="utf-8")
    # The page's questions, or none of the kind's own (those of `labs init` ask about its example).
    (lab / "quiz.yaml").write_text("questions:\n" + (quiz_yaml or _single_question()), encoding="utf-8")
    monkeypatch.chdir(tmp_path / "s")
    code, _, err = run_labs(capsys, "check")
    return code, err


def test_the_sampling_page_documents_every_key_and_its_example_builds(tmp_path, monkeypatch, capsys):
    text = (DOCS / "sampling.md").read_text(encoding="utf-8")
    for heading in ("## Keys", "## Claims", "## Question types", "## A complete example"):
        assert heading in text
    for key in ("prompt", "temperatures", "default", "seed", "contexts", "logits", "chat", "claims", "note",
                "condition", "choices", "answer"):
        assert f"`{key}`" in text or f"`contexts[].{key}`" in text, key
    code, err = _check_example(tmp_path, monkeypatch, capsys, "sampling")
    assert code == 0, err


def test_the_attention_page_documents_every_key_and_its_example_builds(tmp_path, monkeypatch, capsys):
    from generator.kinds.attention import teaching
    from generator.kinds.attention import AttentionKind
    from generator.kinds.attention import headfinder

    text = (DOCS / "attention.md").read_text(encoding="utf-8")
    for heading in ("## Keys under `widget:`", "## Claims", "## The `model:` section", "### Relations and the head finder",
                    "### `bundle:` and its accuracy bound", "## Question types", "## A complete example"):
        assert heading in text, heading
    for key in ("prompt", "heads", "default", "sentences"):
        assert f"| `{key}` |" in text, key
    for key in ("id", "text", "kind", "label", "note", "query", "source", "source_label", "claims"):
        assert f"| `sentences[].{key}` |" in text, key
    for key in ("name", "cache", "checkpoint", "bundle", "max_drift", "sentences", "relations"):
        assert f"| `{key}` |" in text, key
    for key in (*AttentionKind.question_keys["word"][0], *AttentionKind.question_keys["word"][1]):
        assert f"| `{key}` |" in text, key
    for head in teaching.HEAD_IDS:
        assert f"`{head}`" in text, head
    assert f"[{', '.join(teaching.DEFAULT_HEADS)}]" in text
    assert "`max_drift:`" in text and "never fails the build by itself" in text
    assert f"at least {headfinder.BEATS_MIN_HIT:.0%}".replace("%", " %") in text
    assert f"p < {headfinder.BEATS_MAX_P}" in text
    assert f"at most {teaching.MAX_WORDS} words" in text
    code, err = _check_example(tmp_path, monkeypatch, capsys, "attention")
    assert code == 0, err


@pytest.mark.parametrize("kind", sorted(p.stem for p in DOCS.glob("*.md")))
def test_every_kind_pages_complete_example_builds(tmp_path, monkeypatch, capsys, kind):
    """The kind's section of lab.yaml (and quiz.yaml's questions, if the page gives some) put in
    place of `labs init`'s lab of that kind."""
    code, err = _check_example(tmp_path, monkeypatch, capsys, kind)
    assert code == 0, err


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_every_kind_page_is_linked_from_the_readme(page):
    assert f"(docs/kinds/{page})" in README.read_text(encoding="utf-8")


def test_the_attention_example_is_checked_so_a_wrong_claim_fails(tmp_path, monkeypatch, capsys):
    """The example is really built: the same page with a false claim fails at that claim."""
    text = (DOCS / "attention.md").read_text(encoding="utf-8")
    assert "          - chased -> dog\n" in text
    code, err = _check_example(tmp_path, monkeypatch, capsys, "attention",
                               text.replace("          - chased -> dog\n", "          - chased -> ball\n"))
    assert code == 1
    assert any("lab.yaml:" in line and "chased -> ball" in line for line in err), err


def test_the_next_token_page_documents_every_key_and_its_example_builds(tmp_path, monkeypatch, capsys):
    text = (DOCS / "next-token.md").read_text(encoding="utf-8")
    for heading in ("## Keys", "## Claims", "## Question types", "## A complete example"):
        assert heading in text, heading
    for key in ("prompt", "model", "texts", "texts[].id", "texts[].text", "texts[].note", "default", "cache",
                "cache.text", "cache.steps", "cache.bytes", "cache.tokens", "cache.models", "cache.models[].source",
                "your-text", "claims", "answer", "choices", "tokens"):
        assert f"`{key}`" in text, key
    code, err = _check_example(tmp_path, monkeypatch, capsys, "next-token")
    assert code == 0, err
