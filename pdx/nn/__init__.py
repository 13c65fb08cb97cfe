"""pdx.nn: Layer (on flax.nnx), layers, initializers and functional ops."""

from pdx.nn import functional

__all__ = ["functional"]
