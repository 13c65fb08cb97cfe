"""Activation functions with Paddle 3.x names, arguments and defaults.

All are elementwise (or per-axis, like softmax) pure functions. The `inplace`
flags Paddle has on a few of them are accepted and ignored: JAX arrays are
immutable, so every op returns a new array.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx._dtype import convert_dtype
from pdx._random import next_key
from pdx._args import normalize_axis, number
from pdx.nn.functional._args import array, bcast_channel, compiled, error, float_array

__all__ = [
    "celu", "elu", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "leaky_relu", "log_sigmoid", "log_softmax", "maxout", "mish", "prelu", "relu", "relu6",
    "rrelu", "selu", "sigmoid", "silu", "softmax", "softplus", "softshrink", "softsign",
    "swish", "tanh", "tanhshrink", "thresholded_relu",
]


def _no_out(out, op):
    if out is not None:
        raise error(op, "out= is not supported: JAX arrays are immutable; use the returned array")


@compiled("x")
def relu(x, name=None):
    """max(x, 0).

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> import pdx.nn.functional as F
      >>> F.relu(jnp.array([-1.0, 2.0])).tolist()
      [0.0, 2.0]
    """
    return jax.nn.relu(array(x, op="relu"))


@compiled("x")
def relu6(x, name=None):
    """min(max(x, 0), 6).

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.relu6(jnp.array([-1.0, 7.0])).tolist()
      [0.0, 6.0]
    """
    return jnp.clip(array(x, op="relu6"), 0, 6)


@compiled("x")
def leaky_relu(x, negative_slope=0.01, name=None):
    """x if x >= 0 else negative_slope * x.

    Args:
      x: input tensor.
      negative_slope: slope for x < 0.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.leaky_relu(jnp.array([-1.0, 2.0]), 0.5).tolist()
      [-0.5, 2.0]
    """
    negative_slope = number(negative_slope, op="nn.functional.leaky_relu", name="negative_slope")
    x = array(x, op="leaky_relu")
    return jnp.where(x >= 0, x, x * negative_slope)


@compiled("x")
def elu(x, alpha=1.0, name=None):
    """x if x > 0 else alpha * (exp(x) - 1).

    Args:
      x: input tensor.
      alpha: the negative-branch scale.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.elu(jnp.array([0.0, 1.0])).tolist()
      [0.0, 1.0]
    """
    alpha = number(alpha, op="nn.functional.elu", name="alpha")
    x = float_array(x, op="elu")
    # expm1 of the clamped value keeps the unselected branch finite (and its grad non-NaN).
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.minimum(x, 0)))


@compiled("x")
def celu(x, alpha=1.0, name=None):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    Args:
      x: input tensor.
      alpha: the negative-branch scale (not 0).
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.celu(jnp.array([1.0])).tolist()
      [1.0]
    """
    alpha = number(alpha, op="nn.functional.celu", name="alpha")
    if alpha == 0:
        raise error("celu", "alpha must not be 0 (it divides x)")
    x = float_array(x, op="celu")
    return jnp.maximum(x, 0) + jnp.minimum(alpha * jnp.expm1(jnp.minimum(x, 0) / alpha), 0)


@compiled("x")
def selu(x, scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717, name=None):
    """scale * (x if x > 0 else alpha * (exp(x) - 1)).

    Args:
      x: input tensor.
      scale: output scale (> 1).
      alpha: negative-branch scale (>= 0).
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.selu(jnp.array([0.0])).tolist()
      [0.0]
    """
    scale = number(scale, op="nn.functional.selu", name="scale")
    alpha = number(alpha, op="nn.functional.selu", name="alpha")
    if scale <= 1.0:
        raise error("selu", f"scale must be > 1.0; got scale={scale}")
    if alpha < 0:
        raise error("selu", f"alpha must be >= 0; got alpha={alpha}")
    x = float_array(x, op="selu")
    return scale * jnp.where(x > 0, x, alpha * jnp.expm1(jnp.minimum(x, 0)))


@compiled("x")
def gelu(x, approximate=False, name=None):
    """Gaussian error linear unit: exact (erf) or the tanh approximation.

    Args:
      x: input tensor.
      approximate: False/'none' for the erf form, True/'tanh' for the tanh form.
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> F.gelu(jnp.array([0.0])).tolist()
      [0.0]
    """
    if isinstance(approximate, str):
        if approximate not in ("tanh", "none"):
            raise error("gelu", f"approximate={approximate!r} is not supported; use True/False, 'tanh' or 'none'")
        approximate = approximate == "tanh"
    x = float_array(x, op="gelu")
    if approximate:
        return jax.nn.gelu(x, approximate=True)
    # Paddle's (and PyTorch's) formula, 0.5 x (1 + erf(x / sqrt 2)): XLA's erf is one rational
    # polynomial, its erfc (jax.nn.gelu's form) costs exponentials forward and backward
    return 0.5 * x * (1 + jax.lax.erf(x * 0.7071067811865476))


