"""``labs next`` and the seeded sampler behind ``--generate`` (generator/runtime/commands.py, generator/models/sampling.py).

The command runs on a tiny random GGUF (``--gguf``) so these tests need no download; one test runs
the fetched SmolLM2 when it is there. The sampler's draws are repeated in Node.js by the sampling
lab's own page script (``Labs.code.sampling``), on the same whole parts: the page can reproduce a
generation exactly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest
from llama_fixtures import smollm2_gguf, write_gguf

from conftest import ROOT
from generator.cli import main
from generator.models import llama, sampling

CORE_JS = ROOT / "generator" / "kinds" / "sampling" / "static" / "10-core.js"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_gguf(tmp_path_factory.mktemp("tiny") / "tiny.gguf", seed=11)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_table_lists_the_most_likely_tokens_with_their_probabilities(tiny, capsys):
    code, out, _ = run(capsys, "next", "the then", "--gguf", str(tiny), "--top", "4")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "tiny random llama: 4 prompt tokens: t he ␣the n"  # the header names the model
    assert lines[1].split() == ["rank", "token", "id", "probability", "logit"]
    assert [line.split()[0] for line in lines[2:]] == ["1", "2", "3", "4"]
    code, out, _ = run(capsys, "next", "the then", "--gguf", str(tiny), "--top", "4", "--json")
    data = json.loads(out)
    model = llama.cached_model(tiny)
    probs = llama.probabilities(llama.next_token_logits(model, data["ids"])[0])
    assert [row["id"] for row in data["next"]] == np.argsort(-probs, kind="stable")[:4].tolist()
    assert [row["probability"] for row in data["next"]] == pytest.approx(np.sort(probs)[::-1][:4].tolist())
    assert data["tokens"] == ["t", "he", "␣the", "n"]


def test_generating_with_a_seed_gives_the_same_text_twice(tiny, capsys):
    argv = ["next", "the", "--gguf", str(tiny), "--generate", "12", "--temperature", "1.5", "--seed", "7", "--json"]
    first = json.loads(run(capsys, *argv)[1])["generated"]
    second = json.loads(run(capsys, *argv)[1])["generated"]
    assert first == second and len(first["steps"]) >= 1
    other = json.loads(run(capsys, *argv[:-2], "8", "--json")[1])["generated"]
    assert other["steps"] != first["steps"]  # another seed, another draw (certain here: 263 near-flat tokens)
    greedy = json.loads(run(capsys, "next", "the", "--gguf", str(tiny), "--generate", "3", "--temperature", "0", "--json")[1])
    first_logits = llama.next_token_logits(llama.cached_model(tiny), greedy["ids"])[0]
    assert greedy["generated"]["steps"][0]["id"] == int(np.argmax(first_logits))


@pytest.mark.parametrize(("argv", "message"), [
    (["--top", "0"], "argument --top: must be at least 1"),
    (["--seed", "3"], "argument --seed: only with --generate"),
    (["--generate", "0"], "argument --generate: must be from 1 to 200"),
    (["--generate", "2", "--top-p", "0"], "argument --top-p: a whole percentage from 1 to 100"),
    (["--generate", "2", "--temperature", "-1"], "argument --temperature: must be 0 (greedy) or a positive number"),
    (["--generate", "2", "--seed", str(2**32)], "argument --seed: from 0 to 4294967295"),
], ids=["top", "seed-alone", "generate", "top-p", "temperature", "seed"])
def test_usage_errors_exit_2(tiny, capsys, argv, message):
    with pytest.raises(SystemExit) as caught:
        main(["next", "x", "--gguf", str(tiny), *argv])
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_an_empty_prompt_and_a_missing_model_are_one_line_errors(tiny, tmp_path, capsys, monkeypatch):
    assert run(capsys, "next", "", "--gguf", str(tiny))[:3:2] == (1, "error: the prompt has no tokens\n")
    assert run(capsys, "next", "caf\udce9", "--gguf", str(tiny))[:3:2] == (1, "error: the prompt is not valid UTF-8 text\n")
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "empty"))
    code, _, err = run(capsys, "next", "Hello")
    assert code == 1 and err.count("\n") == 1
    assert "the model smollm2-135m-instruct is not fetched" in err and "run `labs models fetch smollm2-135m-instruct`" in err


def test_the_page_script_draws_the_same_tokens_from_the_same_parts(tiny):
    """Step i's parts in Python, the sampling lab's cut and mulberry32 draw in Node: the same tokens."""
    if shutil.which("node") is None:
        if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
            pytest.fail("LABS_REQUIRE_REFERENCE=1 but Node.js is not installed (scripts/setup-tests installs it)")
        pytest.skip("needs Node.js (scripts/setup-tests installs it)")
    model = llama.cached_model(tiny)
    cases = []
    for seed, temperature, top_k, top_p in [(0, 1.0, 0, 100), (7, 0.7, 40, 100), (123456789, 1.3, 0, 90), (2**32 - 1, 2.0, 5, 50)]:
        settings = sampling.Settings(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        generation = sampling.generate(model, [1, 119, 260], 15, settings)
        ids, parts = [1, 119, 260], []
        for step in generation.steps:  # the parts each step drew from (before the cut: the page cuts)
            logits = llama.next_token_logits(model, ids)[0]
            parts.append(sampling.decoding.to_parts(sampling.decoding.softmax(logits, [temperature])[0], sampling.PARTS).tolist())
            ids.append(step.token_id)
        cases.append({"seed": seed, "k": top_k, "p": top_p, "parts": parts, "python": list(generation.ids)})
    script = CORE_JS.read_text() + """
const S = globalThis.Labs.code.sampling, cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(cases.map(c => {
  const g = S.mulberry32(c.seed);
  return c.parts.map(w => S.draw(S.cut(w, c.k, c.p), g()));
})));"""
    out = subprocess.run(["node", "-e", script], input=json.dumps(cases), capture_output=True, text=True, check=True, timeout=120)
    for case, js in zip(cases, json.loads(out.stdout), strict=True):
        assert js == case["python"]


def test_labs_next_on_smollm2_puts_paris_first(capsys):
    smollm2_gguf()  # skips (or fails in CI) without the fetched model
    code, out, _ = run(capsys, "next", "The capital of France is", "--top", "3", "--json")
    data = json.loads(out)
    assert code == 0 and data["model"] == "smollm2-135m-instruct" and data["ids"] == [504, 3575, 282, 4649, 314]
    assert data["next"][0]["text"] == " Paris" and data["next"][0]["token"] == "␣Paris"
    code, out, _ = run(capsys, "next", "Name a colour.", "--chat", "--generate", "8", "--seed", "5", "--json")
    again = json.loads(run(capsys, "next", "Name a colour.", "--chat", "--generate", "8", "--seed", "5", "--json")[1])
    assert json.loads(out)["generated"] == again["generated"]
