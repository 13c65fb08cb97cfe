"""Argument handling shared by the functional ops: layouts, padding specs, reductions.

Every check runs in Python on static shapes and values, so it costs nothing
inside a compiled program and fails at trace time with a message that names
the op (`pdx.nn.functional.conv2d: ...`), the argument and the fix.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pdx._random import in_trace
from pdx._args import as_array, concrete_ints, is_int, ntuple, op_error  # noqa: F401 (used by the ops)

# Spatial-layout names Paddle accepts, per number of spatial dims.
CHANNEL_FIRST = {1: "NCL", 2: "NCHW", 3: "NCDHW"}
CHANNEL_LAST = {1: "NLC", 2: "NHWC", 3: "NDHWC"}


def error(op: str, message: str) -> ValueError:
    """A ValueError prefixed with `pdx.nn.functional.<op>:`."""
    return op_error(f"nn.functional.{op}", message)


def array(x, *, op: str, name: str = "x", dtype=None) -> jax.Array:
    """`as_array` with the functional op's qualified name in its errors."""
    if x is None:
        raise TypeError(f"pdx.nn.functional.{op}: argument `{name}` is required; got None")
    return as_array(x, name=name, op=f"nn.functional.{op}", dtype=dtype)


def float_array(x, *, op: str, name: str = "x") -> jax.Array:
    """An array with a floating dtype; integer/bool inputs get the default float."""
    x = array(x, op=op, name=name)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        from pdx._dtype import default_float

        x = x.astype(default_float())
    return x


def channel_last(data_format, allowed: Sequence[str], *, op: str) -> bool:
    """Validate `data_format` against `allowed`; True when channels are last."""
    if not isinstance(data_format, str) or data_format not in allowed:
        raise error(op, f"data_format={data_format!r} is not supported; use one of {list(allowed)}")
    return len(data_format) > 2 and data_format[-1] == "C"


def spatial_format(data_format, n: int, *, op: str) -> bool:
    """Validate a layout with `n` spatial dims (NCHW/NHWC for n=2); True if channel-last."""
    return channel_last(data_format, (CHANNEL_FIRST[n], CHANNEL_LAST[n]), op=op)


def check_rank(x: jax.Array, rank: int, data_format: str, *, op: str, name: str = "x") -> None:
    if x.ndim != rank:
        raise error(op, f"expects a {rank}-D `{name}` in {data_format} layout; got {name}.shape={tuple(x.shape)}")


def padding_spec(padding, n: int, is_channel_last: bool, *, op: str):
    """Paddle's conv/pool `padding` -> 'SAME', or a list of `n` (before, after) pairs.

    Accepted like Paddle: 'SAME' / 'VALID' (any case); an int; `n` ints (symmetric
    per spatial dim); `2n` ints (before/after per dim); `n + 2` pairs that include
    zero pairs for the batch and channel dims, in the order of `data_format`.
    """
    if isinstance(padding, str):
        mode = padding.upper()
        if mode not in ("SAME", "VALID"):
            raise error(op, f"padding={padding!r} is not a padding mode; use 'SAME', 'VALID' or ints")
        return "SAME" if mode == "SAME" else [(0, 0)] * n
    if is_int(padding):
        pairs = [(int(padding), int(padding))] * n
    elif isinstance(padding, (Sequence, np.ndarray)):
        padding = list(padding)
        if len(padding) == n + 2 and all(isinstance(p, (Sequence, np.ndarray)) for p in padding):
            if not all(len(p) == 2 and all(is_int(v) for v in p) for p in padding):
                raise error(op, f"each entry of a pair-style padding must be (before, after); got padding={padding!r}")
            non_spatial = (0, n + 1) if is_channel_last else (0, 1)
            if any(tuple(padding[i]) != (0, 0) for i in non_spatial):
                raise error(op, f"padding={padding!r} pads the batch or channel dim; only spatial dims can be padded")
            spatial = padding[1:-1] if is_channel_last else padding[2:]
            pairs = [(int(a), int(b)) for a, b in spatial]
        elif len(padding) == 2 * n and all(is_int(v) for v in padding):
            pairs = [(int(padding[2 * i]), int(padding[2 * i + 1])) for i in range(n)]
        elif len(padding) == n and all(is_int(v) for v in padding):
            pairs = [(int(v), int(v)) for v in padding]
        else:
            raise error(op, f"padding={padding!r} is not valid: use an int, {n} ints, {2 * n} ints "
                            f"(before/after per spatial dim), {n + 2} (before, after) pairs, 'SAME' or 'VALID'")
    else:
        raise error(op, f"padding={padding!r} is not valid; use an int, a list of ints/pairs, 'SAME' or 'VALID'")
    if any(v < 0 for pair in pairs for v in pair):
        raise error(op, f"padding values must be >= 0; got padding={padding!r}")
    return pairs


