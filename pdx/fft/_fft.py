"""Discrete Fourier transforms with Paddle's `paddle.fft` arguments over `jax.numpy.fft`.

Every transform takes `norm` in 'backward' (scale the inverse by 1/n, the default),
'ortho' (1/sqrt(n) both ways) or 'forward' (scale the forward by 1/n). Real inputs to
complex transforms are promoted; integer inputs become the default float first.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from pdx._dtype import convert_dtype, default_float
from pdx._args import as_array, int_list, normalize_axis, op_error, static_int

_NORMS = ("backward", "ortho", "forward")
_SWAPPED = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _no_out(out, op):
    if out is not None:
        raise TypeError(f"pdx.{op}: `out=` is not supported (arrays are immutable); use the return value")


def _norm(norm, op):
    if norm not in _NORMS:
        raise op_error(op, f"`norm`={norm!r} is not supported; use 'backward', 'ortho' or 'forward'")
    return norm


def _input(x, op, *, real=False):
    x = as_array(x, op=op)
    if jnp.issubdtype(x.dtype, jnp.bool_) or jnp.issubdtype(x.dtype, jnp.integer):
        x = x.astype(default_float())
    if real and jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(f"pdx.{op}: `x` must be real; got dtype {x.dtype} (use the complex transform, e.g. "
                        f"fft instead of rfft)")
    return x


def _length(n, op, name="n"):
    if n is None:
        return None
    n = static_int(n, op=op, name=name)
    if n < 1:
        raise op_error(op, f"`{name}`={n} must be a positive length")
    return n


def _axes_and_sizes(x, s, axes, op, default_axes=None, axis_name="axes"):
    """Normalized axes and sizes for an n-D transform (numpy's rules: s alone picks the last len(s) axes)."""
    sizes = None if s is None else [_length(v, op, "s") for v in int_list(s, op=op, name="s")]
    if axes is None:
        if default_axes is not None:
            axes = list(default_axes)
        elif sizes is not None:
            axes = list(range(-len(sizes), 0))
        else:
            axes = list(range(x.ndim))
    else:
        axes = int_list(axes, op=op, name="axes")
    axes = [normalize_axis(a, x.ndim, op=op, name=axis_name) for a in axes]
    if len(set(axes)) != len(axes):
        raise op_error(op, f"`axes`={axes} repeats an axis")
    if sizes is not None and len(sizes) != len(axes):
        raise op_error(op, f"`s`={list(s)} and `axes`={axes} must have the same length")
    if not axes:
        raise op_error(op, f"no axes to transform for x.shape={tuple(x.shape)}")
    return tuple(axes), None if sizes is None else tuple(sizes)


# One jitted kernel per transform family: an eager call compiles one program.
@functools.partial(jax.jit, static_argnames=("kind", "s", "axes", "norm"))
def _kernel(x, kind, s, axes, norm):
    if kind == "fftn":
        return jnp.fft.fftn(x, s=s, axes=axes, norm=norm)
    if kind == "ifftn":
        return jnp.fft.ifftn(x, s=s, axes=axes, norm=norm)
    if kind == "rfftn":
        return jnp.fft.rfftn(x, s=s, axes=axes, norm=norm)
    if kind == "irfftn":
        return jnp.fft.irfftn(x, s=s, axes=axes, norm=norm)
    if kind == "hfftn":  # the inverse real transform of the conjugate, with the scale swapped
        return jnp.fft.irfftn(jnp.conj(x), s=s, axes=axes, norm=_SWAPPED[norm])
    if kind == "ihfftn":
        return jnp.conj(jnp.fft.rfftn(x, s=s, axes=axes, norm=_SWAPPED[norm]))
    raise ValueError(kind)


def _transform(kind, x, s, axes, norm, op, *, default_axes=None, axis_name="axes"):
    real_in = kind in ("rfftn", "ihfftn")
    x = _input(x, op, real=real_in)
    norm = _norm(norm, op)
    axes, sizes = _axes_and_sizes(x, s, axes, op, default_axes, axis_name)
    if kind in ("fftn", "ifftn", "irfftn", "hfftn") and not jnp.issubdtype(x.dtype, jnp.complexfloating):
        x = x.astype(jnp.result_type(x.dtype, jnp.complex64))
    if kind in ("irfftn", "hfftn") and sizes is None and x.shape[axes[-1]] < 2:
        raise op_error(op, f"the last transformed axis has size {x.shape[axes[-1]]}; pass the output size "
                           "(n or s) when it is 1")
    return _kernel(x, kind, sizes, axes, norm)


def _one_axis(kind, x, n, axis, norm, op):
    n = _length(n, op)
    return _transform(kind, x, None if n is None else [n], [static_int(axis, op=op, name="axis")], norm, op,
                      axis_name="axis")


def _two_axes(kind, x, s, axes, norm, op):
    if axes is None:  # as Paddle: the n-D transform (the last len(s) axes, or every axis)
        return _transform(kind, x, s, None, norm, op)
    axes = int_list(axes, op=op, name="axes")
    if len(axes) != 2:
        raise op_error(op, f"`axes`={axes} must name exactly two axes")
    if s is not None and len(int_list(s, op=op, name="s")) != 2:
        raise op_error(op, f"`s`={s} must have two sizes")
    return _transform(kind, x, s, axes, norm, op)


# ------------------------------------------------------------------------------------------------ 1-D


def fft(x, n=None, axis=-1, norm="backward", name=None, *, out=None):
    """1-D discrete Fourier transform along `axis`.

    Args:
      x: a real or complex tensor.
      n: the transform length; `x` is zero-padded or cropped to it (default: its size).
      axis: the axis to transform.
      norm: 'backward' (no scale), 'ortho' (1/sqrt(n)) or 'forward' (1/n).
      name: ignored.

    Returns:
      A complex tensor.

    Example:
      >>> import pdx
      >>> pdx.fft.fft(pdx.to_tensor([1.0, 1.0, 1.0, 1.0])).real.tolist()
      [4.0, 0.0, 0.0, 0.0]
    """
    _no_out(out, "fft.fft")
    return _one_axis("fftn", x, n, axis, norm, "fft.fft")


def ifft(x, n=None, axis=-1, norm="backward", name=None, *, out=None):
    """1-D inverse discrete Fourier transform along `axis` (scaled by 1/n with 'backward').

    Example:
      >>> import pdx
      >>> pdx.fft.ifft(pdx.to_tensor([4.0, 0.0, 0.0, 0.0])).real.tolist()
      [1.0, 1.0, 1.0, 1.0]
    """
    _no_out(out, "fft.ifft")
    return _one_axis("ifftn", x, n, axis, norm, "fft.ifft")


def rfft(x, n=None, axis=-1, norm="backward", name=None, *, out=None):
    """1-D transform of a real signal: the `n // 2 + 1` non-negative frequencies.

    Example:
      >>> import pdx
      >>> pdx.fft.rfft(pdx.to_tensor([1.0, 1.0, 1.0, 1.0])).real.tolist()
      [4.0, 0.0, 0.0]
    """
    _no_out(out, "fft.rfft")
    return _one_axis("rfftn", x, n, axis, norm, "fft.rfft")


def irfft(x, n=None, axis=-1, norm="backward", name=None, *, out=None):
    """Inverse of `rfft`: a real signal of length `n` (default `2 * (m - 1)`).

    Example:
      >>> import pdx
      >>> pdx.fft.irfft(pdx.to_tensor([4.0, 0.0, 0.0])).tolist()
      [1.0, 1.0, 1.0, 1.0]
    """
    _no_out(out, "fft.irfft")
    return _one_axis("irfftn", x, n, axis, norm, "fft.irfft")


def hfft(x, n=None, axis=-1, norm="backward", name=None, *, out=None):
    """Transform of a Hermitian-symmetric signal given by its first half: a real spectrum of length `n`.

    Example:
      >>> import pdx
      >>> pdx.fft.hfft(pdx.to_tensor([1.0, 0.0, 0.0])).tolist()
      [1.0, 1.0, 1.0, 1.0]
    """
    _no_out(out, "fft.hfft")
    return _one_axis("hfftn", x, n, axis, norm, "fft.hfft")


def ihfft(x, n=None, axis=-1, norm="backward", name=None, *, out=None):
    """Inverse of `hfft`: the first `n // 2 + 1` terms of the inverse transform of a real signal.

    Example:
      >>> import pdx
      >>> pdx.fft.ihfft(pdx.to_tensor([1.0, 1.0, 1.0, 1.0])).real.tolist()
      [1.0, 0.0, 0.0]
    """
    _no_out(out, "fft.ihfft")
    return _one_axis("ihfftn", x, n, axis, norm, "fft.ihfft")


# ------------------------------------------------------------------------------------------------ 2-D


def fft2(x, s=None, axes=(-2, -1), norm="backward", name=None, *, out=None):
    """2-D discrete Fourier transform over `axes`.

    Args:
      x: a tensor of rank >= 2.
      s: output sizes along `axes` (pad or crop), default the input sizes.
      axes: the two axes.
      norm: 'backward', 'ortho' or 'forward'.
      name: ignored.

    Example:
      >>> import pdx
      >>> pdx.fft.fft2(pdx.ones([2, 2])).real.tolist()
      [[4.0, 0.0], [0.0, 0.0]]
    """
    _no_out(out, "fft.fft2")
    return _two_axes("fftn", x, s, axes, norm, "fft.fft2")


def ifft2(x, s=None, axes=(-2, -1), norm="backward", name=None, *, out=None):
    """2-D inverse discrete Fourier transform over `axes`.

    Example:
      >>> import pdx
      >>> pdx.fft.ifft2(pdx.to_tensor([[4.0, 0.0], [0.0, 0.0]])).real.tolist()
      [[1.0, 1.0], [1.0, 1.0]]
    """
    _no_out(out, "fft.ifft2")
    return _two_axes("ifftn", x, s, axes, norm, "fft.ifft2")


def rfft2(x, s=None, axes=(-2, -1), norm="backward", name=None, *, out=None):
    """2-D transform of a real tensor; the last axis keeps `n // 2 + 1` frequencies.

    Example:
      >>> import pdx
      >>> pdx.fft.rfft2(pdx.ones([2, 2])).shape
      (2, 2)
    """
    _no_out(out, "fft.rfft2")
    return _two_axes("rfftn", x, s, axes, norm, "fft.rfft2")


def irfft2(x, s=None, axes=(-2, -1), norm="backward", name=None, *, out=None):
    """Inverse of `rfft2`: a real tensor (last axis `2 * (m - 1)` unless `s` says otherwise).

    Example:
      >>> import pdx
      >>> pdx.fft.irfft2(pdx.to_tensor([[4.0, 0.0], [0.0, 0.0]])).tolist()
      [[1.0, 1.0], [1.0, 1.0]]
    """
    _no_out(out, "fft.irfft2")
    return _two_axes("irfftn", x, s, axes, norm, "fft.irfft2")


def hfft2(x, s=None, axes=(-2, -1), norm="backward", name=None, *, out=None):
    """2-D transform of a Hermitian-symmetric tensor given by its half: a real result.

    Example:
      >>> import pdx
      >>> pdx.fft.hfft2(pdx.ones([2, 2])).shape
      (2, 2)
    """
    _no_out(out, "fft.hfft2")
    return _two_axes("hfftn", x, s, axes, norm, "fft.hfft2")


def ihfft2(x, s=None, axes=(-2, -1), norm="backward", name=None, *, out=None):
    """Inverse of `hfft2` for a real tensor: the half spectrum (last axis `n // 2 + 1`).

    Example:
      >>> import pdx
      >>> pdx.fft.ihfft2(pdx.ones([2, 2])).shape
      (2, 2)
    """
    _no_out(out, "fft.ihfft2")
    return _two_axes("ihfftn", x, s, axes, norm, "fft.ihfft2")


# ------------------------------------------------------------------------------------------------ N-D


def fftn(x, s=None, axes=None, norm="backward", name=None, *, out=None):
    """N-D discrete Fourier transform over `axes` (default all, or the last `len(s)`).

    Args:
      x: a tensor.
      s: output sizes along the axes (pad or crop).
      axes: the axes to transform.
      norm: 'backward', 'ortho' or 'forward'.
      name: ignored.

    Example:
      >>> import pdx
      >>> pdx.fft.fftn(pdx.ones([2, 2, 2])).real[0, 0, 0].tolist()
      8.0
    """
    _no_out(out, "fft.fftn")
    return _transform("fftn", x, s, axes, norm, "fft.fftn")


def ifftn(x, s=None, axes=None, norm="backward", name=None, *, out=None):
    """N-D inverse discrete Fourier transform.

    Example:
      >>> import pdx
      >>> pdx.fft.ifftn(pdx.fft.fftn(pdx.ones([2, 3]))).real.round(4).tolist()
      [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    _no_out(out, "fft.ifftn")
    return _transform("ifftn", x, s, axes, norm, "fft.ifftn")


def rfftn(x, s=None, axes=None, norm="backward", name=None, *, out=None):
    """N-D transform of a real tensor; the last transformed axis keeps `n // 2 + 1` frequencies.

    Example:
      >>> import pdx
      >>> pdx.fft.rfftn(pdx.ones([2, 4])).shape
      (2, 3)
    """
    _no_out(out, "fft.rfftn")
    return _transform("rfftn", x, s, axes, norm, "fft.rfftn")


def irfftn(x, s=None, axes=None, norm="backward", name=None, *, out=None):
    """Inverse of `rfftn`: a real tensor (last axis `2 * (m - 1)` unless `s` says otherwise).

    Example:
      >>> import pdx
      >>> pdx.fft.irfftn(pdx.fft.rfftn(pdx.ones([2, 4]))).round(4).tolist()
      [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    _no_out(out, "fft.irfftn")
    return _transform("irfftn", x, s, axes, norm, "fft.irfftn")


def hfftn(x, s=None, axes=None, norm="backward", name=None, *, out=None):
    """N-D transform of a Hermitian-symmetric tensor given by its half: a real result.

    Example:
      >>> import pdx
      >>> pdx.fft.hfftn(pdx.ones([2, 3])).shape
      (2, 4)
    """
    _no_out(out, "fft.hfftn")
    return _transform("hfftn", x, s, axes, norm, "fft.hfftn")


def ihfftn(x, s=None, axes=None, norm="backward", name=None, *, out=None):
    """Inverse of `hfftn` for a real tensor: the half spectrum.

    Example:
      >>> import pdx
      >>> pdx.fft.ihfftn(pdx.ones([2, 4])).shape
      (2, 3)
    """
    _no_out(out, "fft.ihfftn")
    return _transform("ihfftn", x, s, axes, norm, "fft.ihfftn")


# -------------------------------------------------------------------------------------- frequencies


def _freq_dtype(dtype, op):
    dtype = convert_dtype(dtype) if dtype is not None else jnp.dtype(default_float())
    if not jnp.issubdtype(dtype, jnp.floating):
        raise op_error(op, f"`dtype`={dtype} must be a floating dtype")
    return dtype


def fftfreq(n, d=1.0, dtype=None, name=None, *, out=None, device=None, requires_grad=False):
    """Sample frequencies of an `n`-point transform with sample spacing `d`: `[0, 1, ..., -1] / (d * n)`.

    `device` and `requires_grad` are accepted and ignored (place arrays with `jax.device_put`).

    Example:
      >>> import pdx
      >>> pdx.fft.fftfreq(4).tolist()
      [0.0, 0.25, -0.5, -0.25]
    """
    _no_out(out, "fft.fftfreq")
    n = _length(n, "fft.fftfreq")
    return jnp.fft.fftfreq(n, d=d, dtype=_freq_dtype(dtype, "fft.fftfreq"))


def rfftfreq(n, d=1.0, dtype=None, name=None, *, out=None, device=None, requires_grad=False):
    """Non-negative sample frequencies of an `n`-point real transform: `[0, ..., n // 2] / (d * n)`.

    Example:
      >>> import pdx
      >>> pdx.fft.rfftfreq(4).tolist()
      [0.0, 0.25, 0.5]
    """
    _no_out(out, "fft.rfftfreq")
    n = _length(n, "fft.rfftfreq")
    return jnp.fft.rfftfreq(n, d=d, dtype=_freq_dtype(dtype, "fft.rfftfreq"))


def _shift_axes(x, axes, op):
    if axes is None:
        return tuple(range(x.ndim))
    return tuple(normalize_axis(a, x.ndim, op=op, name="axes") for a in int_list(axes, op=op, name="axes"))


def fftshift(x, axes=None, name=None):
    """Move the zero frequency to the center (roll by `n // 2` along `axes`, default all).

    Example:
      >>> import pdx
      >>> pdx.fft.fftshift(pdx.fft.fftfreq(4)).tolist()
      [-0.5, -0.25, 0.0, 0.25]
    """
    x = as_array(x, op="fft.fftshift")
    return jnp.fft.fftshift(x, axes=_shift_axes(x, axes, "fft.fftshift"))


def ifftshift(x, axes=None, name=None):
    """Inverse of `fftshift` (roll by `-(n // 2)`).

    Example:
      >>> import pdx
      >>> pdx.fft.ifftshift(pdx.to_tensor([-0.5, -0.25, 0.0, 0.25])).tolist()
      [0.0, 0.25, -0.5, -0.25]
    """
    x = as_array(x, op="fft.ifftshift")
    return jnp.fft.ifftshift(x, axes=_shift_axes(x, axes, "fft.ifftshift"))
