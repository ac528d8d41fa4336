"""The in-page model runtime: a real checkpoint, quantized, run by the learner's browser.

``quantize.py`` (int8 per group of 32 weights), ``bundle.py`` (the committed model bundle and its
NumPy reference), ``pagefiles.py`` (the classic scripts a site serves) and ``static/`` (the
JavaScript forward pass and loader). Shared by every lab kind that wants a real model; no kind
is imported here. docs/runtime.md describes the formats and the JavaScript API.
"""
