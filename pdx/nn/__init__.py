"""pdx.nn: Layer (on flax.nnx), layers, initializers and functional ops."""

from pdx.nn import axes, functional, initializer
from pdx.nn._layer import Buffer, Layer, ParamAttr

__all__ = ["Buffer", "Layer", "ParamAttr", "axes", "functional", "initializer"]
