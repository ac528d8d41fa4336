"""The Llama decoder's forward pass in NumPy — SmolLM2-135M's architecture — over a GGUF's weights.

The math is transformers' ``LlamaForCausalLM`` in eval mode (Touvron et al., 2023), for the ids of
tokens at positions ``p0 … p0+n-1`` (``p0`` tokens already in the cache)::

    x = E[ids]                                   # [n, d]  the token embeddings; no position embedding
    per layer:
        h       = RMSNorm(x) · g_attn
        q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ              # 9 query heads, 3 key/value heads, 64 wide (SmolLM2)
        q, k    = RoPE(q), RoPE(k)               # rotated by their positions
        k, v    = cache ++ k, cache ++ v          # the keys and values of every token so far
        a       = softmax(q·kᵀ/√64, causal)·v     # query head h reads key/value head h // 3
        x       = x + a·Woᵀ
        h       = RMSNorm(x) · g_mlp
        x       = x + (silu(h·Wgateᵀ) ⊙ h·Wupᵀ)·Wdownᵀ   # SwiGLU
    logits = RMSNorm(x) · g · Eᵀ                 # the unembedding is the embedding table (tied)

Matrices are ``[out, in]`` as the GGUF stores them (``y = x @ W.T``). Everything is float32: the
weights are dequantized once at load (540 MB for SmolLM2, :func:`cached_model` keeps one copy per
process). Every function below the loader is pure and vectorised over tokens and heads; the only
Python loop is over layers.

What a teaching lab reads from :func:`forward`: the residual stream after every layer
(``hidden_states``; :func:`logit_lens` turns each into next-token logits), every layer's attention
weights per head (``attentions``, on request), and the cache's keys and values.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from generator.models.core import scaled_dot_product_attention
from generator.errors import BuildError, display_path
from generator.models import bpe
from generator.models.gguf_io import GGUFFile, LlamaConfig, dequantize, llama_config, read_gguf

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class LlamaLayer:
    """One decoder layer, matrices [out, in]."""

    attn_norm: np.ndarray  # [d]
    w_qkv: np.ndarray  # [(H + 2·K)·hd, d]  query rows, then key rows, then value rows
    w_o: np.ndarray  # [d, H·hd]
    mlp_norm: np.ndarray  # [d]
    w_gate_up: np.ndarray  # [2f, d]  gate rows, then up rows
    w_down: np.ndarray  # [d, f]


@dataclass(frozen=True, eq=False)
class LlamaWeights:
    embedding: np.ndarray  # [V, d]
    norm: np.ndarray  # [d]  the final RMSNorm
    unembedding: np.ndarray  # [V, d]  the same array as ``embedding`` when tied
    layers: tuple[LlamaLayer, ...]


@dataclass(frozen=True, eq=False)
class LlamaModel:
    """A loaded GGUF: its numbers, its float32 weights and its tokenizer."""

    config: LlamaConfig
    weights: LlamaWeights
    tokenizer: bpe.BPETokenizer
    path: Path
    name: str = ""  # general.name from the file's metadata


@dataclass(frozen=True, eq=False)
class KVCache:
    """The keys (after RoPE) and values of every token read so far, every layer and key/value head."""

    keys: np.ndarray  # [L, K, m, hd]
    values: np.ndarray  # [L, K, m, hd]

    @property
    def length(self) -> int:  # m: tokens in the cache; the next token's position
        return self.keys.shape[2]


@dataclass(frozen=True, eq=False)
class LlamaOutput:
    hidden_states: np.ndarray  # [L+1, n, d]  the embeddings, then the residual stream after every layer
    cache: KVCache  # the cache given plus these n tokens
    attentions: np.ndarray | None = None  # [L, H, n, m]  softmax weights of every head; rows sum to 1


# ---- the math ------------------------------------------------------------------------------------


def rms_norm(x: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:  # [..., d], [d] -> [..., d]
    """x / √(mean(x²) + eps) · g: LayerNorm without centring and without a bias."""
    mean_square = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(mean_square + np.asarray(eps, dtype=x.dtype)) * g


def silu(x: np.ndarray) -> np.ndarray:  # [...] -> [...]
    """x · sigmoid(x), written with tanh (sigmoid(x) = (1 + tanh(x/2)) / 2): no exp to overflow."""
    return x * (0.5 + 0.5 * np.tanh(0.5 * x))


def swiglu(x: np.ndarray, w_gate_up: np.ndarray, w_down: np.ndarray) -> np.ndarray:  # [n, d], [2f, d], [d, f] -> [n, d]
    """The MLP: silu(x·Wgateᵀ) ⊙ (x·Wupᵀ), then ·Wdownᵀ; gate and up in one product."""
    gate, up = np.split(x @ w_gate_up.T, 2, axis=-1)  # 2 x [n, f]
    return (silu(gate) * up) @ w_down.T


def rope_angles(positions: np.ndarray, head_dim: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    # [n] -> cos [n, hd/2], sin [n, hd/2]
    """cos and sin of position · θ^(-2i/hd) for each pair i of a head's dimensions.

    The angles are computed in float64 and rounded once to float32 (at position 8,000 a float32
    product would be off by ~5e-4 radians).
    """
    inverse_frequency = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # [hd/2]
    angles = np.asarray(positions, dtype=np.float64)[:, None] * inverse_frequency  # [n, hd/2]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:  # [..., n, hd], [n, hd/2], [n, hd/2] -> [..., n, hd]
    """Rotate each ADJACENT pair of dimensions (2i, 2i+1) by its angle.

    Why adjacent: this is the pairing of Meta's original Llama code and of llama.cpp (its
    "normal" RoPE mode, which the ``llama`` architecture uses). Hugging Face's checkpoints rotate
    dimension i with i + hd/2 instead (``rotate_half``); llama.cpp's converter permutes the rows
    of Wq and Wk when it writes a GGUF so that the same model rotates adjacent pairs, and
    transformers' GGUF loader permutes them back. On the GGUF's weights only adjacent pairs give
    the model: with the other pairing " dog" still comes first after "The quick brown fox jumps
    over the lazy", but with p = 0.32 instead of 0.89 (tests/test_llama.py checks both).
    """
    pairs = x.reshape(*x.shape[:-1], -1, 2)  # [..., n, hd/2, 2]
    even, odd = pairs[..., 0], pairs[..., 1]  # [..., n, hd/2] each
    rotated = np.stack([even * cos - odd * sin, even * sin + odd * cos], axis=-1)  # [..., n, hd/2, 2]
    return rotated.reshape(x.shape)


def grouped_attention(
    q: np.ndarray,  # [H, n, hd]  queries of the n new tokens
    k: np.ndarray,  # [K, m, hd]  keys of all m tokens (cache + new), H a multiple of K
    v: np.ndarray,  # [K, m, hd]
) -> tuple[np.ndarray, np.ndarray]:  # -> [H, n, hd], [H, n, m]
    """Causal grouped-query attention: query head h reads key/value head h // (H/K), as
    transformers' ``repeat_kv`` and ggml's broadcast do. The n queries are the last n of the m
    positions; query i sees keys 0 … m-n+i."""
    n_heads, n, hd = q.shape
    n_kv, m, _ = k.shape
    group = n_heads // n_kv
    mask = np.arange(m)[None, :] <= np.arange(m - n, m)[:, None]  # [n, m]
    out, weights = scaled_dot_product_attention(
        q.reshape(n_kv, group, n, hd), k[:, None], v[:, None], mask=mask)  # [K, g, n, hd], [K, g, n, m]
    return out.reshape(n_heads, n, hd), weights.reshape(n_heads, n, m)


def _project(x: np.ndarray, layer: LlamaLayer, config: LlamaConfig, cos: np.ndarray, sin: np.ndarray):
    # [n, d], _, _, [n, hd/2], [n, hd/2] -> q [H, n, hd], k [K, n, hd], v [K, n, hd]
    """The queries, keys (both after RoPE) and values of n tokens: one product for all three."""
    n, hd, n_heads, n_kv = x.shape[0], config.head_dim, config.n_heads, config.n_kv_heads
    qkv = rms_norm(x, layer.attn_norm, config.rms_norm_eps) @ layer.w_qkv.T  # [n, (H + 2K)·hd]
    q, k, v = np.split(qkv, [n_heads * hd, (n_heads + n_kv) * hd], axis=-1)
    q = apply_rope(q.reshape(n, n_heads, hd).transpose(1, 0, 2), cos, sin)  # [H, n, hd]
    k = apply_rope(k.reshape(n, n_kv, hd).transpose(1, 0, 2), cos, sin)  # [K, n, hd]
    return q, k, v.reshape(n, n_kv, hd).transpose(1, 0, 2)


def _finish(x: np.ndarray, heads: np.ndarray, layer: LlamaLayer, config: LlamaConfig) -> np.ndarray:
    # [n, d], [H, n, hd] -> [n, d]
    """The rest of a layer after attention: the heads' output projection, then the MLP, each added
    to the residual stream."""
    n = x.shape[0]
    x = x + heads.transpose(1, 0, 2).reshape(n, config.n_heads * config.head_dim) @ layer.w_o.T
    return x + swiglu(rms_norm(x, layer.mlp_norm, config.rms_norm_eps), layer.w_gate_up, layer.w_down)


def decoder_layer(
    x: np.ndarray,  # [n, d]
    layer: LlamaLayer,
    config: LlamaConfig,
    cos: np.ndarray,  # [n, hd/2]  of the new tokens' positions
    sin: np.ndarray,  # [n, hd/2]
    past_keys: np.ndarray,  # [K, p0, hd]
    past_values: np.ndarray,  # [K, p0, hd]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # -> [n, d], keys [K, m, hd], values [K, m, hd], [H, n, m]
    """One pre-norm decoder layer; returns the new residual stream, the layer's keys and values
    with these tokens appended, and its attention weights."""
    q, k, v = _project(x, layer, config, cos, sin)
    keys = np.concatenate([past_keys, k], axis=1)  # [K, m, hd]
    values = np.concatenate([past_values, v], axis=1)  # [K, m, hd]
    heads, weights = grouped_attention(q, keys, values)  # [H, n, hd], [H, n, m]
    return _finish(x, heads, layer, config), keys, values, weights


def empty_cache(config: LlamaConfig) -> KVCache:
    shape = (config.n_layers, config.n_kv_heads, 0, config.head_dim)
    return KVCache(keys=np.zeros(shape, np.float32), values=np.zeros(shape, np.float32))


def forward(
    weights: LlamaWeights,
    config: LlamaConfig,
    ids,  # [n] int: the new tokens
    cache: KVCache | None = None,  # the tokens before them; None: they are the first
    attentions: bool = False,  # also return every head's weights ([L, H, n, m] float32: 270 MB for 500 tokens)
) -> LlamaOutput:
    """Run ``ids`` through the decoder after the tokens in ``cache``.

    A prompt runs in one call (prefill), then one token per call with the returned cache
    (decode); both give the same numbers as one call over everything (to float32 rounding).
    Preconditions (asserted): at least one id, ids within the vocabulary, positions within the
    context length.
    """
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    cache = empty_cache(config) if cache is None else cache
    n, start = ids.shape[0], cache.length
    assert n > 0, "forward needs at least one token"
    assert 0 <= ids.min() and ids.max() < config.vocab_size, "token id outside the vocabulary"
    assert start + n <= config.context_length, f"{start + n} tokens exceed the context length {config.context_length}"
    cos, sin = rope_angles(np.arange(start, start + n), config.head_dim, config.rope_theta)  # [n, hd/2] each
    x = weights.embedding[ids]  # [n, d]
    states = np.empty((config.n_layers + 1, n, config.hidden_size), dtype=np.float32)  # [L+1, n, d]
    states[0] = x
    m = start + n
    keys = np.empty((config.n_layers, config.n_kv_heads, m, config.head_dim), dtype=np.float32)  # [L, K, m, hd]
    values = np.empty_like(keys)
    maps = np.empty((config.n_layers, config.n_heads, n, m), dtype=np.float32) if attentions else None  # [L, H, n, m]
    for i, layer in enumerate(weights.layers):
        x, keys[i], values[i], layer_weights = decoder_layer(x, layer, config, cos, sin, cache.keys[i], cache.values[i])
        states[i + 1] = x
        if maps is not None:
            maps[i] = layer_weights
    return LlamaOutput(hidden_states=states, cache=KVCache(keys=keys, values=values), attentions=maps)


def unembed(weights: LlamaWeights, config: LlamaConfig, x: np.ndarray) -> np.ndarray:  # [..., d] -> [..., V]
    """Next-token logits from residual-stream vectors: the final RMSNorm, then the unembedding."""
    return rms_norm(x, weights.norm, config.rms_norm_eps) @ weights.unembedding.T


def logit_lens(weights: LlamaWeights, config: LlamaConfig, hidden_states: np.ndarray) -> np.ndarray:
    # [L+1, n, d] -> [L+1, n, V]
    """The logit lens (nostalgebraist, 2020): every layer's residual stream read out as if it were
    the last. Entry L is the model's own logits; pass ``hidden_states[:, -1:]`` for the last token only."""
    return unembed(weights, config, hidden_states)


