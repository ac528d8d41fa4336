"""The page files of a model bundle (generator/runtime/pagefiles.py): classic scripts that each
register one value under their own name, that put weights.bin and the tokenizer's data back
together byte for byte,
deterministically, within the download budgets: at most ~1.5 MB of token embeddings for a
20-word sentence, at most 14 MB gzip for a first use."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

from generator.models.wordpiece import encode
from generator.runtime.accuracy import generated_sentences as sentences
from generator.runtime.bundle import read_bundle
from generator.runtime.pagefiles import CODE_FILES, STATIC, page_files
from generator.runtime.vocab import tokenizer_data

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "content" / "models" / "all-minilm-l6-v2"
SCRIPT = re.compile(r'\(function\(L\)\{\(L\.runtimeData=L\.runtimeData\|\|\{\}\)\["([^"]+)"\]=(.*);\}\)\(self\.Labs=self\.Labs\|\|\{\}\);\n', re.S)
MB = 1_000_000


@pytest.fixture(scope="module")
def bundle():
    return read_bundle(COMMITTED)


@pytest.fixture(scope="module")
def page(bundle):
    return page_files(bundle)


def registered(name: str, data: bytes):
    match = SCRIPT.fullmatch(data.decode("utf-8"))
    assert match, f"{name} is not a data script: {data[:80]!r}"
    assert match.group(1) == name  # registered under its own file name, which the loader takes it by
    return json.loads(match.group(2))


def decoded(page, entry) -> bytes:
    data = base64.b64decode(registered(entry["src"], page.files[entry["src"]]), validate=True)
    assert (len(data), zlib.crc32(data)) == (entry["bytes"], entry["crc32"])
    assert entry["size"] == len(page.files[entry["src"]])
    return data


def test_page_files_are_deterministic(bundle, page):
    again = page_files(bundle)
    assert again.files == page.files and again.manifest == page.manifest


def test_the_scripts_put_the_weights_back_together(bundle, page):
    manifest = registered(page.manifest, page.files[page.manifest])
    assert manifest == page.manifest_data
    weights = (COMMITTED / "weights.bin").read_bytes()
    chunks = manifest["dense"]["chunks"]
    dense = b"".join(decoded(page, entry) for entry in chunks)
    assert [entry["offset"] for entry in chunks] == [sum(e["bytes"] for e in chunks[:i]) for i in range(len(chunks))]
    assert dense == weights[: manifest["dense"]["bytes"]]
    vocab = manifest["vocab"]
    assert manifest["load_bytes"] == page.load_bytes == vocab["size"] + sum(entry["size"] for entry in chunks)
    assert vocab["size"] == len(page.files[vocab["src"]])
    assert registered(vocab["src"], page.files[vocab["src"]]) == json.loads(json.dumps(tokenizer_data(bundle.tokenizer)))
    table = bundle.meta["tensors"]
    assert manifest["spec"]["tensors"] == {k: v for k, v in table.items() if not k.startswith("embeddings.word.")}
    rows, d = manifest["spec"]["shard_rows"], bundle.config.hidden_size
    words, scales = [], []
    for entry in manifest["shards"]:
        data = decoded(page, entry)
        words.append(np.frombuffer(data[: entry["count"] * d], dtype=np.int8))
        scales.append(np.frombuffer(data[entry["scales_offset"]:], dtype="<f2"))
        assert entry["count"] == rows or entry is manifest["shards"][-1]
    assert np.array_equal(np.concatenate(words).reshape(-1, d), bundle.tensors["embeddings.word.q"])
    assert np.array_equal(np.concatenate(scales).reshape(-1, d // 32), bundle.tensors["embeddings.word.scales"])
    assert page.files[page.license] == (COMMITTED / "LICENSE").read_bytes()


def test_every_name_is_a_fingerprint_of_its_content(page):
    for name, data in page.files.items():
        stem, digest, ext = name.rsplit(".", 2)
        payload = data
        if name.endswith(".js") and name != page.code:
            payload = SCRIPT.fullmatch(data.decode("utf-8")).group(2).strip('"').encode("utf-8")
        assert re.fullmatch(r"[0-9a-f]{8}", digest) and hashlib.sha256(payload).hexdigest()[:8] == digest, name


def test_the_code_is_the_engine_the_tokenizer_and_the_loader_minified(page):
    code = page.files[page.code].decode("utf-8")
    sources = [(STATIC / name).read_text(encoding="utf-8") for name in CODE_FILES]
    assert len(code) < 0.75 * sum(len(s) for s in sources)
    assert "runtime.engineSource" in code and "runtime.load=function" in code.replace(" ", "")
    assert "runtime.WordPiece" in code
    assert "fetch(" not in code and "eval(" not in code and "new Function" not in code


def test_a_20_word_sentence_loads_at_most_1_5_mb_of_embeddings_and_a_first_use_at_most_14_mb_gzip(bundle, page):
    manifest, rows = page.manifest_data, page.manifest_data["spec"]["shard_rows"]
    texts = sentences(bundle.tokenizer.vocab, 200, seed=7, min_words=20, max_words=20)
    shard_bytes = []
    for text in texts:
        needed = {i // rows for i in encode(text, bundle.tokenizer).ids}
        shard_bytes.append((sum(manifest["shards"][s]["size"] for s in needed), needed))
    worst, needed = max(shard_bytes, key=lambda item: item[0])
    assert worst <= 1.5 * MB, worst

    def gz(name: str) -> int:
        return len(gzip.compress(page.files[name], 6, mtime=0))

    first_use = [page.code, page.manifest, manifest["vocab"]["src"], *(c["src"] for c in manifest["dense"]["chunks"]),
                 *(manifest["shards"][s]["src"] for s in needed)]
    total = sum(map(gz, first_use))
    print(f"\nfirst use: {sum(len(page.files[n]) for n in first_use) / MB:.2f} MB raw, {total / MB:.2f} MB gzip "
          f"(worst 20-word sentence: {worst / MB:.2f} MB of embeddings, {len(needed)} shards; "
          f"median {sorted(b for b, _ in shard_bytes)[len(shard_bytes) // 2] / MB:.2f} MB)")
    assert total <= 14 * MB
