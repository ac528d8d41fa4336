"""The in-page model runtime: a real checkpoint, quantized, run by the learner's browser, with
its WordPiece tokenizer; shared by every lab kind that wants it.

``quantize.py`` (int8 per group of 32 weights), ``tensors.py`` (how the weights lie in a bundle),
``bundle.py`` (the committed model bundle and its NumPy reference), ``vocab.py`` (the tokenizer's
data for the page), ``pagefiles.py`` (the classic scripts a site serves), ``site.py`` (where a
bundle's files go in a site and where a bundle comes from) and ``static/`` (the JavaScript
forward pass, tokenizer and loader). The decoder's page files are ``decoder.py``; ``fetch.py``
gets a model into a site (its pinned files, and MiniLM's bundle into ``content/models/``) and
``commands.py`` is ``labs models`` and ``labs next``, which the CLI adds beside the kinds'
commands. docs/runtime.md describes the formats and the JavaScript API.

A module here imports the shared models (:mod:`generator.models`), :mod:`generator.errors`,
:mod:`generator.filepolicy` and :mod:`generator.webfiles` (JSON, fingerprints, minified code),
and never a lab kind: kinds use
the runtime, not the other way round.
"""
