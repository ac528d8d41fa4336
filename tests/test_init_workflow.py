"""``labs init DIR --github-pages REQUIREMENT``: the GitHub Pages workflow a site of one's own gets.

The workflow is read as YAML and its steps checked one by one; then its own commands (all but
the pip install, which is what the test already runs) are run in the new site, in the workflow's
order, and must build it. The models it fetches come from a temporary models cache holding hard
links to the fetched SmolLM2 files, so the real cache is never written.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
import yaml

from generator.cli import main
from generator.models import store
from llama_fixtures import smollm2_gguf

REQUIREMENT = "attention-labs @ git+https://github.com/someone/attention-labs@0123456789abcdef"


def _workflow(folder: Path) -> dict:
    return yaml.safe_load((folder / ".github" / "workflows" / "pages.yml").read_text(encoding="utf-8"))


def _steps(doc: dict) -> list[dict]:
    return doc["jobs"]["build"]["steps"]


@pytest.fixture
def site(tmp_path, capsys) -> Path:
    folder = tmp_path / "my-labs"
    assert main(["init", str(folder), "--github-pages", REQUIREMENT]) == 0
    assert ".github/workflows/pages.yml builds the site and publishes it" in capsys.readouterr().out
    return folder


def test_the_workflow_installs_fetches_builds_uploads_and_deploys_in_that_order(site):
    doc = _workflow(site)
    assert doc[True] == {"push": {"branches": ["main"]}, "workflow_dispatch": None}  # YAML 1.1 reads `on` as true
    assert doc["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    steps = _steps(doc)
    uses = [step.get("uses", "").split("@")[0] for step in steps]
    runs = [step["run"] for step in steps if "run" in step]
    assert uses[:3] == ["actions/checkout", "actions/setup-python", "actions/configure-pages"]
    assert shlex.split(runs[0]) == ["pip", "install", REQUIREMENT]
    assert runs[1:] == ["labs models fetch", 'labs build --base-url "${{ steps.pages.outputs.base_url }}/"']
    pages = next(step for step in steps if step.get("uses", "").startswith("actions/configure-pages"))
    assert pages["id"] == "pages"  # the id the build's --base-url reads
    upload = steps[-1]
    assert upload["uses"].startswith("actions/upload-pages-artifact@") and upload["with"] == {"path": "site"}
    deploy = doc["jobs"]["deploy"]
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert [step["uses"].split("@")[0] for step in deploy["steps"]] == ["actions/deploy-pages"]
    assert deploy["steps"][0]["id"] == "deployment"  # the id its environment's url reads


@pytest.mark.parametrize("requirement", ["dist/attention_labs-0.1.0-py3-none-any.whl",
                                         "attention-labs @ git+https://example.org/a b.git@main",
                                         "it's \"quoted\" $HOME `date` ; rm -rf / #", "ünïcode-labs"])
def test_pip_receives_exactly_the_requirement_given(tmp_path, requirement):
    assert main(["init", str(tmp_path / "s"), "--github-pages", requirement]) == 0
    assert shlex.split(_steps(_workflow(tmp_path / "s"))[3]["run"]) == ["pip", "install", requirement]


@pytest.mark.parametrize("requirement", ["", "   ", "a\nb", "a\x00b", "labs ${{ secrets.TOKEN }}"])
def test_a_requirement_that_is_empty_several_lines_or_an_actions_expression_is_an_error(tmp_path, capsys, requirement):
    assert main(["init", str(tmp_path / "s"), "--github-pages", requirement]) == 1
    assert "--github-pages needs what pip installs the generator from" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()  # nothing written


def test_without_the_flag_there_is_no_workflow(tmp_path):
    assert main(["init", str(tmp_path / "s")]) == 0
    assert not (tmp_path / "s" / ".github").exists()


def test_the_workflows_own_commands_build_the_new_site(site, tmp_path, monkeypatch, capsys):
    cache = tmp_path / "models"
    fetched = smollm2_gguf().parent
    (cache / fetched.name).mkdir(parents=True)
    for pinned in store.source(fetched.name).files:  # links, never written through: the real cache stays as it is
        os.link(fetched / pinned.name, cache / fetched.name / pinned.name)
    monkeypatch.setenv("LABS_MODELS_DIR", str(cache))
    monkeypatch.setattr(store, "download_wheel", lambda *a: pytest.fail("the fetched model was downloaded again"))
    monkeypatch.chdir(site)
    runs = [step["run"] for step in _steps(_workflow(site)) if "run" in step][1:]
    for run in runs:
        argv = shlex.split(run.replace("${{ steps.pages.outputs.base_url }}", "https://someone.github.io/my-labs"))
        assert argv[0] == "labs"
        assert main(argv[1:]) == 0, capsys.readouterr().err
    assert (site / "site" / "index.html").is_file()
    assert "https://someone.github.io/my-labs/" in (site / "site" / "sitemap.xml").read_text(encoding="utf-8")


def test_docs_hosting_shows_the_workflow_labs_init_writes(tmp_path):
    from conftest import ROOT

    shown = "attention-labs @ git+https://github.com/OWNER/attention-labs@COMMIT"
    assert main(["init", str(tmp_path / "s"), "--github-pages", shown]) == 0
    written = (tmp_path / "s" / ".github" / "workflows" / "pages.yml").read_text(encoding="utf-8")
    assert "```yaml\n" + written + "```\n" in (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