@compiled("x")
def sigmoid(x, name=None, *, out=None):
    """1 / (1 + exp(-x)). Paddle's `out=` is not supported (JAX arrays are immutable).

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).
      out: unsupported; must be None.

    Returns:
      A tensor like `x`.

    Example:
      >>> F.sigmoid(jnp.array([0.0])).tolist()
      [0.5]
    """
    _no_out(out, "sigmoid")
    return jax.nn.sigmoid(float_array(x, op="sigmoid"))


@compiled("x")
def silu(x, inplace=False, name=None):
    """x * sigmoid(x). `inplace` is ignored (JAX arrays are immutable).

    Args:
      x: input tensor.
      inplace: ignored (JAX arrays are immutable).
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.silu(jnp.array([0.0])).tolist()
      [0.0]
    """
    return jax.nn.silu(float_array(x, op="silu"))


@compiled("x")
def swish(x, name=None):
    """x * sigmoid(x) (Paddle's swish has beta fixed at 1).

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.swish(jnp.array([0.0])).tolist()
      [0.0]
    """
    return jax.nn.silu(float_array(x, op="swish"))


@compiled("x")
def tanh(x, name=None, *, out=None):
    """Hyperbolic tangent. Paddle's `out=` is not supported (JAX arrays are immutable).

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).
      out: unsupported; must be None.

    Returns:
      A tensor like `x`.

    Example:
      >>> F.tanh(jnp.array([0.0])).tolist()
      [0.0]
    """
    _no_out(out, "tanh")
    return jnp.tanh(float_array(x, op="tanh"))


@compiled("x")
def hardtanh(x, min=-1.0, max=1.0, name=None):  # noqa: A002  (Paddle's argument names)
    """clip(x, min, max).

    Args:
      x: input tensor.
      min: lower clip value.
      max: upper clip value.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.hardtanh(jnp.array([-2.0, 0.5])).tolist()
      [-1.0, 0.5]
    """
    min = number(min, op="nn.functional.hardtanh", name="min")
    max = number(max, op="nn.functional.hardtanh", name="max")
    return jnp.clip(array(x, op="hardtanh"), min, max)


@compiled("x")
def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    """clip(slope * x + offset, 0, 1).

    Args:
      x: input tensor.
      slope: slope of the linear part.
      offset: offset of the linear part.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.hardsigmoid(jnp.array([0.0])).tolist()
      [0.5]
    """
    slope = number(slope, op="nn.functional.hardsigmoid", name="slope")
    offset = number(offset, op="nn.functional.hardsigmoid", name="offset")
    x = float_array(x, op="hardsigmoid")
    return jnp.clip(x * slope + offset, 0, 1)


@compiled("x")
def hardswish(x, name=None):
    """x * clip(x + 3, 0, 6) / 6.

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.hardswish(jnp.array([3.0])).tolist()
      [3.0]
    """
    x = float_array(x, op="hardswish")
    return x * jnp.clip(x + 3, 0, 6) / 6


@compiled("x")
def hardshrink(x, threshold=0.5, name=None):
    """x where |x| > threshold, else 0.

    Args:
      x: input tensor.
      threshold: values with |x| <= threshold become 0.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.hardshrink(jnp.array([0.2, 1.0])).tolist()
      [0.0, 1.0]
    """
    threshold = number(threshold, op="nn.functional.hardshrink", name="threshold")
    x = array(x, op="hardshrink")
    return jnp.where(jnp.abs(x) > threshold, x, jnp.zeros_like(x))


@compiled("x")
def softshrink(x, threshold=0.5, name=None):
    """x - threshold above threshold, x + threshold below -threshold, else 0.

    Args:
      x: input tensor.
      threshold: shrink amount (>= 0).
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.softshrink(jnp.array([1.0])).tolist()
      [0.5]
    """
    threshold = number(threshold, op="nn.functional.softshrink", name="threshold")
    if threshold < 0:
        raise error("softshrink", f"threshold must be >= 0; got threshold={threshold}")
    x = float_array(x, op="softshrink")
    return jnp.where(x > threshold, x - threshold, jnp.where(x < -threshold, x + threshold, 0.0)).astype(x.dtype)


