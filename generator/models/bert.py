"""A BERT encoder's forward pass in NumPy, for checkpoints in a local Hugging Face folder.

The folder holds ``config.json``, ``model.safetensors`` and ``vocab.txt`` (and optionally
``tokenizer_config.json``), as ``save_pretrained`` writes them. Tensor names may carry a
``bert.`` prefix (``BertForMaskedLM`` & co.) or none (``BertModel``, sentence-transformers).
Nothing is downloaded: the folder is the whole model.

The math is post-LayerNorm BERT as in Devlin et al. (2019) and transformers' ``BertModel``
in eval mode (no dropout)::

    x   = LayerNorm(word[ids] + position[0..n) + token_type[types])
    per layer:
        a = LayerNorm(x + SelfAttention(x))        # attention through core.scaled_dot_product_attention
        x = LayerNorm(a + W2 · gelu(W1 · a + b1) + b2)

Every function is pure and vectorised over leading batch axes; only :func:`load_model`
touches the disk. Problems with the folder raise :class:`~generator.errors.BuildError`
naming the offending file.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from generator.models.core import merge_heads, scaled_dot_product_attention, split_heads
from generator.models.safetensors_io import load_safetensors, read_header
from generator.models.wordpiece import Encoding, WordPieceTokenizer, encode, load_tokenizer
from generator.errors import BuildError, display_path
from generator.filepolicy import read_limited

# model_type values whose checkpoints have exactly BertModel's architecture and tensor names.
BERT_MODEL_TYPES = frozenset({"bert"})
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu")


@dataclass(frozen=True)
class BertConfig:
    """The architecture numbers of ``config.json`` that the forward pass needs."""

    vocab_size: int
    hidden_size: int  # d: width of every token vector
    num_hidden_layers: int  # L
    num_attention_heads: int  # H; d must divide evenly among them
    intermediate_size: int  # f: width of the feed-forward layer
    max_position_embeddings: int  # longest sequence, [CLS] and [SEP] included
    type_vocab_size: int = 2  # segment A/B embeddings; we always use segment 0
    layer_norm_eps: float = 1e-12  # BERT's own value; HF writes it into every config
    hidden_act: str = "gelu"  # BERT uses the exact erf GELU

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads


@dataclass(frozen=True, eq=False)
class LayerWeights:
    """One encoder layer; matrices stored [in, out] so that ``y = x @ w + b``."""

    w_qkv: np.ndarray  # [d, 3d]  query | key | value projections side by side
    b_qkv: np.ndarray  # [3d]
    w_o: np.ndarray  # [d, d]
    b_o: np.ndarray  # [d]
    ln1_g: np.ndarray  # [d]
    ln1_b: np.ndarray  # [d]
    w_in: np.ndarray  # [d, f]
    b_in: np.ndarray  # [f]
    w_out: np.ndarray  # [f, d]
    b_out: np.ndarray  # [d]
    ln2_g: np.ndarray  # [d]
    ln2_b: np.ndarray  # [d]


@dataclass(frozen=True, eq=False)
class BertWeights:
    word: np.ndarray  # [V, d]
    position: np.ndarray  # [P, d]
    token_type: np.ndarray  # [T, d]
    ln_g: np.ndarray  # [d]
    ln_b: np.ndarray  # [d]
    layers: tuple[LayerWeights, ...]


@dataclass(frozen=True, eq=False)
class BertModel:
    """A loaded checkpoint: architecture, weights and tokenizer."""

    config: BertConfig
    weights: BertWeights
    tokenizer: WordPieceTokenizer
    model_dir: Path


@dataclass(frozen=True, eq=False)
class BertOutput:
    attentions: np.ndarray  # [..., L, H, n, n]  softmax weights; rows sum to 1
    hidden_states: np.ndarray  # [..., L+1, n, d] embeddings, then the output of every layer

    @property
    def last_hidden_state(self) -> np.ndarray:  # -> [..., n, d]
        return self.hidden_states[..., -1, :, :]


# ---- the math ---------------------------------------------------------------------------------

# Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7 over the whole real line; 5 terms and one exp,
# so it costs ~15 vectorised operations (math.erf would be one Python call per element).
# The published coefficients sum to 1 - 1e-9; dividing by their sum makes erf(0) exactly 0
# and moves no value by more than 1e-9.
_ERF_P = 0.3275911
_ERF_PUBLISHED = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_ERF_A = tuple(a / sum(_ERF_PUBLISHED) for a in _ERF_PUBLISHED)


def erf(x: np.ndarray) -> np.ndarray:  # [...] -> [...]
    """The error function, max absolute error 1.5e-7 (well below float32 resolution near 1).

    Written with in-place operations: it holds three temporaries of ``x``'s size, not ten.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    a1, a2, a3, a4, a5 = _ERF_A
    a = np.abs(x)
    t = np.multiply(a, _ERF_P)
    t += 1.0
    np.reciprocal(t, out=t)  # t = 1 / (1 + p|x|)
    poly = t * a5
    for coefficient in (a4, a3, a2, a1):  # Horner: t·(a1 + t·(a2 + t·(a3 + t·(a4 + t·a5))))
        poly += coefficient
        poly *= t
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)  # a = exp(-x²)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    return np.copysign(poly, x, out=poly)


