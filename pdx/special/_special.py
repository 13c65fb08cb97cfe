"""`paddle.special` functions that are not plain re-exports of top-level ops."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from pdx._dtype import convert_dtype
from pdx._args import as_array, normalize_axis, op_error, static_int


@functools.partial(jax.jit, static_argnames=("axis",))
def _softmax_kernel(x, axis):
    return jax.nn.softmax(x, axis=axis)


def softmax(input, dim=None, dtype=None, *, out=None):  # noqa: A002 (Paddle's name)
    """Softmax along `dim` with the PyTorch-style arguments of `paddle.special.softmax`.

    Without `dim` the axis is chosen as Paddle (and PyTorch's legacy rule) does: 0 for
    0-, 1- and 3-D inputs, else 1.

    Args:
      input: a floating tensor.
      dim: the axis to normalize over.
      dtype: cast `input` to this dtype first.
      out: not supported (pdx returns a new array); must be None.

    Returns:
      A tensor like `input` whose entries along `dim` are positive and sum to 1.

    Example:
      >>> import pdx
      >>> pdx.special.softmax(pdx.to_tensor([[0.0, 0.0], [0.0, 0.0]]), dim=-1).tolist()
      [[0.5, 0.5], [0.5, 0.5]]
    """
    if out is not None:
        raise TypeError("pdx.special.softmax: `out=` is not supported (arrays are immutable); use the return value")
    x = as_array(input, name="input", op="special.softmax")
    if dtype is not None:
        x = x.astype(convert_dtype(dtype))
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"pdx.special.softmax: `input` must be floating (or pass `dtype`); got dtype {x.dtype}")
    if dim is None:
        dim = 0 if x.ndim in (0, 1, 3) else 1
    dim = static_int(dim, op="special.softmax", name="dim")
    if x.ndim == 0:
        if dim not in (0, -1):
            raise op_error("special.softmax", f"`dim`={dim} is out of range for a 0-D input")
        return jnp.ones_like(x)
    return _softmax_kernel(x, normalize_axis(dim, x.ndim, op="special.softmax", name="dim"))
