"""Paddle's in-place functionals (`relu_`, `softmax_`, ...): present, and refusing.

JAX arrays are immutable, so an op cannot overwrite its input. Each name
exists so ported code fails at the call with a TypeError that names the
functional form to use instead.
"""

from __future__ import annotations

import inspect

__all__ = ["elu_", "embedding_renorm_", "hardtanh_", "leaky_relu_", "relu_", "softmax_", "tanh_",
           "thresholded_relu_"]


def _inplace(name: str, params: str, instead: str | None = None, args: str = "x"):
    """A function named `name` with Paddle's parameters `params` that raises a TypeError
    pointing to `instead` (default: the functional form, F.<name without the _>)."""
    instead = instead or f"F.{name[:-1]}({args})"
    message = f"pdx tensors are immutable: use {instead} instead of F.{name}({args})"

    def refuse(*args, **kwargs):
        raise TypeError(f"pdx.nn.functional.{name}: {message}")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__signature__ = inspect.signature(eval(f"lambda {params}: None"))  # noqa: S307  (a literal below)
    refuse.__doc__ = (f"Not supported: in-place `{name}` ({message}).\n\n"
                      f"Example:\n  >>> y = {instead}  # not F.{name}({args})\n")
    return refuse


elu_ = _inplace("elu_", "x, alpha=1.0, name=None")
hardtanh_ = _inplace("hardtanh_", "x, min=-1.0, max=1.0, name=None")
leaky_relu_ = _inplace("leaky_relu_", "x, negative_slope=0.01, name=None")
relu_ = _inplace("relu_", "x, name=None")
softmax_ = _inplace("softmax_", "x, axis=-1, dtype=None, name=None")
tanh_ = _inplace("tanh_", "x, name=None")
thresholded_relu_ = _inplace("thresholded_relu_", "x, threshold=1.0, value=0.0, name=None")
embedding_renorm_ = _inplace("embedding_renorm_", "x, weight, max_norm, norm_type=2.0",
                              "F.embedding(x, weight, max_norm=max_norm)",
                              "x, weight, max_norm")