def probabilities(logits: np.ndarray) -> np.ndarray:  # [..., V] -> [..., V] float64
    """softmax(logits) in float64, the maximum subtracted: 49,152 small probabilities sum to 1
    to double precision."""
    z = np.asarray(logits, dtype=np.float64)
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


PREFILL_CHUNK = 256  # queries an attention product takes: its scores are [H, chunk, m], not [H, n, n]


def prefill(weights: LlamaWeights, config: LlamaConfig, ids, cache: KVCache | None = None) -> tuple[np.ndarray, KVCache]:
    # [n] -> [d], cache
    """The residual stream of the last of ``ids`` (run after ``cache``), and the cache with them in it.

    Layer by layer, not chunk by chunk: a layer's Q/K/V, output projection and MLP take all n
    tokens in one product each; its attention takes :data:`PREFILL_CHUNK` queries at a time
    against the keys up to the last of them (scores [H, chunk, m]: one product over 8,192 tokens
    would hold H·n² floats, 2.4 GB a layer for SmolLM2). The keys and values are written once into
    a cache allocated for all m tokens: run chunk by chunk, each chunk copied the whole cache
    again, every layer. The same numbers as :func:`forward` over all of them (to float32 rounding).
    """
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    cache = empty_cache(config) if cache is None else cache
    n, start = ids.shape[0], cache.length
    assert n > 0, "prefill needs at least one token"
    assert 0 <= ids.min() and ids.max() < config.vocab_size, "token id outside the vocabulary"
    assert start + n <= config.context_length, f"{start + n} tokens exceed the context length {config.context_length}"
    m = start + n
    cos, sin = rope_angles(np.arange(start, m), config.head_dim, config.rope_theta)  # [n, hd/2] each
    keys = np.empty((config.n_layers, config.n_kv_heads, m, config.head_dim), dtype=np.float32)  # [L, K, m, hd]
    values = np.empty_like(keys)
    keys[:, :, :start], values[:, :, :start] = cache.keys, cache.values
    x = weights.embedding[ids]  # [n, d]
    heads = np.empty((config.n_heads, n, config.head_dim), dtype=np.float32)  # [H, n, hd]
    for i, layer in enumerate(weights.layers):
        q, keys[i, :, start:], values[i, :, start:] = _project(x, layer, config, cos, sin)
        for b in range(0, n, PREFILL_CHUNK):  # queries b … e-1 see keys 0 … start+e-1
            e = min(b + PREFILL_CHUNK, n)
            heads[:, b:e], _ = grouped_attention(q[:, b:e], keys[i, :, :start + e], values[i, :, :start + e])
        x = _finish(x, heads, layer, config)
    return x[-1], KVCache(keys=keys, values=values)


