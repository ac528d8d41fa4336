"""Attention in NumPy: the core math, the designed teaching model and real pretrained heads."""

from generator.models.core import (
    causal_mask,
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)

__all__ = [
    "causal_mask",
    "merge_heads",
    "multi_head_attention",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
]
