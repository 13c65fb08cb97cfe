"""Random creation ops with Paddle names, drawing keys through `pdx._random.next_key`.

Eagerly, keys come from the global generator (`pdx.seed`). Under a trace each
op needs an explicit keyword-only `key=`; without one `next_key` raises an
error that says so.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float, default_int
from pdx._random import next_key
from pdx.ops._checks import broadcast_shapes, dtype_arg, static_int
from pdx.ops._common import as_array, op_error, shape_list


def _shape_arg(shape, op):
    dims = shape_list(shape, op=op)
    if any(d < 0 for d in dims):
        raise op_error(op, f"`shape`={list(dims)} has a negative dim; every dim must be >= 0")
    return dims


def _float_dtype(dtype, op):
    dt = dtype_arg(dtype, op=op) or default_float()
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"pdx.{op}: `dtype` must be a floating dtype; got {dtype!r}")
    return dt


def rand(shape, dtype=None, name=None, *, key=None):
    """Uniform random values in [0, 1).

    Args:
      shape: int, list/tuple of ints or 1-D integer tensor.
      dtype: floating output dtype; default float.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A tensor of `shape`.

    Example:
      >>> import pdx
      >>> pdx.rand([2, 3]).shape
      (2, 3)
    """
    return jax.random.uniform(next_key(key, op="rand"), _shape_arg(shape, "rand"), _float_dtype(dtype, "rand"))


def randn(shape, dtype=None, name=None, *, key=None):
    """Standard normal random values.

    Args:
      shape: int, list/tuple of ints or 1-D integer tensor.
      dtype: floating output dtype; default float.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A tensor of `shape`.

    Example:
      >>> import pdx
      >>> pdx.randn([4]).shape
      (4,)
    """
    return jax.random.normal(next_key(key, op="randn"), _shape_arg(shape, "randn"), _float_dtype(dtype, "randn"))


def randint(low=0, high=None, shape=[1], dtype=None, name=None, *, key=None):  # noqa: B006 (Paddle's default)
    """Random integers in [low, high); with `high=None` the range is [0, low).

    Args:
      low: lower bound (inclusive), or the upper bound when `high` is None.
      high: upper bound (exclusive).
      shape: output shape; default [1].
      dtype: integer dtype; default int64 (int32 without x64).
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      An integer tensor of `shape`.

    Example:
      >>> import pdx
      >>> int(pdx.randint(0, 5, [3]).max()) < 5
      True
    """
    if high is None:
        low, high = 0, low
    low = static_int(low, op="randint", name="low")
    high = static_int(high, op="randint", name="high")
    if low >= high:
        raise op_error("randint", f"`low`={low} must be < `high`={high}")
    dt = dtype_arg(dtype, op="randint") or default_int()
    if not jnp.issubdtype(dt, jnp.integer):
        raise TypeError(f"pdx.randint: `dtype` must be an integer dtype; got {dtype!r}")
    return jax.random.randint(next_key(key, op="randint"), _shape_arg(shape, "randint"), low, high, dtype=dt)


def uniform(shape, dtype=None, min=0, max=1.0, seed=0, name=None, *, key=None):  # noqa: A002 (Paddle's names)
    """Uniform random values in [min, max).

    The defaults follow the installed Paddle 3.3 (`min=0`, `max=1.0`). A
    non-zero `seed` draws from `jax.random.key(seed)` (same values on every
    call, like Paddle's per-op seed) when no `key` is given.

    Args:
      shape: int, list/tuple of ints or 1-D integer tensor.
      dtype: floating output dtype; default float.
      min: lower bound (inclusive).
      max: upper bound (exclusive).
      seed: 0 uses the global generator; other values fix the stream.
      name: ignored.
      key: a `jax.random` key; required under jit unless `seed` is non-zero.

    Returns:
      A tensor of `shape`.

    Example:
      >>> import pdx
      >>> x = pdx.uniform([100], min=-2.0, max=2.0)
      >>> bool((x >= -2).all() and (x < 2).all())
      True
    """
    if key is None and seed:
        key = jax.random.key(static_int(seed, op="uniform", name="seed"))
    return jax.random.uniform(next_key(key, op="uniform"), _shape_arg(shape, "uniform"),
                              _float_dtype(dtype, "uniform"), minval=min, maxval=max)


def normal(mean=0.0, std=1.0, shape=None, name=None, *, key=None):
    """Normal random values with the given mean and standard deviation.

    When `mean` or `std` is a tensor the output takes the broadcast shape of
    the tensor arguments and `shape` is ignored (as in Paddle); otherwise
    `shape` is required.

    Args:
      mean: a number or tensor.
      std: a number or tensor.
      shape: output shape when both `mean` and `std` are numbers.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A floating tensor.

    Example:
      >>> import pdx
      >>> pdx.normal(0.0, 2.0, shape=[3]).shape
      (3,)
    """
    tensors = {n: v for n, v in (("mean", mean), ("std", std)) if isinstance(v, (jax.Array, np.ndarray))}
    if tensors:
        tensors = {n: as_array(v, name=n, op="normal") for n, v in tensors.items()}
        out_shape = broadcast_shapes("normal", **tensors)
        dt = jnp.result_type(*[v.dtype for v in tensors.values()])
        if not jnp.issubdtype(dt, jnp.floating):
            dt = default_float()
    else:
        if shape is None:
            raise op_error("normal", "`shape` is required when `mean` and `std` are numbers, e.g. "
                                     "pdx.normal(0.0, 1.0, shape=[2, 3])")
        out_shape = _shape_arg(shape, "normal")
        dt = default_float()
    z = jax.random.normal(next_key(key, op="normal"), out_shape, dt)
    return (z * std + mean).astype(dt)


def bernoulli(x, p=None, name=None, *, key=None):
    """Bernoulli draws: 1 with probability `x` (or `p`), else 0.

    Args:
      x: a floating tensor of probabilities in [0, 1].
      p: optional single probability for every element; `x` then only gives the shape/dtype.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A tensor with `x`'s shape and dtype holding 0s and 1s.

    Example:
      >>> import pdx
      >>> pdx.bernoulli(pdx.ones([3])).tolist()
      [1.0, 1.0, 1.0]
    """
    x = as_array(x, op="bernoulli")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"pdx.bernoulli: `x` must be a floating tensor of probabilities; got dtype {x.dtype}")
    probs = x if p is None else jnp.full(x.shape, p, x.dtype)
    return jax.random.bernoulli(next_key(key, op="bernoulli"), probs).astype(x.dtype)


def multinomial(x, num_samples=1, replacement=False, name=None, *, key=None):
    """Sample category indices from (unnormalized) probabilities.

    Without replacement this uses the Gumbel-top-k trick, which draws the same
    distribution as sequential sampling without replacement.

    Args:
      x: a 1-D `[C]` or 2-D `[B, C]` tensor of non-negative weights.
      num_samples: samples per row (<= C without replacement).
      replacement: sample with replacement.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      An int64 (int32 without x64) tensor of shape `[num_samples]` or `[B, num_samples]`.

    Example:
      >>> import pdx
      >>> pdx.multinomial(pdx.to_tensor([0.0, 1.0]), 2, replacement=True).tolist()
      [1, 1]
    """
    x = as_array(x, op="multinomial")
    if x.ndim not in (1, 2):
        raise op_error("multinomial", f"`x` must be 1-D or 2-D; got x.shape={tuple(x.shape)}")
    num_samples = static_int(num_samples, op="multinomial", name="num_samples")
    categories = x.shape[-1]
    if num_samples < 1:
        raise op_error("multinomial", f"`num_samples`={num_samples} must be >= 1")
    if not replacement and num_samples > categories:
        raise op_error("multinomial", f"`num_samples`={num_samples} exceeds the {categories} categories; "
                                      "pass replacement=True to draw more")
    k = next_key(key, op="multinomial")
    logits = jnp.log(x.astype(jnp.float32))
    if replacement:
        batch = x.shape[:-1]
        samples = jax.random.categorical(k, logits, axis=-1, shape=(num_samples, *batch))
        out = jnp.moveaxis(samples, 0, -1)
    else:
        gumbel = jax.random.gumbel(k, logits.shape, jnp.float32)
        _, out = jax.lax.top_k(logits + gumbel, num_samples)
    return out.astype(default_int())