def same_pads(sizes: Sequence[int], kernel: Sequence[int], stride: Sequence[int]) -> list[tuple[int, int]]:
    """Paddle's 'SAME': output ceil(in / stride), extra padding on the trailing side."""
    pairs = []
    for size, k, s in zip(sizes, kernel, stride):
        out = -(-size // s)
        total = max((out - 1) * s + k - size, 0)
        pairs.append((total // 2, total - total // 2))
    return pairs


_REDUCTIONS = ("mean", "sum", "none")


def check_reduction(reduction, *, op: str) -> None:
    if reduction not in _REDUCTIONS:
        raise error(op, f"reduction={reduction!r} is not supported; use 'mean', 'sum' or 'none'")


def reduce(loss: jax.Array, reduction: str) -> jax.Array:
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


def channel_axis(ndim: int, is_channel_last: bool) -> int:
    return ndim - 1 if is_channel_last else 1


def bcast_channel(v: jax.Array, ndim: int, axis: int) -> jax.Array:
    """Reshape a per-channel vector so it broadcasts along `axis` of a rank-`ndim` tensor."""
    shape = [1] * ndim
    shape[axis] = -1
    return jnp.reshape(v, shape)


def prod(values) -> int:
    return int(math.prod(values))


# ----------------------------------------------------------------------------- eager compilation

_FALLBACK = object()


def _static_value(v):
    """A hashable stand-in for a configuration argument (lists -> tuples), or _FALLBACK."""
    if isinstance(v, (list, tuple)):
        items = tuple(_static_value(i) for i in v)
        return _FALLBACK if any(i is _FALLBACK for i in items) else items
    try:
        hash(v)
    except TypeError:
        return _FALLBACK
    return v


def _dynamic_ok(v) -> bool:
    return v is None or isinstance(v, (jax.Array, np.ndarray, np.generic, int, float, complex)) \
        and not isinstance(v, bool)


def compiled(*array_params: str):
    """Run an eager call of the op as one XLA program per configuration.

    Called eagerly, an op built from many jax.numpy calls compiles each primitive
    separately on first use (slow on CPU); jitting the whole op compiles once per
    shape/dtype and configuration. `array_params` name the tensor arguments;
    every other argument is treated as static configuration (lists become
    tuples). Under an enclosing trace, or when an argument cannot serve as static
    configuration (e.g. a tensor-valued `pad`), the op runs as plain Python so
    behaviour and error messages are identical either way.
    """
    def decorate(fn):
        sig = inspect.signature(fn)
        static = tuple(n for n in sig.parameters if n not in array_params)
        jitted = jax.jit(fn, static_argnames=static)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if in_trace():
                return fn(*args, **kwargs)
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                return fn(*args, **kwargs)
            call = {}
            for name, value in bound.arguments.items():
                if name in array_params:
                    if not _dynamic_ok(value):
                        return fn(*args, **kwargs)
                    call[name] = value
                else:
                    value = _static_value(value)
                    if value is _FALLBACK:
                        return fn(*args, **kwargs)
                    call[name] = value
            return jitted(**call)

        return wrapper

    return decorate
