"""The NumPy models and tokenizers that several lab kinds and the in-page runtime share.

``core.py`` (softmax, scaled dot-product attention, heads: pure functions with their shapes on
the signature line), ``bert.py`` (the BERT encoder and its checkpoint loading),
``wordpiece.py`` (BERT's WordPiece tokenizer) and ``safetensors_io.py`` (the checkpoint file
format). A model of another family goes here too, beside its tokenizer and its file reader.

Pure NumPy and file formats: a module here imports NumPy, the standard library, other modules
of this package and :mod:`generator.errors` (a mistake in a checkpoint is a BuildError naming the
file), and nothing else of the generator: no lab kind, no content model, no renderer, no runtime.
"""
