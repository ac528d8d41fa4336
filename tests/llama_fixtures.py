"""Tiny Llama GGUF files written with the gguf library's own writer, and the fetched SmolLM2.

``write_gguf`` makes a complete, random, 2-layer Llama with a byte-level BPE vocabulary (three
control tokens, the 256 bytes, four merges): loadable by :func:`generator.models.llama.load_model`
in a few milliseconds, so error paths and the cache are tested without the 98 MB model. Its
keyword arguments break it on purpose (other metadata, a missing or reshaped tensor, NaN).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from generator.models.bpe import bytes_to_unicode

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("Ġ", "Ġ")]
CHAT_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
                 "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def tiny_vocabulary() -> tuple[list[str], list[int], list[str]]:
    """Tokens, their GGUF types and the merges ("left right") of the tiny model."""
    tokens = SPECIALS + list(bytes_to_unicode().values()) + [a + b for a, b in MERGES]
    types = [3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS))
    return tokens, types, [f"{a} {b}" for a, b in MERGES]


def write_gguf(path: Path, *, d: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2, ff: int = 96,
               qtype: str = "Q4_1", embed_type: str = "Q8_0", seed: int = 0, arch: str = "llama",
               metadata: dict | None = None, drop: tuple[str, ...] = (), shapes: dict | None = None,
               extra: dict | None = None, nan: str | None = None) -> Path:
    """Write a random Llama GGUF; ``metadata`` overrides keys (None removes one), ``drop`` leaves
    tensors out, ``shapes`` writes a tensor with another shape, ``extra`` adds tensors, ``nan`` puts
    a NaN into one (F32) tensor."""
    import gguf

    tokens, types, merges = tiny_vocabulary()
    rng = np.random.default_rng(seed)
    hd = d // heads
    tensors: dict[str, tuple[tuple[int, ...], str]] = {
        "token_embd.weight": ((len(tokens), d), embed_type), "output_norm.weight": ((d,), "F32")}
    for i in range(layers):
        b = f"blk.{i}."
        tensors.update({b + "attn_norm.weight": ((d,), "F32"), b + "attn_q.weight": ((heads * hd, d), qtype),
                        b + "attn_k.weight": ((kv_heads * hd, d), qtype), b + "attn_v.weight": ((kv_heads * hd, d), qtype),
                        b + "attn_output.weight": ((d, heads * hd), qtype), b + "ffn_norm.weight": ((d,), "F32"),
                        b + "ffn_gate.weight": ((ff, d), qtype), b + "ffn_up.weight": ((ff, d), qtype),
                        b + "ffn_down.weight": ((d, ff), qtype)})
    tensors.update(shapes and {name: (shape, tensors[name][1]) for name, shape in shapes.items()} or {})
    tensors.update(extra or {})
    keys = {
        "llama.block_count": layers, "llama.context_length": 256, "llama.embedding_length": d,
        "llama.feed_forward_length": ff, "llama.attention.head_count": heads, "llama.attention.head_count_kv": kv_heads,
        "llama.rope.freq_base": 10000.0, "llama.attention.layer_norm_rms_epsilon": 1e-5,
        "llama.rope.dimension_count": hd, "general.name": "tiny random llama",
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "smollm", "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": merges, "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2, "tokenizer.chat_template": CHAT_TEMPLATE,
    }
    keys.update(metadata or {})
    writer = gguf.GGUFWriter(path, arch)
    for key, value in keys.items():
        if value is None:
            continue
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, float):
            writer.add_float32(key, value)
        elif isinstance(value, str):
            writer.add_string(key, value)
        elif key == "tokenizer.ggml.token_type":
            writer.add_array(key, value)
        else:
            writer.add_array(key, value)
    for name, (shape, kind) in tensors.items():
        if name in drop:
            continue
        if name.endswith("norm.weight"):
            values = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            values = (0.3 * rng.standard_normal(shape)).astype(np.float32)
        if name == nan:
            values.flat[0] = np.nan
        qt = gguf.GGMLQuantizationType[kind]
        data = values if kind == "F32" else values.astype(np.float16) if kind == "F16" else gguf.quantize(values, qt)
        writer.add_tensor(name, data, raw_dtype=qt)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(path)


def smollm2_gguf() -> Path:
    """The fetched SmolLM2-135M-Instruct GGUF (``store.locate``). Skips without it — or fails when
    LABS_REQUIRE_REFERENCE=1 (CI fetches it with the README's first command)."""
    from generator.errors import BuildError
    from generator.models import store

    try:
        return store.locate("smollm2-135m-instruct")
    except BuildError as exc:
        if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
            pytest.fail(f"LABS_REQUIRE_REFERENCE=1 but {exc}")
        pytest.skip(str(exc))
