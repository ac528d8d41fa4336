"""The NumPy models and tokenizers that several lab kinds use, and the way to get their weights.

Nothing here knows YAML, pages or lab kinds. ``gguf_io`` reads llama.cpp's GGUF files (through the
``gguf`` library), ``llama`` is the decoder's forward pass, ``bpe`` its byte-level BPE tokenizer,
``sampling`` the seeded next-token sampler, and ``store`` fetches the pinned model files into a
cache outside the content folder and finds them again (``labs models fetch``).
"""
