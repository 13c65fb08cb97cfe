"""Initializer classes with Paddle's names, arguments and fan conventions."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pdx import _random
from pdx._dtype import convert_dtype


def _host_rng(key) -> np.random.Generator | None:
    """A numpy Generator seeded by a concrete key; None under a trace.

    Eagerly, sampling on the host avoids compiling a jax.random kernel for
    every parameter shape (seconds per model on a small CPU); under a trace
    (sharded or abstract initialization) jax.random is used instead.
    Both are deterministic functions of the key; their streams differ.
    """
    if isinstance(key, jax.core.Tracer):
        return None
    data = np.asarray(jax.random.key_data(key)).ravel().tolist()
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(data)))


def _finish(value, dtype) -> jax.Array:
    # Host samples are finished in numpy: eager jnp arithmetic would compile
    # a kernel per parameter shape.
    return jnp.asarray(value.astype(convert_dtype(dtype)))


def _normal(key, shape):
    host = _host_rng(key)
    if host is None:
        return jax.random.normal(key, shape, jnp.float32)
    return host.standard_normal(shape, np.float32)


def _uniform(key, shape, low, high):
    host = _host_rng(key)
    if host is None:
        return jax.random.uniform(key, shape, jnp.float32, low, high)
    return host.uniform(low, high, shape).astype(np.float32)


def _truncated_normal(key, lower, upper, shape):
    host = _host_rng(key)
    if host is None:
        return jax.random.truncated_normal(key, lower, upper, shape, jnp.float32)
    out = host.standard_normal(shape)
    bad = (out < lower) | (out > upper)
    while bad.any():  # rejection sampling; a handful of rounds for the usual [-2, 2]
        out[bad] = host.standard_normal(int(bad.sum()))
        bad = (out < lower) | (out > upper)
    return out.astype(np.float32)


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param=None) -> float:
    """Recommended gain for a nonlinearity (Paddle's `calculate_gain`)."""
    linear = {"sigmoid", "linear", "conv1d", "conv2d", "conv3d", "conv1d_transpose",
              "conv2d_transpose", "conv3d_transpose"}
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}")


def _also_in_place(call):
    """Let `call(key, shape, dtype)` also take Paddle's `init(param)` / `init(param, block)`.

    Paddle code initializes an existing parameter by calling the initializer on
    it (`nn.initializer.Constant(0.0)(layer.bias)`, typically inside
    `model.apply`); it fills the parameter in place and returns None. The key
    comes from the `pdx.seed` generator, as at parameter creation.
    """

    @functools.wraps(call)
    def wrapper(self, key, *args, **kwargs):
        if not isinstance(key, nnx.Variable):
            return call(self, key, *args, **kwargs)
        block = kwargs.pop("block", args[0] if args else None)
        if len(args) > 1 or kwargs or block is not None:
            raise TypeError(f"{type(self).__name__}(param, block=None): called on a parameter, it takes no other "
                            f"arguments (got {len(args)} positional, keywords {sorted(kwargs)}, block={block!r}); "
                            "to draw values call it as init(key, shape, dtype)")
        current = key.get_value()
        value = call(self, _random.next_key(None, op="parameter initialization"), tuple(current.shape), current.dtype)
        key.set_value(value)
        return None

    return wrapper


