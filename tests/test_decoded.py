"""The decoder's stored results (generator/runtime/decoded.py) and ``labs decode``, with a stand-in
computation and model: the file's format, its keys, lookup with positioned errors for what is
missing or stale, and a refresh that computes only what it must. The sampling kind's own use of
the store, on the real model, is tested in test_sampling_real.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_labs
from generator.errors import BuildError, ContentError, Diagnostic
from generator.kinds import ModelUse
from generator.kinds.sampling import SamplingKind
from generator.models import store
from generator.runtime import decoded

MODEL = "smollm2-135m-instruct"
PINNED = store.pinned_sha256(MODEL)
calls: list[dict] = []


def double(model, inputs):  # a computation: module-level, so it pickles
    calls.append(dict(inputs))
    return {"twice": decoded.rounded([inputs["x"] * 2.0, 1 / 3], 4), "model": model}


DOUBLE = decoded.Computation("double", 1, double)
AT = Diagnostic("content/labs/demo/lab.yaml", 7, 9, "")


def request(x: float, computation: decoded.Computation = DOUBLE, model: str = MODEL) -> decoded.Request:
    return decoded.Request(model, computation, {"x": x}, AT)


@pytest.fixture(autouse=True)
def _fresh():
    calls.clear()
    decoded._load.cache_clear()
    yield
    decoded._load.cache_clear()


def refresh(folder: Path, requests) -> tuple[Path, int]:
    return decoded.refresh(folder, requests, model_loader=lambda name: f"<{name}>")


def test_a_key_is_the_hash_of_the_computation_and_its_inputs_in_any_key_order():
    assert decoded.key_of("double", {"a": 1, "b": "é"}) == decoded.key_of("double", {"b": "é", "a": 1})
    assert decoded.key_of("double", {"a": 1}) != decoded.key_of("triple", {"a": 1})
    assert decoded.key_of("double", {"a": 1}) != decoded.key_of("double", {"a": 1.5})
    assert len(request(1).key) == 64


def test_refresh_writes_one_entry_a_line_deterministically_and_reads_back(tmp_path):
    path, computed = refresh(tmp_path, [request(2), request(1), request(2)])
    assert (path, computed) == (tmp_path / "decoded.json", 2) and [c["x"] for c in calls] == [2, 1]
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    assert lines[0] == ('{"format":"attention-labs/decoded","model":{"name":"smollm2-135m-instruct","sha256":"'
                        + PINNED + '"},"version":1,')
    assert lines[1] == '"entries":{' and lines[-2:] == ["}}", ""] and len(lines) == 6
    assert lines[2] < lines[3]  # sorted by key
    assert '"twice":[4.0,0.3333]' in text  # floats rounded by the computation, written shortest
    stored = decoded.load(tmp_path)
    assert decoded.lookup(stored, request(2)) == {"twice": [4.0, 0.3333], "model": f"<{MODEL}>"}
    assert stored.entries[request(1).key].line in (3, 4)
    # Again: nothing to compute, not a byte changed.
    assert refresh(tmp_path, [request(1), request(2)]) == (path, 0) and path.read_text(encoding="utf-8") == text
    assert len(calls) == 2


def test_refresh_computes_only_what_changed_and_drops_what_no_one_reads(tmp_path):
    refresh(tmp_path, [request(1), request(2)])
    calls.clear()
    path, computed = refresh(tmp_path, [request(2), request(3)])
    assert computed == 1 and calls == [{"x": 3}]
    stored = decoded.load(tmp_path)
    assert set(stored.entries) == {request(2).key, request(3).key}


def test_a_missing_file_or_entry_is_an_error_at_the_request_naming_the_command(tmp_path):
    folder = tmp_path / "demo"
    folder.mkdir()
    result, problem = decoded.find(decoded.load(folder), request(1))
    assert result is None and (problem.path, problem.line, problem.column) == (AT.path, 7, 9)
    assert "demo/decoded.json does not exist" in problem.message
    assert "run `labs decode --lab demo` to compute it with smollm2-135m-instruct" in problem.message
    refresh(folder, [request(1)])
    with pytest.raises(ContentError) as caught:
        decoded.lookup(decoded.load(folder), request(5))
    assert str(caught.value).startswith("content/labs/demo/lab.yaml:7:9: error: ")
    assert 'holds nothing for double {"x":5}; run `labs decode --lab demo`' in str(caught.value)


def test_results_of_another_model_file_or_computation_version_are_stale(tmp_path):
    refresh(tmp_path, [request(1)])
    text = (tmp_path / "decoded.json").read_text(encoding="utf-8")
    (tmp_path / "decoded.json").write_text(text.replace(PINNED, "0" * 64), encoding="utf-8")
    _, problem = decoded.find(decoded.load(tmp_path), request(1))
    assert "computed with another file of smollm2-135m-instruct (SHA-256 000000000000…" in problem.message
    assert "so double {\"x\":1} is stale" in problem.message
    (tmp_path / "decoded.json").write_text(text, encoding="utf-8")
    newer = decoded.Computation("double", 2, double)
    _, problem = decoded.find(decoded.load(tmp_path), request(1, newer))
    assert "was computed by version 1 of 'double'; this build reads version 2" in problem.message
    # labs decode recomputes both kinds of stale entry.
    assert refresh(tmp_path, [request(1, newer)])[1] == 1
    assert decoded.find(decoded.load(tmp_path), request(1, newer))[1] is None


def test_a_damaged_file_is_an_error_at_its_line(tmp_path):
    refresh(tmp_path, [request(1), request(2)])
    path = tmp_path / "decoded.json"
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[3] = lines[3].replace('"x":', '"y":')  # edited by hand: the key no longer matches
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ContentError) as caught:
        decoded.load(tmp_path)
    assert str(caught.value).startswith(f"{path}:4:1: error: the entry's key does not match its inputs")
    for text, message in (("{", "is not JSON"), ('{"format": "x"}', "not a stored-decoder file"),
                          ('{"format": "attention-labs/decoded", "version": 9}', "of version 9"),
                          (b"\xff", "not UTF-8")):
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        decoded._load.cache_clear()
        with pytest.raises(ContentError, match=message):
            decoded.load(tmp_path)
    # refresh writes a damaged file again from scratch
    assert refresh(tmp_path, [request(1)])[1] == 1 and decoded.load(tmp_path).entries


def test_one_file_holds_one_models_results(tmp_path):
    with pytest.raises(BuildError, match="holds one model's results"):
        refresh(tmp_path, [request(1), request(1, model="all-minilm-l6-v2")])


def test_a_result_with_nan_is_refused():
    with pytest.raises(ValueError):
        decoded.dumps(MODEL, PINNED, {"k": ("double", 1, {}, {"x": float("nan")})})


# ---- the commands: labs decode, labs models fetch (no names) ---------------------------------------


@pytest.mark.project("shipped")
def test_labs_decode_asks_the_kinds_and_computes_what_is_missing(project, capsys, monkeypatch):
    wanted = [request(1), request(2)]
    monkeypatch.setattr(SamplingKind, "models", lambda self, lab: (ModelUse(MODEL, tuple(wanted)),))
    monkeypatch.setattr(decoded, "load_model", lambda name: f"<{name}>")
    code, out, err = run_labs(capsys, "decode", "--lab", "sampling")
    assert (code, err) == (0, []), err
    assert out[-1] == "content/labs/sampling/decoded.json: 2 of 2 results computed"
    wanted.append(request(3))
    code, out, err = run_labs(capsys, "decode")
    assert out[-1] == "content/labs/sampling/decoded.json: 1 of 3 results computed, the rest already stored"
    code, _, err = run_labs(capsys, "decode", "--lab", "samplin")
    assert code == 2 and "no lab 'samplin' in content/ (did you mean 'sampling'?)" in err[-1]
    code, out, _ = run_labs(capsys, "models", "fetch", "--help")
    assert code == 0


@pytest.mark.project("shipped")
def test_fetch_with_no_names_takes_the_models_the_kinds_say_the_labs_use(project, capsys, monkeypatch):
    fetched: list[str] = []
    from generator.kinds.nexttoken import NextTokenKind
    from generator.kinds.tokens import TokensKind
    from generator.runtime import fetch

    monkeypatch.setattr(fetch, "fetch", lambda name, content, report: fetched.append(name))
    monkeypatch.setattr(SamplingKind, "models", lambda self, lab: ())
    monkeypatch.setattr(NextTokenKind, "models", lambda self, lab: ())  # lab 06
    monkeypatch.setattr(TokensKind, "models", lambda self, lab: ())  # lab 03: the BPE comparison
    code, out, _ = run_labs(capsys, "models", "fetch")
    assert (code, fetched) == (0, []) and "no lab uses a model" in out[-1]
    monkeypatch.setattr(SamplingKind, "models", lambda self, lab: (ModelUse(MODEL),))
    code, out, _ = run_labs(capsys, "models", "fetch")
    assert (code, fetched, out[0]) == (0, [MODEL], f"the labs in content/ use: {MODEL}")
    code, out, _ = run_labs(capsys, "models", "list")
    assert any(line.startswith(MODEL) and line.endswith("used by the labs") for line in out)