def gelu(x: np.ndarray) -> np.ndarray:  # [...] -> [...]
    """Exact GELU: x·Φ(x) = x/2 · (1 + erf(x/√2)), as BERT's ``hidden_act: gelu``."""
    y = erf(x * (1 / math.sqrt(2)))
    y += 1.0
    y *= x
    y *= 0.5
    return y


def gelu_tanh(x: np.ndarray) -> np.ndarray:  # [...] -> [...]
    """The tanh approximation of GELU (``gelu_new``, ``gelu_pytorch_tanh``)."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def relu(x: np.ndarray) -> np.ndarray:  # [...] -> [...]
    return np.maximum(x, 0)


_ACT = {"gelu": gelu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "relu": relu}


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:  # [..., d], [d], [d] -> [..., d]
    """Normalise the last axis to mean 0 and (biased) variance 1, then scale and shift."""
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(variance + np.asarray(eps, dtype=x.dtype)) * g + b


def embed(weights: BertWeights, input_ids: np.ndarray, token_type_ids: np.ndarray, eps: float) -> np.ndarray:
    # [..., n] ids, [..., n] types -> [..., n, d]
    n = input_ids.shape[-1]
    x = weights.word[input_ids] + weights.position[:n] + weights.token_type[token_type_ids]
    return layer_norm(x, weights.ln_g, weights.ln_b, eps)


def encoder_layer(
    x: np.ndarray,  # [..., n, d]
    layer: LayerWeights,
    n_heads: int,
    eps: float,
    activation=gelu,
    mask: np.ndarray | None = None,  # bool, broadcastable to [..., H, n, n]; True = may attend
) -> tuple[np.ndarray, np.ndarray]:  # -> [..., n, d], [..., H, n, n]
    """One post-LayerNorm transformer encoder layer; returns the new states and the attention weights."""
    q, k, v = np.split(x @ layer.w_qkv + layer.b_qkv, 3, axis=-1)  # 3 x [..., n, d]
    context, weights = scaled_dot_product_attention(
        split_heads(q, n_heads), split_heads(k, n_heads), split_heads(v, n_heads), mask=mask
    )  # [..., H, n, d/H], [..., H, n, n]
    x = layer_norm(x + merge_heads(context) @ layer.w_o + layer.b_o, layer.ln1_g, layer.ln1_b, eps)
    hidden = activation(x @ layer.w_in + layer.b_in)  # [..., n, f]
    x = layer_norm(x + hidden @ layer.w_out + layer.b_out, layer.ln2_g, layer.ln2_b, eps)
    return x, weights


def bert_forward(
    weights: BertWeights,
    config: BertConfig,
    input_ids: np.ndarray,  # [..., n] int
    token_type_ids: np.ndarray | None = None,  # [..., n] int; default all 0 (one segment)
    attention_mask: np.ndarray | None = None,  # [..., n] bool/0-1; False = padding nobody attends to
) -> BertOutput:
    """Run the encoder; every layer's attention and every hidden state come back.

    Preconditions (asserted): ids within the vocabulary, ``n <= max_position_embeddings``.
    """
    input_ids = np.asarray(input_ids)
    n = input_ids.shape[-1]
    assert n <= config.max_position_embeddings, f"{n} tokens exceed max_position_embeddings={config.max_position_embeddings}"
    assert input_ids.size == 0 or 0 <= input_ids.min() and input_ids.max() < config.vocab_size, "token id outside the vocabulary"
    if token_type_ids is None:
        token_type_ids = np.zeros_like(input_ids)
    mask = None
    if attention_mask is not None:
        mask = np.asarray(attention_mask, dtype=bool)[..., None, None, :]  # [..., 1, 1, n]
    activation = _ACT[config.hidden_act]
    x = embed(weights, input_ids, token_type_ids, config.layer_norm_eps)  # [..., n, d]
    n_layers, lead = len(weights.layers), input_ids.shape[:-1]
    # Filled layer by layer rather than stacked at the end: stacking would hold every
    # attention matrix twice at the peak.
    states = np.empty((*lead, n_layers + 1, *x.shape[-2:]), dtype=x.dtype)  # [..., L+1, n, d]
    attentions = np.empty((*lead, n_layers, config.num_attention_heads, n, n), dtype=x.dtype)  # [..., L, H, n, n]
    states[..., 0, :, :] = x
    for i, layer in enumerate(weights.layers):
        x, layer_weights = encoder_layer(x, layer, config.num_attention_heads, config.layer_norm_eps, activation, mask)
        states[..., i + 1, :, :] = x
        attentions[..., i, :, :, :] = layer_weights
    return BertOutput(attentions=attentions, hidden_states=states)


def run_sentence(model: BertModel, sentence: str) -> tuple[Encoding, BertOutput]:
    """Tokenise ``sentence`` and run it through ``model``: attentions [L, H, n, n] over word pieces.

    Raises :class:`BuildError` if the sentence has more pieces than the model has positions.
    """
    encoding = encode(sentence, model.tokenizer)
    limit = model.config.max_position_embeddings
    if len(encoding.ids) > limit:
        raise BuildError(
            f"sentence is {len(encoding.ids)} word pieces long ([CLS] and [SEP] included); "
            f"the model reads at most {limit}: {sentence[:60]!r}"
        )
    return encoding, bert_forward(model.weights, model.config, np.array(encoding.ids, dtype=np.int64))


# ---- loading a folder ---------------------------------------------------------------------------

_REQUIRED_INT_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
)


# Far beyond any BERT-family checkpoint (BERT-large: 24 layers, 16 heads, d = 1024, f = 4096,
# 512 positions, 30k-120k words), but small enough that a crafted config.json cannot make
# the reader build millions of tensor names or allocate gigabytes before checking the file.
CONFIG_LIMITS = {
    "vocab_size": 1_000_000,
    "hidden_size": 8192,
    "num_hidden_layers": 128,
    "num_attention_heads": 256,
    "intermediate_size": 65_536,
    "max_position_embeddings": 65_536,
    "type_vocab_size": 1024,
}


def read_config(path: Path) -> BertConfig:
    """Parse and check a BERT ``config.json``; :class:`BuildError` naming it for anything else."""
    shown = display_path(path)
    if not os.path.lexists(path):
        raise BuildError("config.json not found: is this a Hugging Face model folder?", path=shown)
    try:  # the file policy: a FIFO or a device refused before it is opened, a huge file on its size
        data = json.loads(read_limited(Path(path), None, 1 << 20, what="a model configuration").decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise BuildError(f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=shown) from None
    except ValueError as exc:  # not UTF-8, or an integer of thousands of digits
        raise BuildError(f"cannot read config: {exc}", path=shown) from None
    except RecursionError:
        raise BuildError("config is nested too deeply to be a model configuration", path=shown) from None
    if not isinstance(data, dict):
        raise BuildError("config must be a JSON object", path=shown)

    model_type = data.get("model_type")
    if model_type is None:
        architectures = data.get("architectures") or []
        if not (isinstance(architectures, list) and architectures and all(str(a).startswith("Bert") for a in architectures)):
            raise BuildError("config has no 'model_type'; expected a BERT model ('model_type': 'bert')", path=shown)
    elif model_type not in BERT_MODEL_TYPES:
        raise BuildError(
            f"model_type {model_type!r} is not BERT; supported: {', '.join(sorted(BERT_MODEL_TYPES))}", path=shown
        )
    missing = [key for key in _REQUIRED_INT_KEYS if key not in data]
    if missing:
        raise BuildError(f"config lacks {', '.join(repr(k) for k in missing)}", path=shown)
    numbers = {key: data[key] for key in (*_REQUIRED_INT_KEYS, "type_vocab_size") if key in data}
    for key, value in numbers.items():
        if type(value) is not int or value <= 0:
            raise BuildError(f"{key!r} must be a positive integer, not {value!r}", path=shown)
        if value > CONFIG_LIMITS[key]:  # checked before any tensor name is built or any memory allocated
            raise BuildError(f"{key!r} is {value}, more than this reader accepts ({CONFIG_LIMITS[key]:,})", path=shown)
    eps = data.get("layer_norm_eps", 1e-12)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise BuildError(f"'layer_norm_eps' must be a small positive number, not {eps!r}", path=shown)
    act = data.get("hidden_act", "gelu")
    if act not in ACTIVATIONS:
        raise BuildError(f"hidden_act {act!r} is not supported (supported: {', '.join(ACTIVATIONS)})", path=shown)
    position_type = data.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise BuildError(f"position_embedding_type {position_type!r} is not supported (only 'absolute')", path=shown)
    if data.get("is_decoder"):
        raise BuildError("a decoder configuration ('is_decoder': true) is not supported", path=shown)
    if numbers["hidden_size"] % numbers["num_attention_heads"]:
        raise BuildError(
            f"hidden_size {numbers['hidden_size']} is not divisible by num_attention_heads {numbers['num_attention_heads']}",
            path=shown,
        )
    return BertConfig(**numbers, layer_norm_eps=float(eps), hidden_act=act)


def _expected_tensors(config: BertConfig) -> dict[str, tuple[int, ...]]:
    """Unprefixed tensor name -> shape that ``config`` implies (HF Linear weights are [out, in])."""
    d, f = config.hidden_size, config.intermediate_size
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (config.vocab_size, d),
        "embeddings.position_embeddings.weight": (config.max_position_embeddings, d),
        "embeddings.token_type_embeddings.weight": (config.type_vocab_size, d),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
    }
    for i in range(config.num_hidden_layers):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            shapes[f"{p}attention.self.{name}.weight"] = (d, d)
            shapes[f"{p}attention.self.{name}.bias"] = (d,)
        shapes[f"{p}attention.output.dense.weight"] = (d, d)
        shapes[f"{p}attention.output.dense.bias"] = (d,)
        shapes[f"{p}attention.output.LayerNorm.weight"] = (d,)
        shapes[f"{p}attention.output.LayerNorm.bias"] = (d,)
        shapes[f"{p}intermediate.dense.weight"] = (f, d)
        shapes[f"{p}intermediate.dense.bias"] = (f,)
        shapes[f"{p}output.dense.weight"] = (d, f)
        shapes[f"{p}output.dense.bias"] = (d,)
        shapes[f"{p}output.LayerNorm.weight"] = (d,)
        shapes[f"{p}output.LayerNorm.bias"] = (d,)
    return shapes


def _stored_name(name: str, available: set[str], prefix: str) -> str | None:
    """The name under which ``name`` is stored: with the prefix, and with TF-era gamma/beta for LayerNorm."""
    candidates = [prefix + name]
    if name.endswith("LayerNorm.weight"):
        candidates.append(prefix + name.removesuffix("weight") + "gamma")
    if name.endswith("LayerNorm.bias"):
        candidates.append(prefix + name.removesuffix("bias") + "beta")
    return next((c for c in candidates if c in available), None)


def load_weights(path: Path, config: BertConfig, dtype: type = np.float32) -> BertWeights:
    """Read and check every tensor ``config`` calls for from ``model.safetensors``.

    Raises :class:`BuildError` naming the file for a bad file, a missing tensor or a tensor
    whose shape disagrees with ``config.json``; integer or bool weights are refused too.
    """
    header = read_header(path)
    shown = display_path(path)
    available = set(header.tensors)
    prefix = next(
        (p for p in ("", "bert.") if f"{p}embeddings.word_embeddings.weight" in available),
        None,
    )
    if prefix is None:
        raise BuildError(
            "no 'embeddings.word_embeddings.weight' (nor 'bert.embeddings.word_embeddings.weight'): not a BERT checkpoint",
            path=shown,
        )
    stored: dict[str, str] = {}
    for name, shape in _expected_tensors(config).items():
        key = _stored_name(name, available, prefix)
        if key is None:
            raise BuildError(f"missing tensor {prefix + name!r} (config.json has {config.num_hidden_layers} layers)", path=shown)
        info = header.tensors[key]
        if info.shape != shape:
            raise BuildError(
                f"tensor {key!r} has shape {list(info.shape)} but config.json implies {list(shape)}", path=shown
            )
        if info.dtype not in ("F16", "BF16", "F32", "F64"):
            raise BuildError(f"tensor {key!r} has dtype {info.dtype}; weights must be floating point", path=shown)
        stored[name] = key
    arrays = load_safetensors(path, list(stored.values()), float_dtype=dtype)
    for key in stored.values():  # NaN or inf would flow into every attention weight and into --json
        if not np.isfinite(arrays[key]).all():
            raise BuildError(f"tensor {key!r} holds NaN or infinite values", path=shown)
    t = {name: arrays[key] for name, key in stored.items()}

    def linear(name: str) -> np.ndarray:  # HF [out, in] -> our [in, out], contiguous for fast matmul
        return np.ascontiguousarray(t[name + ".weight"].T)

    layers = []
    for i in range(config.num_hidden_layers):
        p = f"encoder.layer.{i}."
        qkv = [f"{p}attention.self.{x}" for x in ("query", "key", "value")]
        layers.append(
            LayerWeights(
                w_qkv=np.ascontiguousarray(np.concatenate([linear(x) for x in qkv], axis=1)),
                b_qkv=np.concatenate([t[x + ".bias"] for x in qkv]),
                w_o=linear(f"{p}attention.output.dense"),
                b_o=t[f"{p}attention.output.dense.bias"],
                ln1_g=t[f"{p}attention.output.LayerNorm.weight"],
                ln1_b=t[f"{p}attention.output.LayerNorm.bias"],
                w_in=linear(f"{p}intermediate.dense"),
                b_in=t[f"{p}intermediate.dense.bias"],
                w_out=linear(f"{p}output.dense"),
                b_out=t[f"{p}output.dense.bias"],
                ln2_g=t[f"{p}output.LayerNorm.weight"],
                ln2_b=t[f"{p}output.LayerNorm.bias"],
            )
        )
    return BertWeights(
        word=t["embeddings.word_embeddings.weight"],
        position=t["embeddings.position_embeddings.weight"],
        token_type=t["embeddings.token_type_embeddings.weight"],
        ln_g=t["embeddings.LayerNorm.weight"],
        ln_b=t["embeddings.LayerNorm.bias"],
        layers=tuple(layers),
    )


def load_model(model_dir: Path, dtype: type = np.float32) -> BertModel:
    """Load a BERT checkpoint folder (``config.json``, ``model.safetensors``, ``vocab.txt``).

    ``dtype`` is the float type of the computation (float32 like PyTorch; float64 for
    reference checks). Raises :class:`BuildError` naming the folder or the offending file:
    missing folder or file, non-BERT or incomplete config, bad safetensors, tensor shapes
    that disagree with the config, a vocabulary larger than the embedding table.
    """
    model_dir = Path(model_dir)
    if not model_dir.exists():
        raise BuildError("model folder not found", path=display_path(model_dir))
    if not model_dir.is_dir():
        raise BuildError("expected a model folder (config.json, model.safetensors, vocab.txt) but found a file", path=display_path(model_dir))
    config = read_config(model_dir / "config.json")
    weights_path = model_dir / "model.safetensors"
    if not weights_path.is_file():
        if (model_dir / "pytorch_model.bin").is_file():
            raise BuildError(
                "only pytorch_model.bin is here; convert it once to model.safetensors "
                "(e.g. with transformers: from_pretrained(folder).save_pretrained(folder, safe_serialization=True))",
                path=display_path(weights_path),
            )
        raise BuildError("model.safetensors not found", path=display_path(weights_path))
    weights = load_weights(weights_path, config, dtype)
    tokenizer = load_tokenizer(model_dir)
    largest = max(tokenizer.vocab.values())
    if largest >= config.vocab_size:
        raise BuildError(
            f"vocabulary has ids up to {largest} but config.json says vocab_size={config.vocab_size}",
            path=display_path(model_dir / "vocab.txt"),
        )
    return BertModel(config=config, weights=weights, tokenizer=tokenizer, model_dir=model_dir)


# ---- a random checkpoint (tests, demos) ----------------------------------------------------------


def write_random_checkpoint(
    folder: Path,
    vocab: list[str],
    config: BertConfig,
    seed: int = 0,
    prefix: str = "",
    scale: float = 0.5,
) -> None:
    """Write a complete BERT folder with random weights: config.json, model.safetensors, vocab.txt.

    For tests and demos without a real checkpoint. ``scale`` is the weights' standard
    deviation; 0.5 gives attention patterns far from uniform. ``prefix`` ("" or "bert.")
    chooses the tensor naming. Loadable by :func:`load_model` and by transformers.
    """
    from generator.models.safetensors_io import save_safetensors  # local: only this helper writes

    assert len(vocab) <= config.vocab_size, "vocab.txt may not be larger than the embedding table"
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    tensors = {}
    for name, shape in _expected_tensors(config).items():
        if name.endswith("LayerNorm.weight"):
            value = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            value = scale * rng.standard_normal(shape)
        tensors[prefix + name] = value.astype(np.float32)
    save_safetensors(folder / "model.safetensors", tensors, metadata={"format": "pt"})
    (folder / "vocab.txt").write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    settings = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "layer_norm_eps": config.layer_norm_eps,
        "hidden_act": config.hidden_act,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
    }
    (folder / "config.json").write_text(json.dumps(settings, indent=2, sort_keys=True) + "\n", encoding="utf-8")
