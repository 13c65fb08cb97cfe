"""More random ops: permutations, *_like draws and Poisson/binomial/gamma/log-normal samplers.

Like `_random_ops`, each takes a keyword-only `key=`; without it a key is
split off the global generator (`pdx.seed`) eagerly, and under a trace the op
raises an error asking for one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import default_float, default_int
from pdx._random import next_key
from pdx.ops._checks import broadcast_shapes, dtype_arg, static_int
from pdx.ops._common import as_array, op_error, shape_list


def _float_dtype(dtype, op, fallback=None):
    dt = dtype_arg(dtype, op=op) or fallback or default_float()
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"pdx.{op}: `dtype` must be a floating dtype; got {dtype!r}")
    return dt


def randperm(n, dtype="int64", name=None, *, key=None):
    """A random permutation of `0 .. n-1`.

    Args:
      n: a non-negative int.
      dtype: output dtype (integer or floating); default int64 (int32 without x64).
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A 1-D tensor of length `n`.

    Example:
      >>> import pdx
      >>> sorted(pdx.randperm(4).tolist())
      [0, 1, 2, 3]
    """
    n = static_int(n, op="randperm", name="n")
    if n < 0:
        raise op_error("randperm", f"`n`={n} must be >= 0")
    dt = dtype_arg(dtype, op="randperm") or default_int()
    return jax.random.permutation(next_key(key, op="randperm"), n).astype(dt)


def _like(x, op):
    return as_array(x, name="x" if op != "rand_like" else "input", op=op)


def rand_like(input, name=None, *, dtype=None, key=None):  # noqa: A002 (Paddle's name)
    """Uniform [0, 1) values with the shape (and floating dtype) of `input`.

    Args:
      input: a tensor.
      name: ignored.
      dtype: floating output dtype; default `input.dtype` when floating, else the default float.
      key: a `jax.random` key; required under jit.

    Returns:
      A tensor of `input.shape`.

    Example:
      >>> import pdx
      >>> pdx.rand_like(pdx.zeros([2, 3])).shape
      (2, 3)
    """
    x = _like(input, "rand_like")
    fallback = x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else None
    return jax.random.uniform(next_key(key, op="rand_like"), x.shape, _float_dtype(dtype, "rand_like", fallback))


def randn_like(x, dtype=None, name=None, *, key=None):
    """Standard normal values with the shape (and floating dtype) of `x`.

    Args:
      x: a tensor.
      dtype: floating output dtype; default `x.dtype` when floating, else the default float.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A tensor of `x.shape`.

    Example:
      >>> import pdx
      >>> pdx.randn_like(pdx.zeros([4])).shape
      (4,)
    """
    x = _like(x, "randn_like")
    fallback = x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else None
    return jax.random.normal(next_key(key, op="randn_like"), x.shape, _float_dtype(dtype, "randn_like", fallback))


def randint_like(x, low=0, high=None, dtype=None, name=None, *, key=None):
    """Random integers in [low, high) (or [0, low) when `high` is None) with the shape of `x`.

    Args:
      x: a tensor.
      low: lower bound, or the upper bound when `high` is None.
      high: upper bound (exclusive).
      dtype: output dtype; default `x.dtype`.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A tensor of `x.shape`.

    Example:
      >>> import pdx
      >>> int(pdx.randint_like(pdx.zeros([5], "int32"), 3).max()) < 3
      True
    """
    x = _like(x, "randint_like")
    if high is None:
        low, high = 0, low
    low = static_int(low, op="randint_like", name="low")
    high = static_int(high, op="randint_like", name="high")
    if low >= high:
        raise op_error("randint_like", f"`low`={low} must be < `high`={high}")
    dt = dtype_arg(dtype, op="randint_like") or x.dtype
    out = jax.random.randint(next_key(key, op="randint_like"), x.shape, low, high, dtype=jnp.int32)
    return out.astype(dt)


def standard_normal(shape, dtype=None, name=None, *, key=None):
    """Standard normal values of `shape`.

    Args:
      shape: int, list/tuple of ints or 1-D integer tensor.
      dtype: floating output dtype; default float.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A tensor of `shape`.

    Example:
      >>> import pdx
      >>> pdx.standard_normal([2, 2]).shape
      (2, 2)
    """
    dims = shape_list(shape, op="standard_normal")
    if any(d < 0 for d in dims):
        raise op_error("standard_normal", f"`shape`={list(dims)} has a negative dim")
    return jax.random.normal(next_key(key, op="standard_normal"), dims, _float_dtype(dtype, "standard_normal"))


def log_normal(mean=1.0, std=2.0, shape=None, name=None, *, key=None):
    """Log-normal values `exp(N(mean, std))` (`mean`/`std` describe the underlying normal).

    Tensor `mean`/`std` give the output their broadcast shape; with numbers, `shape` is required.

    Args:
      mean: mean of the underlying normal (number or tensor).
      std: standard deviation of the underlying normal (number or tensor).
      shape: output shape when both are numbers.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A positive floating tensor.

    Example:
      >>> import pdx
      >>> bool((pdx.log_normal(shape=[3]) > 0).all())
      True
    """
    tensors = {n: as_array(v, name=n, op="log_normal") for n, v in (("mean", mean), ("std", std))
               if isinstance(v, (jax.Array, np.ndarray))}
    if tensors:
        out_shape = broadcast_shapes("log_normal", **tensors)
        dt = jnp.result_type(*tensors.values())
        dt = dt if jnp.issubdtype(dt, jnp.floating) else default_float()
    else:
        if shape is None:
            raise op_error("log_normal", "`shape` is required when `mean` and `std` are numbers, e.g. "
                                         "pdx.log_normal(0.0, 1.0, shape=[2, 3])")
        out_shape, dt = shape_list(shape, op="log_normal"), default_float()
    z = jax.random.normal(next_key(key, op="log_normal"), out_shape, dt)
    return jnp.exp(z * std + mean).astype(dt)


def _rate_tensor(x, op, name="x"):
    x = as_array(x, name=name, op=op)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"pdx.{op}: `{name}` must be a floating tensor; got dtype {x.dtype}")
    return x


def poisson(x, name=None, *, key=None):
    """Poisson draws with rates `x` (one draw per element).

    Args:
      x: a floating tensor of non-negative rates.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A tensor like `x` holding whole numbers.

    Example:
      >>> import pdx
      >>> pdx.poisson(pdx.zeros([3])).tolist()
      [0.0, 0.0, 0.0]
    """
    x = _rate_tensor(x, "poisson")
    return jax.random.poisson(next_key(key, op="poisson"), x, x.shape).astype(x.dtype)


def standard_gamma(x, name=None, *, key=None):
    """Gamma(alpha=x, scale=1) draws, one per element.

    Args:
      x: a floating tensor of positive shape parameters.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      A positive tensor like `x`.

    Example:
      >>> import pdx
      >>> pdx.standard_gamma(pdx.ones([2])).shape
      (2,)
    """
    x = _rate_tensor(x, "standard_gamma")
    return jax.random.gamma(next_key(key, op="standard_gamma"), x, x.shape, x.dtype)


def binomial(count, prob, name=None, *, key=None):
    """Binomial draws: successes in `count` trials of probability `prob` (broadcast).

    Args:
      count: an integer (or whole-number) tensor of trial counts.
      prob: a floating tensor of success probabilities.
      name: ignored.
      key: a `jax.random` key; required under jit.

    Returns:
      An int64 (int32 without x64) tensor of the broadcast shape.

    Example:
      >>> import pdx
      >>> pdx.binomial(pdx.to_tensor([5, 5]), pdx.to_tensor([0.0, 1.0])).tolist()
      [0, 5]
    """
    c = as_array(count, name="count", op="binomial")
    p = _rate_tensor(prob, "binomial", "prob")
    shape = broadcast_shapes("binomial", count=c, prob=p)
    dt = p.dtype
    draws = jax.random.binomial(next_key(key, op="binomial"), jnp.broadcast_to(c, shape).astype(dt),
                                jnp.broadcast_to(p, shape), shape, dt)
    return jnp.round(draws).astype(default_int())

