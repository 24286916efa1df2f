"""Byte encoding of solver states (msgpack) and the model digest every saved state carries."""
