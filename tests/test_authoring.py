"""A new author's path: `labs init`, `labs new`, and the order labs appear in."""

from __future__ import annotations

from pathlib import Path

from conftest import run_labs

from generator.content import load_site


def test_init_gitignore_lists_the_site_and_the_build_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_labs(capsys, "init", "mysite")
    assert code == 0, err
    lines = (tmp_path / "mysite/.gitignore").read_text(encoding="utf-8").splitlines()
    assert "site/" in lines and ".labs-cache/" in lines


def test_unlisted_labs_sort_by_number_and_new_says_where(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run_labs(capsys, "init", "s")[0] == 0
    monkeypatch.chdir(tmp_path / "s")
    content = Path("content")
    site = content / "site.yaml"
    text = site.read_text(encoding="utf-8")
    site.write_text(text[: text.index("labs:")] + "labs: []\n", encoding="utf-8")
    made = sorted(p.name for p in (content / "labs").iterdir())
    for slug in ("zeta", "alpha-two"):  # numbered after the others: the folder name must not order them
        code, out, err = run_labs(capsys, "new", slug)
        assert code == 0, err
    assert any("appears after" in line and "by number" in line for line in out), out
    order = list(load_site(content).order)
    numbers = {slug: int(next(line for line in (content / "labs" / slug / "lab.yaml").read_text().splitlines()
                              if line.startswith("number:")).split(":")[1]) for slug in order}
    assert order == sorted(order, key=numbers.get), (order, numbers)
    assert order[-2:] == ["zeta", "alpha-two"] and set(made) <= set(order)


def test_scaffolds_agree_with_the_readme_and_their_kind(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run_labs(capsys, "init", "s")[0] == 0
    labs = tmp_path / "s/content/labs"
    sampling = next(p for p in labs.iterdir() if "sampling" in p.name)
    for name in ("gist.md", "under-the-hood.md"):  # not the attention formula or code
        text = (sampling / name).read_text(encoding="utf-8")
        assert "QK" not in text and "softmax(q @ k" not in text, text
    for lab in labs.iterdir():
        text = (lab / "lab.yaml").read_text(encoding="utf-8")
        assert "legend (common to every lab" in text and "specific to labs of kind" not in text
    readme = (Path(__file__).resolve().parents[1] / "docs" / "authoring.md").read_text(encoding="utf-8")
    keys = readme[readme.index("    lab.yaml "):readme.index("gist.md ")]
    assert "subtitle" in keys and "gist" in keys and "legend" in keys


def test_the_scaffold_word_question_says_which_head_it_uses(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run_labs(capsys, "init", "s")[0] == 0
    lab = next(p for p in (tmp_path / "s/content/labs").iterdir() if "attention" in p.name)
    quiz = (lab / "quiz.yaml").read_text(encoding="utf-8")
    word = quiz[quiz.index("type: word"):]
    assert "head:" in word and "default head" in word, word
    monkeypatch.chdir(tmp_path / "s")
    assert run_labs(capsys, "check")[0] == 0
