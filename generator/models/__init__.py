"""The NumPy models and tokenizers that several lab kinds and the in-page runtime share.

The encoder: ``core.py`` (softmax, scaled dot-product attention, heads: pure functions with their
shapes on the signature line), ``bert.py`` (the BERT encoder and its checkpoint loading),
``wordpiece.py`` (BERT's WordPiece tokenizer) and ``safetensors_io.py`` (the checkpoint file
format). The decoder: ``gguf_io.py`` (llama.cpp's GGUF files, through the ``gguf`` library),
``llama.py`` (the Llama forward pass with its KV cache), ``bpe.py`` (its byte-level BPE tokenizer),
``decoding.py`` and ``sampling.py`` (temperature, top-k, top-p and the seeded draw, on whole
parts so that the page draws the same tokens). ``store.py`` fetches the pinned model files into a
cache outside the content folder and finds them again. A model of another family goes here too,
beside its tokenizer and its file reader.

Pure NumPy and file formats: a module here imports NumPy, the standard library, other modules
of this package, :mod:`generator.errors` (a mistake in a checkpoint is a BuildError naming the
file) and :mod:`generator.filepolicy` (no FIFO or device is opened), and nothing else of the
generator: no lab kind, no content model, no renderer, no runtime.
"""