def next_token_logits(model: LlamaModel, ids, cache: KVCache | None = None) -> tuple[np.ndarray, KVCache]:
    # [n] -> [V], cache
    """The logits of the token after ``ids`` (run after ``cache``, by :func:`prefill`), and the
    cache with ``ids`` in it."""
    last, cache = prefill(model.weights, model.config, ids, cache)
    return unembed(model.weights, model.config, last), cache


# ---- loading a GGUF ---------------------------------------------------------------------------------


def load_weights(gg: GGUFFile, config: LlamaConfig) -> LlamaWeights:
    """Dequantize every tensor to float32, fusing Q|K|V and gate|up into one matrix each.

    Raises :class:`BuildError` naming the file for a tensor holding NaN or an infinity.
    """
    def tensor(name: str) -> np.ndarray:
        values = dequantize(gg.tensors[name])
        if not np.isfinite(values).all():  # it would reach every logit of every prompt
            raise BuildError(f"tensor {name!r} holds NaN or infinite values", path=display_path(gg.path))
        return values

    layers = []
    for i in range(config.n_layers):
        b = f"blk.{i}."
        layers.append(LlamaLayer(
            attn_norm=tensor(b + "attn_norm.weight"),
            w_qkv=np.concatenate([tensor(b + "attn_q.weight"), tensor(b + "attn_k.weight"), tensor(b + "attn_v.weight")]),
            w_o=tensor(b + "attn_output.weight"),
            mlp_norm=tensor(b + "ffn_norm.weight"),
            w_gate_up=np.concatenate([tensor(b + "ffn_gate.weight"), tensor(b + "ffn_up.weight")]),
            w_down=tensor(b + "ffn_down.weight"),
        ))
    embedding = tensor("token_embd.weight")
    unembedding = embedding if config.tied_embeddings else tensor("output.weight")
    return LlamaWeights(embedding=embedding, norm=tensor("output_norm.weight"), unembedding=unembedding,
                        layers=tuple(layers))


