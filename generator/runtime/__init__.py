"""The in-page model runtime: a real checkpoint, quantized, run by the learner's browser, with
its WordPiece tokenizer; shared by every lab kind that wants it (no kind is imported here).

``quantize.py`` (int8 per group of 32 weights), ``bundle.py`` (the committed model bundle and its
NumPy reference), ``vocab.py`` (the tokenizer's data for the page), ``pagefiles.py`` (the classic
scripts a site serves) and ``static/`` (the JavaScript forward pass, tokenizer and loader).
docs/runtime.md describes the formats and the JavaScript API.
"""