@compiled("x")
def thresholded_relu(x, threshold=1.0, value=0.0, name=None):
    """x where x > threshold, else `value`.

    Args:
      x: input tensor.
      threshold: values <= threshold are replaced.
      value: the replacement.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.thresholded_relu(jnp.array([0.5, 2.0])).tolist()
      [0.0, 2.0]
    """
    threshold = number(threshold, op="nn.functional.thresholded_relu", name="threshold")
    value = number(value, op="nn.functional.thresholded_relu", name="value")
    x = array(x, op="thresholded_relu")
    return jnp.where(x > threshold, x, jnp.full_like(x, value))


@compiled("x")
def tanhshrink(x, name=None):
    """x - tanh(x).

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.tanhshrink(jnp.array([0.0])).tolist()
      [0.0]
    """
    x = float_array(x, op="tanhshrink")
    return x - jnp.tanh(x)


@compiled("x")
def softsign(x, name=None):
    """x / (1 + |x|).

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.softsign(jnp.array([1.0])).tolist()
      [0.5]
    """
    x = float_array(x, op="softsign")
    return x / (1 + jnp.abs(x))


@compiled("x")
def softplus(x, beta=1, threshold=20, name=None):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold.

    Args:
      x: input tensor.
      beta: input scale.
      threshold: where beta * x > threshold the output is x itself.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> round(float(F.softplus(jnp.array(0.0))), 4)
      0.6931
    """
    beta = number(beta, op="nn.functional.softplus", name="beta")
    threshold = number(threshold, op="nn.functional.softplus", name="threshold")
    x = float_array(x, op="softplus")
    bx = x * beta
    # logaddexp is the overflow-free log(1 + exp(.)); the where() keeps Paddle's linear tail.
    return jnp.where(bx > threshold, x, jnp.logaddexp(bx, 0.0) / beta)


@compiled("x")
def log_sigmoid(x, name=None):
    """log(sigmoid(x)), computed stably.

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> round(float(F.log_sigmoid(jnp.array(0.0))), 4)
      -0.6931
    """
    return jax.nn.log_sigmoid(float_array(x, op="log_sigmoid"))


@compiled("x")
def mish(x, name=None):
    """x * tanh(softplus(x)) (softplus with Paddle's threshold of 20).

    Args:
      x: input tensor.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor like `x`.

    Example:
      >>> F.mish(jnp.array([0.0])).tolist()
      [0.0]
    """
    x = float_array(x, op="mish")
    return x * jnp.tanh(jnp.where(x > 20, x, jnp.logaddexp(x, 0.0)))


def _softmax_input(x, dtype, op):
    x = array(x, op=op)
    if dtype is not None:
        x = x.astype(convert_dtype(dtype))
    elif not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    return x


@compiled("x")
def softmax(x, axis=-1, dtype=None, name=None, *, out=None):
    """exp(x) / sum(exp(x)) along `axis`; `dtype` casts x first (e.g. for fp16 inputs).

    Args:
      x: input tensor.
      axis: the axis to normalize over.
      dtype: optional dtype to compute and return in.
      name: ignored.
      out: unsupported (JAX arrays are immutable); must be None.

    Returns:
      A tensor of x's shape.

    Example:
      >>> F.softmax(jnp.array([0.0, 0.0])).tolist()
      [0.5, 0.5]
    """
    _no_out(out, "softmax")
    x = _softmax_input(x, dtype, "softmax")
    return jax.nn.softmax(x, axis=normalize_axis(axis, x.ndim, op="nn.functional.softmax"))


@compiled("x")
def log_softmax(x, axis=-1, dtype=None, name=None):
    """log(softmax(x)) along `axis`, computed stably.

    Args:
      x: input tensor.
      axis: the axis to normalize over.
      dtype: optional dtype to compute and return in.
      name: ignored (Paddle compatibility).

    Returns:
      A tensor of x's shape.

    Example:
      >>> round(F.log_softmax(jnp.array([0.0, 0.0])).tolist()[0], 4)
      -0.6931
    """
    x = _softmax_input(x, dtype, "log_softmax")
    return jax.nn.log_softmax(x, axis=normalize_axis(axis, x.ndim, op="nn.functional.log_softmax"))


@compiled("x")
def glu(x, axis=-1, name=None):
    """Gated linear unit: split x in halves a, b along `axis`, return a * sigmoid(b).

    Args:
      x: input tensor.
      axis: the axis split into value and gate halves (even size).
      name: ignored (Paddle compatibility).

    Returns:
      A tensor with x.shape[axis] halved.

    Example:
      >>> F.glu(jnp.zeros((2, 4))).shape
      (2, 2)
    """
    x = float_array(x, op="glu")
    ax = normalize_axis(axis, x.ndim, op="nn.functional.glu")
    if x.shape[ax] % 2:
        raise error("glu", f"x.shape[{axis}]={x.shape[ax]} must be even to split into value and gate halves")
    a, b = jnp.split(x, 2, axis=ax)
    return a * jax.nn.sigmoid(b)


_PRELU_FORMATS = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")


@compiled("x", "weight")
def prelu(x, weight, data_format="NCHW", name=None):
    """max(0, x) + weight * min(0, x), with one weight or one per channel.

    Args:
      x: input tensor.
      weight: shape [] or [1] (shared) or [C] (per channel).
      data_format: where the channel dim is ('NCHW'-style: dim 1; 'NHWC'-style: last).
      name: ignored.

    Returns:
      A tensor like `x`.

    Example:
      >>> F.prelu(jnp.array([[-2.0, 1.0]]), jnp.array([0.25])).tolist()
      [[-0.5, 1.0]]
    """
    x = float_array(x, op="prelu")
    weight = array(weight, op="prelu", name="weight")
    if weight.ndim > 1:
        raise error("prelu", f"weight must have shape [], [1] or [C]; got weight.shape={tuple(weight.shape)}")
    if weight.size > 1:
        if data_format not in _PRELU_FORMATS:
            raise error("prelu", f"data_format={data_format!r} is not supported; use one of {list(_PRELU_FORMATS)}")
        if x.ndim < 2:
            raise error("prelu", f"a per-channel weight needs x with rank >= 2; got x.shape={tuple(x.shape)}")
        axis = 1 if data_format[1] == "C" else x.ndim - 1
        if x.shape[axis] != weight.size:
            raise error("prelu", f"weight.shape={tuple(weight.shape)} must match the {x.shape[axis]} channels "
                                 f"of x.shape={tuple(x.shape)} (data_format={data_format!r})")
        weight = bcast_channel(weight, x.ndim, axis)
    else:
        weight = jnp.reshape(weight, ())
    return jnp.where(x > 0, x, weight.astype(x.dtype) * x)


def rrelu(x, lower=1.0 / 8.0, upper=1.0 / 3.0, training=True, name=None, *, key=None):
    """Randomized leaky ReLU: negative slope ~ U(lower, upper) per element when training.

    In eval mode the slope is (lower + upper) / 2. Training draws from
    `pdx._random.next_key(key)`; under jit pass `key=` explicitly.

    Args:
      x: input tensor.
      lower, upper: slope range, 0 <= lower <= upper <= 1.
      training: random slopes if True, the mean slope otherwise.
      name: ignored.
      key: optional jax PRNG key for the random slopes.

    Returns:
      A tensor like `x`.

    Example:
      >>> F.rrelu(jnp.array([-1.0, 1.0]), training=False).tolist()[1]
      1.0
    """
    lower = number(lower, op="nn.functional.rrelu", name="lower")
    upper = number(upper, op="nn.functional.rrelu", name="upper")
    if not 0 <= lower <= 1 or not lower <= upper <= 1:
        raise error("rrelu", f"need 0 <= lower <= upper <= 1; got lower={lower}, upper={upper}")
    if training:
        key = next_key(key, op="rrelu")
    return _rrelu(x, key, lower, upper, training)


@compiled("x", "key")
def _rrelu(x, key, lower, upper, training):
    x = float_array(x, op="rrelu")
    if training:
        slope = jax.random.uniform(key, x.shape, x.dtype, lower, upper)
    else:
        slope = (lower + upper) / 2
    return jnp.where(x >= 0, x, x * slope)


def maxout(x, groups, axis=1, name=None):
    """Max over consecutive groups of `groups` channels: C channels -> C / groups.

    Args:
      x: 4-D input tensor.
      groups: channels per group.
      axis: the channel axis (1 for NCHW, -1 or 3 for NHWC).
      name: ignored.

    Returns:
      A tensor with x.shape[axis] // groups channels.

    Example:
      >>> F.maxout(jnp.zeros((1, 4, 2, 2)), groups=2).shape
      (1, 2, 2, 2)
    """
    x = array(x, op="maxout")
    if x.ndim != 4:
        raise error("maxout", f"expects a 4-D x; got x.shape={tuple(x.shape)}")
    if axis not in (1, -1, 3):
        raise error("maxout", f"axis={axis} must be 1 (NCHW) or -1/3 (NHWC)")
    ax = axis % 4
    channels = x.shape[ax]
    if groups <= 0 or channels % groups:
        raise error("maxout", f"x.shape[{axis}]={channels} channels must be divisible by groups={groups}")
    shape = x.shape[:ax] + (channels // groups, groups) + x.shape[ax + 1:]
    return jnp.max(x.reshape(shape), axis=ax + 1)
