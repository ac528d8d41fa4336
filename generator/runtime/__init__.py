"""The model runtime a page loads on demand: the WordPiece tokenizer, its vocabulary and the
real model's forward pass in JavaScript, shared by every kind that wants them."""
