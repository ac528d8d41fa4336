"""Each documented kind has a reference page whose complete example builds."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import run_labs

DOCS = Path(__file__).resolve().parents[1] / "docs" / "kinds"


def test_the_sampling_page_documents_every_key_and_its_example_builds(tmp_path, monkeypatch, capsys):
    text = (DOCS / "sampling.md").read_text(encoding="utf-8")
    for heading in ("## Keys", "## Claims", "## Question types", "## A complete example"):
        assert heading in text
    for key in ("prompt", "temperatures", "default", "seed", "contexts", "logits", "claims", "note",
                "condition", "choices", "answer"):
        assert f"`{key}`" in text or f"`contexts[].{key}`" in text, key
    lab_yaml, quiz_yaml = re.findall(r"```yaml\n(.*?)```", text, re.S)[-2:]
    monkeypatch.chdir(tmp_path)
    assert run_labs(capsys, "init", "s")[0] == 0
    lab = next(p for p in (tmp_path / "s/content/labs").iterdir() if "sampling" in p.name)
    own = (lab / "lab.yaml").read_text(encoding="utf-8")
    (lab / "lab.yaml").write_text(own[: own.index("sampling:")] + lab_yaml, encoding="utf-8")
    (lab / "quiz.yaml").write_text("questions:\n" + quiz_yaml, encoding="utf-8")
    monkeypatch.chdir(tmp_path / "s")
    code, _, err = run_labs(capsys, "check")
    assert code == 0, err
