"""One module per toolset; each exposes ``register(registry)``. Heavy imports stay inside handlers."""
