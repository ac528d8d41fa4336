"""How a BERT model's weights lie in a bundle: the tensor layout, and float weights to and from it.

:func:`layout` names every tensor of a model with its dtype and shape, in file order;
:func:`quantized_tensors` makes those arrays from float weights; :func:`dequantized_weights`
turns them back into :class:`~generator.models.bert.BertWeights` holding exactly the numbers
the page multiplies by. ``bundle.py`` reads and writes the files that hold them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from generator.models.bert import BertConfig, BertWeights, LayerWeights
from generator.runtime import quantize

MATRICES = ("qkv", "o", "in", "out")  # per layer, in the order the forward pass uses them


def layout(config: BertConfig) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Tensor name -> (dtype, shape), in file order, for a model of ``config``."""
    d, f, g = config.hidden_size, config.intermediate_size, quantize.n_groups
    table: dict[str, tuple[str, tuple[int, ...]]] = {
        "embeddings.position": ("float32", (config.max_position_embeddings, d)),
        "embeddings.token_type": ("float32", (config.type_vocab_size, d)),
        "embeddings.ln.g": ("float32", (d,)),
        "embeddings.ln.b": ("float32", (d,)),
    }
    shapes = {"qkv": (3 * d, d), "o": (d, d), "in": (f, d), "out": (d, f)}  # [out, in]
    for i in range(config.num_hidden_layers):
        for name in MATRICES:
            rows, width = shapes[name]
            table[f"layers.{i}.{name}.q"] = ("int8", (rows, width))
            table[f"layers.{i}.{name}.scales"] = ("float16", (rows, g(width)))
            table[f"layers.{i}.{name}.bias"] = ("float32", (rows,))
        for norm in ("ln1", "ln2"):
            table[f"layers.{i}.{norm}.g"] = ("float32", (d,))
            table[f"layers.{i}.{norm}.b"] = ("float32", (d,))
    table["embeddings.word.q"] = ("int8", (config.vocab_size, d))
    table["embeddings.word.scales"] = ("float16", (config.vocab_size, g(d)))
    return table


def quantized_tensors(weights: BertWeights) -> dict[str, np.ndarray]:
    """The arrays of :func:`layout` for float weights (``bert.load_weights``' [in, out] matrices)."""
    out: dict[str, np.ndarray] = {
        "embeddings.position": weights.position,
        "embeddings.token_type": weights.token_type,
        "embeddings.ln.g": weights.ln_g,
        "embeddings.ln.b": weights.ln_b,
    }
    for i, layer in enumerate(weights.layers):
        matrices = {"qkv": (layer.w_qkv, layer.b_qkv), "o": (layer.w_o, layer.b_o),
                    "in": (layer.w_in, layer.b_in), "out": (layer.w_out, layer.b_out)}
        for name, (w, b) in matrices.items():
            out[f"layers.{i}.{name}.q"], out[f"layers.{i}.{name}.scales"] = quantize.quantize(w.T)  # -> [out, in]
            out[f"layers.{i}.{name}.bias"] = b
        out[f"layers.{i}.ln1.g"], out[f"layers.{i}.ln1.b"] = layer.ln1_g, layer.ln1_b
        out[f"layers.{i}.ln2.g"], out[f"layers.{i}.ln2.b"] = layer.ln2_g, layer.ln2_b
    out["embeddings.word.q"], out["embeddings.word.scales"] = quantize.quantize(weights.word)
    return out


def dequantized_weights(tensors: Mapping[str, np.ndarray], config: BertConfig, dtype: type = np.float32) -> BertWeights:
    """:class:`BertWeights` holding exactly the numbers the page computes with (see quantize.py)."""
    def t(name: str) -> np.ndarray:
        return np.array(tensors[name], dtype=dtype)

    def matrix(name: str) -> np.ndarray:  # stored [out, in] -> bert.py's [in, out]
        w = quantize.dequantize(tensors[name + ".q"], tensors[name + ".scales"])
        return np.ascontiguousarray(w.T, dtype=dtype)

    layers = tuple(
        LayerWeights(
            w_qkv=matrix(f"layers.{i}.qkv"), b_qkv=t(f"layers.{i}.qkv.bias"),
            w_o=matrix(f"layers.{i}.o"), b_o=t(f"layers.{i}.o.bias"),
            ln1_g=t(f"layers.{i}.ln1.g"), ln1_b=t(f"layers.{i}.ln1.b"),
            w_in=matrix(f"layers.{i}.in"), b_in=t(f"layers.{i}.in.bias"),
            w_out=matrix(f"layers.{i}.out"), b_out=t(f"layers.{i}.out.bias"),
            ln2_g=t(f"layers.{i}.ln2.g"), ln2_b=t(f"layers.{i}.ln2.b"),
        )
        for i in range(config.num_hidden_layers)
    )
    word = DequantizedRows(tensors["embeddings.word.q"], tensors["embeddings.word.scales"], dtype)  # indexed as the table
    return BertWeights(word=word, position=t("embeddings.position"), token_type=t("embeddings.token_type"),
                       ln_g=t("embeddings.ln.g"), ln_b=t("embeddings.ln.b"), layers=layers)


class DequantizedRows:
    """The token embedding table ``[V, d]`` of int8 rows and their scales, dequantized row by row as
    it is indexed: a forward pass reads only its tokens' rows (``weights.word[ids]``), so the whole
    table in float32 is never made (MiniLM's is 47 MB, and three times that while it is made: the
    peak of a build that checks a bundle). ``table[ids]`` is ``dequantize(q, scales)[ids]`` to the
    bit: dequantizing is entry by entry."""

    def __init__(self, q: np.ndarray, scales: np.ndarray, dtype: type = np.float32):
        self.q, self.scales, self.dtype = q, scales, np.dtype(dtype)
        self.shape = q.shape

    def __getitem__(self, index) -> np.ndarray:
        rows = np.asarray(index)
        flat = rows.reshape(-1)
        out = quantize.dequantize(self.q[flat], self.scales[flat]).astype(self.dtype)
        return out.reshape(rows.shape + self.shape[1:])

    def __array__(self, dtype=None, copy=None) -> np.ndarray:  # the whole table, for any other use
        table = quantize.dequantize(self.q, self.scales).astype(self.dtype)
        return table if dtype is None else table.astype(dtype)
