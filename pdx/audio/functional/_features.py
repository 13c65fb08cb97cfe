"""Mel scale, filter banks, decibels and the DCT basis (`paddle.audio.functional`)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from pdx._dtype import convert_dtype
from pdx._args import as_array, op_error, static_int

# Slaney's mel scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above.
_LINEAR_HZ_PER_MEL = 200.0 / 3
_BREAK_HZ = 1000.0
_BREAK_MEL = _BREAK_HZ / _LINEAR_HZ_PER_MEL
_LOG_STEP = math.log(6.4) / 27.0


def _is_tensor(x):
    return isinstance(x, jax.Array) or hasattr(x, "__array__") and not isinstance(x, (int, float))


def hz_to_mel(freq, htk=False):
    """Frequencies in Hz to mels (Slaney's scale, or HTK's `2595 log10(1 + f / 700)`).

    Args:
      freq: a number or a tensor of frequencies in Hz.
      htk: use the HTK formula.

    Returns:
      A number for a number, a tensor for a tensor.

    Example:
      >>> import pdx
      >>> round(pdx.audio.functional.hz_to_mel(1000.0), 4)
      15.0
    """
    if not _is_tensor(freq):
        if htk:
            return 2595.0 * math.log10(1.0 + freq / 700.0)
        if freq >= _BREAK_HZ:
            return _BREAK_MEL + math.log(freq / _BREAK_HZ + 1e-10) / _LOG_STEP
        return freq / _LINEAR_HZ_PER_MEL
    f = as_array(freq, name="freq", op="audio.functional.hz_to_mel")
    if htk:
        return 2595.0 * jnp.log10(1.0 + f / 700.0)
    log_part = _BREAK_MEL + jnp.log(f / _BREAK_HZ + 1e-10) / _LOG_STEP
    return jnp.where(f > _BREAK_HZ, log_part, f / _LINEAR_HZ_PER_MEL)


def mel_to_hz(mel, htk=False):
    """Mels to frequencies in Hz (the inverse of `hz_to_mel`).

    Example:
      >>> import pdx
      >>> round(pdx.audio.functional.mel_to_hz(15.0), 4)
      1000.0
    """
    if not _is_tensor(mel):
        if htk:
            return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
        if mel >= _BREAK_MEL:
            return _BREAK_HZ * math.exp(_LOG_STEP * (mel - _BREAK_MEL))
        return mel * _LINEAR_HZ_PER_MEL
    m = as_array(mel, name="mel", op="audio.functional.mel_to_hz")
    if htk:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    return jnp.where(m > _BREAK_MEL, _BREAK_HZ * jnp.exp(_LOG_STEP * (m - _BREAK_MEL)), m * _LINEAR_HZ_PER_MEL)


def _float_dtype(dtype, op):
    dtype = convert_dtype(dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise op_error(op, f"`dtype`={dtype} must be a floating dtype")
    return dtype


def mel_frequencies(n_mels=64, f_min=0.0, f_max=11025.0, htk=False, dtype="float32"):
    """`n_mels` frequencies (Hz) evenly spaced on the mel scale from `f_min` to `f_max`.

    Example:
      >>> import pdx
      >>> [round(f, 1) for f in pdx.audio.functional.mel_frequencies(3, 0.0, 2000.0).tolist()]
      [0.0, 836.1, 2000.0]
    """
    op = "audio.functional.mel_frequencies"
    n_mels = static_int(n_mels, op=op, name="n_mels")
    mels = jnp.linspace(hz_to_mel(f_min, htk), hz_to_mel(f_max, htk), n_mels, dtype=_float_dtype(dtype, op))
    return mel_to_hz(mels, htk)


def fft_frequencies(sr, n_fft, dtype="float32"):
    """Center frequencies (Hz) of the `1 + n_fft // 2` bins of a one-sided FFT at sample rate `sr`.

    Example:
      >>> import pdx
      >>> pdx.audio.functional.fft_frequencies(8000, 4).tolist()
      [0.0, 2000.0, 4000.0]
    """
    op = "audio.functional.fft_frequencies"
    n_fft = static_int(n_fft, op=op, name="n_fft")
    return jnp.linspace(0.0, float(sr) / 2, 1 + n_fft // 2, dtype=_float_dtype(dtype, op))


def compute_fbank_matrix(sr, n_fft, n_mels=64, f_min=0.0, f_max=None, htk=False, norm="slaney", dtype="float32"):
    """Triangular mel filter bank, `[n_mels, 1 + n_fft // 2]`, to apply to a power spectrogram.

    Args:
      sr: sample rate.
      n_fft: FFT size.
      n_mels: number of mel bands.
      f_min: lowest frequency (Hz).
      f_max: highest frequency (default `sr / 2`).
      htk: use the HTK mel formula.
      norm: 'slaney' (each triangle has unit area in Hz), a number p (unit p-norm rows), or None.
      dtype: the result dtype.

    Example:
      >>> import pdx
      >>> pdx.audio.functional.compute_fbank_matrix(16000, 512, n_mels=40).shape
      (40, 257)
    """
    op = "audio.functional.compute_fbank_matrix"
    dtype = _float_dtype(dtype, op)
    n_mels = static_int(n_mels, op=op, name="n_mels")
    f_max = float(sr) / 2 if f_max is None else f_max
    bins = fft_frequencies(sr, n_fft, dtype)
    edges = mel_frequencies(n_mels + 2, f_min, f_max, htk, dtype)  # band i spans edges[i] .. edges[i + 2]
    widths = jnp.diff(edges)
    offsets = edges[:, None] - bins[None, :]
    rising = -offsets[:-2] / widths[:-1, None]
    falling = offsets[2:] / widths[1:, None]
    weights = jnp.maximum(0.0, jnp.minimum(rising, falling))
    if norm == "slaney":
        weights = weights * (2.0 / (edges[2:] - edges[:-2]))[:, None]
    elif isinstance(norm, (int, float)) and not isinstance(norm, bool):
        size = jnp.sum(jnp.abs(weights) ** norm, axis=-1, keepdims=True) ** (1.0 / norm)
        weights = weights / jnp.maximum(size, 1e-12)
    elif norm is not None:
        raise op_error(op, f"`norm`={norm!r} must be 'slaney', a number or None")
    return weights.astype(dtype)


def power_to_db(spect, ref_value=1.0, amin=1e-10, top_db=80.0):
    """Power to decibels: `10 log10(max(spect, amin) / ref_value)`, floored `top_db` below the peak.

    Args:
      spect: a power spectrogram.
      ref_value: the power that maps to 0 dB.
      amin: the smallest power considered (avoids log(0)).
      top_db: clip values more than `top_db` below the maximum (None: no clipping).

    Example:
      >>> import pdx
      >>> pdx.audio.functional.power_to_db(pdx.to_tensor([1.0, 10.0, 100.0])).tolist()
      [0.0, 10.0, 20.0]
    """
    op = "audio.functional.power_to_db"
    if amin <= 0:
        raise op_error(op, f"`amin`={amin} must be positive")
    if ref_value <= 0:
        raise op_error(op, f"`ref_value`={ref_value} must be positive")
    if top_db is not None and top_db < 0:
        raise op_error(op, f"`top_db`={top_db} must be non-negative (or None)")
    s = as_array(spect, name="spect", op=op)
    db = 10.0 * jnp.log10(jnp.maximum(s, amin)) - 10.0 * math.log10(max(ref_value, amin))
    if top_db is not None:
        db = jnp.maximum(db, jnp.max(db) - top_db)
    return db


def create_dct(n_mfcc, n_mels, norm="ortho", dtype="float32"):
    """DCT-II basis, `[n_mels, n_mfcc]`: multiply log-mel features by it to get MFCCs.

    Args:
      n_mfcc: number of coefficients.
      n_mels: number of mel bands.
      norm: 'ortho' (orthonormal columns) or None (unscaled, times 2).
      dtype: the result dtype.

    Example:
      >>> import pdx
      >>> pdx.audio.functional.create_dct(4, 8).shape
      (8, 4)
    """
    op = "audio.functional.create_dct"
    dtype = _float_dtype(dtype, op)
    n_mfcc = static_int(n_mfcc, op=op, name="n_mfcc")
    n_mels = static_int(n_mels, op=op, name="n_mels")
    if norm not in ("ortho", None):
        raise op_error(op, f"`norm`={norm!r} must be 'ortho' or None")
    n = jnp.arange(n_mels, dtype=dtype)[:, None]
    k = jnp.arange(n_mfcc, dtype=dtype)[None, :]
    basis = jnp.cos(math.pi / n_mels * (n + 0.5) * k)
    if norm is None:
        return 2.0 * basis
    scale = jnp.where(k == 0, math.sqrt(1.0 / n_mels), math.sqrt(2.0 / n_mels))
    return (basis * scale).astype(dtype)
