"""Short-time Fourier transforms and framing with Paddle's `paddle.signal` arguments."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from pdx._dtype import default_float
from pdx._random import in_trace
from pdx._args import as_array, op_error, static_int


def _positive(value, op, name):
    value = static_int(value, op=op, name=name)
    if value <= 0:
        raise op_error(op, f"`{name}`={value} must be a positive integer")
    return value


def _signal_axis(axis, op):
    if axis not in (0, -1):
        raise op_error(op, f"`axis`={axis!r} must be 0 (time first) or -1 (time last)")
    return axis


def _frame(x, frame_length, hop_length):
    """Frames along the last axis: (..., T) -> (..., frame_length, num_frames)."""
    num = 1 + (x.shape[-1] - frame_length) // hop_length
    index = jnp.arange(frame_length)[:, None] + hop_length * jnp.arange(num)[None, :]
    return x[..., index]


def _overlap_add(x, hop_length):
    """Inverse framing along the last two axes: (..., frame_length, num_frames) -> (..., T), summing overlaps."""
    frame_length, num = x.shape[-2:]
    length = (num - 1) * hop_length + frame_length
    index = (jnp.arange(frame_length)[:, None] + hop_length * jnp.arange(num)[None, :]).reshape(-1)
    flat = x.reshape(x.shape[:-2] + (-1,))
    return jnp.zeros(x.shape[:-2] + (length,), x.dtype).at[..., index].add(flat)


@functools.partial(jax.jit, static_argnames=("frame_length", "hop_length", "axis"))
def _frame_kernel(x, frame_length, hop_length, axis):
    if axis == -1:
        return _frame(x, frame_length, hop_length)
    return jnp.moveaxis(_frame(jnp.moveaxis(x, 0, -1), frame_length, hop_length), (-1, -2), (0, 1))


@functools.partial(jax.jit, static_argnames=("hop_length", "axis"))
def _overlap_add_kernel(x, hop_length, axis):
    if axis == -1:
        return _overlap_add(x, hop_length)
    return jnp.moveaxis(_overlap_add(jnp.moveaxis(x, (0, 1), (-1, -2)), hop_length), -1, 0)


def frame(x, frame_length, hop_length, axis=-1, name=None):
    """Slice a signal into overlapping frames of `frame_length` samples, `hop_length` apart.

    Args:
      x: a tensor with the time axis first (`axis=0`) or last (`axis=-1`).
      frame_length: samples per frame (at most the signal length).
      hop_length: samples between the starts of neighbouring frames.
      axis: 0 or -1, where time is.
      name: ignored.

    Returns:
      `[..., frame_length, num_frames]` for `axis=-1`, `[num_frames, frame_length, ...]` for
      `axis=0`, with `num_frames = 1 + (T - frame_length) // hop_length`.

    Example:
      >>> import pdx
      >>> pdx.signal.frame(pdx.arange(5), 3, 2).tolist()
      [[0, 2], [1, 3], [2, 4]]
    """
    x = as_array(x, op="signal.frame")
    frame_length = _positive(frame_length, "signal.frame", "frame_length")
    hop_length = _positive(hop_length, "signal.frame", "hop_length")
    axis = _signal_axis(axis, "signal.frame")
    if x.ndim < 1 or frame_length > x.shape[axis]:
        raise op_error("signal.frame", f"`frame_length`={frame_length} must be at most the signal length; got "
                                       f"x.shape={tuple(x.shape)} with axis={axis}")
    return _frame_kernel(x, frame_length, hop_length, axis)


def overlap_add(x, hop_length, axis=-1, name=None):
    """Rebuild a signal from frames by adding them `hop_length` apart (the inverse of `frame`'s layout).

    Args:
      x: `[..., frame_length, num_frames]` (`axis=-1`) or `[num_frames, frame_length, ...]` (`axis=0`).
      hop_length: samples between the starts of neighbouring frames.
      axis: 0 or -1, where the frame axes are.
      name: ignored.

    Returns:
      The signal, `(num_frames - 1) * hop_length + frame_length` samples along `axis`.

    Example:
      >>> import pdx
      >>> pdx.signal.overlap_add(pdx.ones([3, 2]), 2).tolist()
      [1.0, 1.0, 2.0, 1.0, 1.0]
    """
    x = as_array(x, op="signal.overlap_add")
    hop_length = _positive(hop_length, "signal.overlap_add", "hop_length")
    axis = _signal_axis(axis, "signal.overlap_add")
    if x.ndim < 2:
        raise op_error("signal.overlap_add", f"`x` must have rank >= 2 (frame_length and num_frames); got "
                                             f"x.shape={tuple(x.shape)}")
    return _overlap_add_kernel(x, hop_length, axis)


def _window(window, win_length, n_fft, dtype, op):
    if window is None:
        window = jnp.ones((win_length,), dtype)
    else:
        window = as_array(window, name="window", op=op)
        if window.shape != (win_length,):
            raise op_error(op, f"`window` must be 1-D with win_length={win_length} samples; got "
                               f"window.shape={tuple(window.shape)}")
    left = (n_fft - win_length) // 2
    return jnp.pad(window, (left, n_fft - win_length - left))


def _stft_lengths(n_fft, hop_length, win_length, op):
    n_fft = _positive(n_fft, op, "n_fft")
    hop_length = n_fft // 4 if hop_length is None else static_int(hop_length, op=op, name="hop_length")
    if hop_length <= 0:
        raise op_error(op, f"`hop_length`={hop_length} must be positive (the default n_fft // 4 is 0 for "
                           f"n_fft={n_fft}; pass hop_length)")
    win_length = n_fft if win_length is None else static_int(win_length, op=op, name="win_length")
    if not 0 < win_length <= n_fft:
        raise op_error(op, f"`win_length`={win_length} must be in 1 .. n_fft={n_fft}")
    return n_fft, hop_length, win_length


@functools.partial(jax.jit, static_argnames=("n_fft", "hop_length", "center", "pad_mode", "normalized", "onesided"))
def _stft_kernel(x, window, n_fft, hop_length, center, pad_mode, normalized, onesided):
    if center:
        pad = n_fft // 2
        x = jnp.pad(x, ((0, 0), (pad, pad)), mode=pad_mode)
    frames = jnp.swapaxes(_frame(x, n_fft, hop_length), -1, -2) * window  # (B, num_frames, n_fft)
    norm = "ortho" if normalized else "backward"
    if onesided:
        spec = jnp.fft.rfft(frames, axis=-1, norm=norm)
    else:
        spec = jnp.fft.fft(frames, axis=-1, norm=norm)
    return jnp.swapaxes(spec, -1, -2)  # (B, freq, num_frames)


def stft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, name=None):
    """Short-time Fourier transform: windowed frames of `x`, each Fourier transformed.

    Args:
      x: a `[T]` or `[B, T]` signal, real or complex.
      n_fft: samples per frame and FFT size.
      hop_length: samples between frames (default `n_fft // 4`).
      win_length: window size, at most `n_fft` (default `n_fft`); shorter windows are
        zero-padded on both sides to `n_fft`.
      window: a `[win_length]` window (default all ones).
      center: pad `n_fft // 2` samples on both sides so frame t is centered at `t * hop_length`.
      pad_mode: 'reflect' or 'constant' (zeros), for `center`.
      normalized: scale by `1 / sqrt(n_fft)` ('ortho' FFT).
      onesided: keep the `n_fft // 2 + 1` non-negative frequencies (default True for real
        input and window; must be False for complex ones).
      name: ignored.

    Returns:
      A complex `[B, freq, num_frames]` tensor (`[freq, num_frames]` for 1-D `x`), with
      `num_frames = 1 + (T_padded - n_fft) // hop_length`.

    Example:
      >>> import pdx
      >>> pdx.signal.stft(pdx.ones([16]), n_fft=8).shape
      (5, 9)
    """
    op = "signal.stft"
    x = as_array(x, op=op)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(default_float())
    if x.ndim not in (1, 2):
        raise op_error(op, f"`x` must be a [T] or [B, T] signal; got x.shape={tuple(x.shape)}")
    n_fft, hop_length, win_length = _stft_lengths(n_fft, hop_length, win_length, op)
    if n_fft > x.shape[-1]:
        raise op_error(op, f"`n_fft`={n_fft} must be at most the signal length {x.shape[-1]}")
    if center and pad_mode not in ("reflect", "constant"):
        raise op_error(op, f"`pad_mode`={pad_mode!r} must be 'reflect' or 'constant'")
    if center and pad_mode == "reflect" and n_fft // 2 >= x.shape[-1]:
        raise op_error(op, f"reflect padding of n_fft // 2 = {n_fft // 2} needs a longer signal than "
                           f"{x.shape[-1]} samples; use pad_mode='constant'")
    win = _window(window, win_length, n_fft, x.dtype, op)
    is_complex = jnp.issubdtype(x.dtype, jnp.complexfloating) or jnp.issubdtype(win.dtype, jnp.complexfloating)
    if onesided is None:
        onesided = not is_complex
    if onesided and is_complex:
        raise op_error(op, "`onesided` must be False for a complex input or window")
    out = _stft_kernel(x[None] if x.ndim == 1 else x, win, n_fft, hop_length, bool(center), pad_mode,
                       bool(normalized), bool(onesided))
    return out[0] if x.ndim == 1 else out


@functools.partial(jax.jit, static_argnames=("n_fft", "hop_length", "center", "normalized", "onesided",
                                             "length", "return_complex"))
def _istft_kernel(x, window, n_fft, hop_length, center, normalized, onesided, length, return_complex):
    frames = jnp.swapaxes(x, -1, -2)  # (B, num_frames, freq)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        out = jnp.fft.ifft(frames, axis=-1, norm=norm)
    else:
        out = jnp.fft.irfft(frames[..., : n_fft // 2 + 1], n=n_fft, axis=-1, norm=norm)
    out = _overlap_add(jnp.swapaxes(out * window, -1, -2), hop_length)
    num_frames = x.shape[-1]
    envelope = _overlap_add(jnp.broadcast_to((window * window)[:, None], (n_fft, num_frames)), hop_length)
    start = n_fft // 2 if center else 0
    if length is None:
        stop = envelope.shape[-1] - (n_fft // 2 if center else 0)
    else:
        stop = start + length
    out, envelope = out[..., start:stop], envelope[start:stop]
    return out / envelope, envelope


def istft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False, onesided=True,
          length=None, return_complex=False, name=None):
    """Inverse short-time Fourier transform: inverse FFT per frame, windowed overlap-add.

    The overlap-added squared window must not vanish inside the output (the NOLA
    condition); eagerly that is checked and a ValueError raised, under jit the result
    has inf/nan there instead.

    Args:
      x: a complex `[B, freq, num_frames]` or `[freq, num_frames]` STFT.
      n_fft: the FFT size used by `stft`.
      hop_length: samples between frames (default `n_fft // 4`), at most `win_length`.
      win_length: window size (default `n_fft`).
      window: the `[win_length]` window used by `stft` (default all ones).
      center: the STFT was centered; trim `n_fft // 2` samples at both ends.
      normalized: the STFT was normalized ('ortho' FFT).
      onesided: `x` holds `n_fft // 2 + 1` frequencies (else `n_fft`).
      length: keep at most this many samples, counted from the first sample after the
        centering pad (default: everything but the padding).
      return_complex: return a complex signal (needs `onesided=False`).
      name: ignored.

    Returns:
      The `[B, T]` (or `[T]`) signal.

    Example:
      >>> import pdx
      >>> x = pdx.randn([32])
      >>> y = pdx.signal.istft(pdx.signal.stft(x, n_fft=8), n_fft=8)
      >>> bool(abs(y - x).max() < 1e-5)
      True
    """
    op = "signal.istft"
    x = as_array(x, op=op)
    if not jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise TypeError(f"pdx.{op}: `x` must be a complex STFT; got dtype {x.dtype}")
    if x.ndim not in (2, 3):
        raise op_error(op, f"`x` must be [freq, num_frames] or [B, freq, num_frames]; got x.shape={tuple(x.shape)}")
    n_fft, hop_length, win_length = _stft_lengths(n_fft, hop_length, win_length, op)
    if hop_length > win_length:
        raise op_error(op, f"`hop_length`={hop_length} must be at most win_length={win_length}")
    freq = n_fft // 2 + 1 if onesided else n_fft
    if x.shape[-2] != freq:
        raise op_error(op, f"x.shape={tuple(x.shape)} must have {freq} frequencies for n_fft={n_fft} and "
                           f"onesided={onesided}")
    if return_complex and onesided:
        raise op_error(op, "`return_complex=True` needs `onesided=False` (a one-sided STFT is of a real signal)")
    real_dtype = jnp.finfo(x.dtype).dtype
    win = _window(window, win_length, n_fft, real_dtype, op)
    if not return_complex and jnp.issubdtype(win.dtype, jnp.complexfloating):
        raise op_error(op, "a complex `window` needs `return_complex=True`")
    if length is not None:
        length = _positive(length, op, "length")
    out, envelope = _istft_kernel(x[None] if x.ndim == 2 else x, win, n_fft, hop_length, bool(center),
                                  bool(normalized), bool(onesided), length, bool(return_complex))
    if not in_trace() and float(jnp.min(jnp.abs(envelope))) < 1e-11:
        raise op_error(op, "the overlap-added squared window vanishes inside the output (the NOLA condition "
                           "fails); use a window/hop_length whose frames cover every sample")
    return out[0] if x.ndim == 2 else out
