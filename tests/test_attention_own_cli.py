"""``labs attention --designed``: the designed heads' weights for a tagged sentence."""

from __future__ import annotations

import json

import numpy as np
import pytest

from generator.kinds.attention import teaching
from generator.cli import main

TEXT = "A dog/NOUN chased/VERB the ball/NOUN in the park/NOUN"


def run(capsys, *argv):
    try:
        code = main(["attention", *argv])
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err.strip().splitlines()


def test_json_is_the_numpy_weights(capsys):
    code, out, err = run(capsys, "--designed", "--json", TEXT)
    assert (code, err) == (0, [])
    data = json.loads(out)
    words = teaching.parse_sentence(TEXT)
    expected = teaching.compute(words, heads=teaching.DEFAULT_HEADS)
    assert data["tokens"] == [w.text for w in words] and data["tags"] == [w.role for w in words]
    assert list(data["heads"]) == list(teaching.DEFAULT_HEADS)
    for hid, result in expected.items():
        assert np.array_equal(np.asarray(data["heads"][hid]), result.weights)


def test_cross_adds_alignment_and_the_source_and_causal_masks(capsys):
    code, out, _ = run(capsys, "--designed", "--json", "--source", "Le/DET chat/NOUN", "The cat/NOUN")
    data = json.loads(out)
    assert code == 0 and list(data["heads"]) == list(teaching.HEAD_IDS) and data["source"]["tokens"] == ["Le", "chat"]
    code, out, _ = run(capsys, "--designed", "--json", "--causal", "--head", "previous", TEXT)
    rows = json.loads(out)["heads"]["previous"]
    assert code == 0 and all(w == 0 for i, row in enumerate(rows) for w in row[i + 1:])


def test_tables_sum_to_100(capsys):
    code, out, _ = run(capsys, "--designed", "--head", "syntax", TEXT)
    assert code == 0 and out.startswith("Syntax head (self):")
    rows = [line.split()[2:] for line in out.splitlines()[3:] if line.strip()]
    assert all(sum(int(x) for x in row if x not in ".-") == 100 for row in rows)


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["--designed", "A dog chased"], 1, "error: sentence, character 3: 'dog' needs a tag"),
    (["--designed", "the cat/noun"], 1, "tags are written in capitals"),
    (["--designed", " "], 1, "the sentence has no words"),
    (["--designed", "--head", "sintax", TEXT], 2, "unknown designed head 'sintax' (did you mean 'syntax'?)"),
    (["--designed", "--causal", "--source", "Le/DET", TEXT], 2, "--causal: not allowed with --source"),
    (["--designed", "--layer", "1", TEXT], 2, "--layer: not allowed with --designed"),
    ([TEXT], 2, "required: --model (or --designed)"),
    (["--causal", "--model", "x", TEXT], 2, "--causal: only with --designed"),
], ids=["untagged", "lowercase-tag", "empty", "unknown-head", "causal-and-source", "layer", "no-model", "causal-without"])
def test_errors(capsys, argv, code, message):
    got, out, err = run(capsys, *argv)
    assert got == code and out == ""
    assert any(message in line for line in err), err