def load_model(path: Path) -> LlamaModel:
    """Read a Llama GGUF: its config, its weights in float32, its tokenizer.

    Raises :class:`BuildError` naming the file for anything :func:`~generator.models.gguf_io.read_gguf`,
    :func:`~generator.models.gguf_io.llama_config` or :func:`~generator.models.bpe.tokenizer_from_gguf`
    refuse, and for a vocabulary of another size than the embedding table.
    """
    gg = read_gguf(path)
    config = llama_config(gg)
    tokenizer = bpe.tokenizer_from_gguf(gg)
    if len(tokenizer.tokens) != config.vocab_size:
        raise BuildError(f"the tokenizer has {len(tokenizer.tokens):,} tokens but the embedding table "
                         f"{config.vocab_size:,} rows", path=display_path(gg.path))
    weights = load_weights(gg, config)
    name = gg.metadata.get("general.name")
    return LlamaModel(config=config, weights=weights, tokenizer=tokenizer, path=Path(path),
                      name=name if isinstance(name, str) else "")


@lru_cache(maxsize=1)
def _cached(path: str, size: int, mtime_ns: int) -> LlamaModel:
    return load_model(Path(path))


def cached_model(path: Path) -> LlamaModel:
    """:func:`load_model`, kept for the process: loading SmolLM2 parses 98 MB and dequantizes
    135M weights (a few seconds); a changed file (size or time) is read again."""
    path = Path(path)
    try:
        stat = os.stat(path)
    except OSError:
        return load_model(path)  # it raises the file's error
    return _cached(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