class Initializer:
    """Base class: subclasses implement `__call__(key, shape, dtype)`.

    Every initializer can also be called on an existing parameter, as in
    Paddle: `init(param)` fills it in place (see `_also_in_place`).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__call__" in cls.__dict__:
            cls.__call__ = _also_in_place(cls.__dict__["__call__"])

    def __call__(self, key: jax.Array, shape, dtype="float32") -> jax.Array:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Constant(Initializer):
    """Fill with `value`."""

    def __init__(self, value: float = 0.0):
        self.value = value

    def __call__(self, key, shape, dtype="float32"):
        return jnp.asarray(np.full(shape, self.value, convert_dtype(dtype)))


class Normal(Initializer):
    """N(mean, std²)."""

    def __init__(self, mean: float = 0.0, std: float = 1.0, name=None):
        self.mean, self.std = mean, std

    def __call__(self, key, shape, dtype="float32"):
        dt = convert_dtype(dtype)
        return _finish(self.mean + self.std * _normal(key, shape), dt)


class TruncatedNormal(Initializer):
    """N(mean, std²) truncated to [mean + a·std, mean + b·std]."""

    def __init__(self, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, name=None):
        self.mean, self.std, self.a, self.b = mean, std, a, b

    def __call__(self, key, shape, dtype="float32"):
        z = _truncated_normal(key, self.a, self.b, shape)
        return _finish(self.mean + self.std * z, dtype)


class Uniform(Initializer):
    """U[low, high)."""

    def __init__(self, low: float = -1.0, high: float = 1.0, name=None):
        self.low, self.high = low, high

    def __call__(self, key, shape, dtype="float32"):
        u = _uniform(key, shape, self.low, self.high)
        return _finish(u, dtype)


class XavierUniform(Initializer):
    """U[-l, l], l = gain·sqrt(6 / (fan_in + fan_out)) (Paddle's default weight init)."""

    def __init__(self, fan_in=None, fan_out=None, gain: float = 1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def __call__(self, key, shape, dtype="float32"):
        fi, fo = _fans(tuple(shape))
        fi = self.fan_in if self.fan_in is not None else fi
        fo = self.fan_out if self.fan_out is not None else fo
        limit = self.gain * math.sqrt(6.0 / (fi + fo))
        return Uniform(-limit, limit)(key, shape, dtype)


class XavierNormal(Initializer):
    """N(0, σ²), σ = gain·sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, fan_in=None, fan_out=None, gain: float = 1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def __call__(self, key, shape, dtype="float32"):
        fi, fo = _fans(tuple(shape))
        fi = self.fan_in if self.fan_in is not None else fi
        fo = self.fan_out if self.fan_out is not None else fo
        return Normal(0.0, self.gain * math.sqrt(2.0 / (fi + fo)))(key, shape, dtype)


class KaimingUniform(Initializer):
    """U[-l, l], l = gain·sqrt(3 / fan_in), gain from `nonlinearity`."""

    def __init__(self, fan_in=None, negative_slope: float = 0.0, nonlinearity: str = "relu", name=None):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity

    def __call__(self, key, shape, dtype="float32"):
        fi = self.fan_in if self.fan_in is not None else _fans(tuple(shape))[0]
        gain = calculate_gain(self.nonlinearity, self.negative_slope)
        limit = gain * math.sqrt(3.0 / fi)
        return Uniform(-limit, limit)(key, shape, dtype)


class KaimingNormal(Initializer):
    """N(0, σ²), σ = gain / sqrt(fan_in), gain from `nonlinearity`."""

    def __init__(self, fan_in=None, negative_slope: float = 0.0, nonlinearity: str = "relu", name=None):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity

    def __call__(self, key, shape, dtype="float32"):
        fi = self.fan_in if self.fan_in is not None else _fans(tuple(shape))[0]
        gain = calculate_gain(self.nonlinearity, self.negative_slope)
        return Normal(0.0, gain / math.sqrt(fi))(key, shape, dtype)


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix over the flattened trailing dims, times `gain`."""

    def __init__(self, gain: float = 1.0, name=None):
        self.gain = gain

    def __call__(self, key, shape, dtype="float32"):
        if len(shape) < 2:
            raise ValueError(f"Orthogonal needs a parameter of rank >= 2; got shape={tuple(shape)}")
        rows, cols = shape[0], int(np.prod(shape[1:]))
        return (self.gain * jax.nn.initializers.orthogonal()(key, (rows, cols), jnp.float32)).reshape(shape).astype(convert_dtype(dtype))


class Assign(Initializer):
    """Use the given array (numpy, list or jax.Array); its shape must match."""

    def __init__(self, value, name=None):
        self.value = np.asarray(value)

    def __call__(self, key, shape, dtype="float32"):
        if tuple(self.value.shape) != tuple(shape):
            raise ValueError(f"Assign: value has shape {self.value.shape} but the parameter needs {tuple(shape)}")
        return jnp.asarray(self.value, convert_dtype(dtype))
