"""Attention Labs: a static site generator for interactive machine-learning labs."""

__version__ = "0.1.0"
