"""Window functions (`paddle.audio.functional.get_window`), computed in float64 numpy and cast.

The window length and parameters are static Python values, so a window is a
constant: built once on the host, exact, and free under jit.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from pdx._dtype import convert_dtype
from pdx._args import op_error, static_int

_OP = "audio.functional.get_window"


def _general_cosine(m, coefficients):
    phase = np.linspace(-np.pi, np.pi, m)
    return sum(c * np.cos(k * phase) for k, c in enumerate(coefficients))


def _hamming(m, alpha=0.54):
    return _general_cosine(m, [alpha, 1.0 - alpha])


def _hann(m):
    return _hamming(m, 0.5)


def _blackman(m):
    return _general_cosine(m, [0.42, 0.50, 0.08])


def _nuttall(m):
    return _general_cosine(m, [0.3635819, 0.4891775, 0.1365995, 0.0106411])


def _bartlett(m):
    n = np.arange(m)
    return np.where(n <= (m - 1) / 2.0, 2.0 * n / (m - 1), 2.0 - 2.0 * n / (m - 1))


def _triang(m):
    n = np.arange(1, (m + 1) // 2 + 1)
    if m % 2 == 0:
        half = (2 * n - 1.0) / m
        return np.concatenate([half, half[::-1]])
    half = 2 * n / (m + 1.0)
    return np.concatenate([half, half[-2::-1]])


def _bohman(m):
    fac = np.abs(np.linspace(-1, 1, m)[1:-1])
    inner = (1 - fac) * np.cos(np.pi * fac) + 1.0 / np.pi * np.sin(np.pi * fac)
    return np.concatenate([[0.0], inner, [0.0]])


def _cosine(m):
    return np.sin(np.pi / m * (np.arange(m) + 0.5))


def _gaussian(m, std):
    n = np.arange(m) - (m - 1.0) / 2.0
    return np.exp(-(n ** 2) / (2.0 * std * std))


def _general_gaussian(m, p, sig):
    n = np.arange(m) - (m - 1.0) / 2.0
    return np.exp(-0.5 * np.abs(n / sig) ** (2 * p))


def _exponential(m, center=None, tau=1.0):
    center = (m - 1) / 2.0 if center is None else center
    return np.exp(-np.abs(np.arange(m) - center) / tau)


def _tukey(m, alpha=0.5):
    if alpha <= 0:
        return np.ones(m)
    if alpha >= 1.0:
        return _hann(m)
    n = np.arange(m)
    width = int(np.floor(alpha * (m - 1) / 2.0))
    left = 0.5 * (1 + np.cos(np.pi * (-1 + 2.0 * n[: width + 1] / alpha / (m - 1))))
    middle = np.ones(m - 2 * (width + 1))
    right = 0.5 * (1 + np.cos(np.pi * (-2.0 / alpha + 1 + 2.0 * n[m - width - 1:] / alpha / (m - 1))))
    return np.concatenate([left, middle, right])


def _taylor(m, nbar=4, sll=30, norm=True):
    b = 10 ** (sll / 20)
    a = np.arccosh(b) / np.pi
    s2 = nbar ** 2 / (a ** 2 + (nbar - 0.5) ** 2)
    ma = np.arange(1, nbar)
    fm = np.empty(nbar - 1)
    signs = np.empty_like(ma, dtype=float)
    signs[::2], signs[1::2] = 1, -1
    m2 = ma * ma
    for mi, _ in enumerate(ma):
        numer = signs[mi] * np.prod(1 - m2[mi] / s2 / (a ** 2 + (ma - 0.5) ** 2))
        denom = 2 * np.prod(1 - m2[mi] / m2[:mi]) * np.prod(1 - m2[mi] / m2[mi + 1:])
        fm[mi] = numer / denom

    def values(x):
        return 1 + 2 * np.dot(fm, np.cos(2 * np.pi * ma[:, None] * (x - m / 2.0 + 0.5) / m))

    w = values(np.arange(m))
    if norm:
        w = w / values((m - 1) / 2)
    return w


def _kaiser(m, beta):
    n = np.arange(m)
    alpha = (m - 1) / 2.0
    return np.i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2)) / np.i0(float(beta))


# name -> (function, number of required parameters, number of optional parameters)
_WINDOWS = {
    "hamming": (_hamming, 0, 0),
    "hann": (_hann, 0, 0),
    "blackman": (_blackman, 0, 0),
    "nuttall": (_nuttall, 0, 0),
    "bartlett": (_bartlett, 0, 0),
    "triang": (_triang, 0, 0),
    "bohman": (_bohman, 0, 0),
    "cosine": (_cosine, 0, 0),
    "gaussian": (_gaussian, 1, 0),
    "general_gaussian": (_general_gaussian, 2, 0),
    "exponential": (_exponential, 0, 2),
    "tukey": (_tukey, 0, 1),
    "taylor": (_taylor, 0, 3),
    "kaiser": (_kaiser, 1, 0),
}


def get_window(window, win_length, fftbins=True, dtype="float64"):
    """A window of `win_length` samples by name, as `scipy.signal.get_window` defines them.

    Args:
      window: a name ('hamming', 'hann', 'blackman', 'nuttall', 'bartlett', 'triang', 'bohman',
        'cosine', 'tukey', 'taylor', 'exponential', 'gaussian', 'general_gaussian', 'kaiser')
        or a tuple of a name and its parameters: ('gaussian', std), ('general_gaussian', p, sig),
        ('kaiser', beta), ('tukey', alpha), ('exponential', center, tau),
        ('taylor', nbar, sll, norm). 'gaussian', 'general_gaussian', 'kaiser' and
        'exponential' need a tuple.
      win_length: the number of samples.
      fftbins: a periodic window (for spectral analysis, the default) instead of a
        symmetric one (for filter design).
      dtype: the result dtype; float64 becomes float32 unless JAX runs with x64.

    Returns:
      A `[win_length]` tensor.

    Example:
      >>> import pdx
      >>> pdx.audio.functional.get_window("hann", 4).tolist()
      [0.0, 0.5, 1.0, 0.5]
    """
    if isinstance(window, str):
        name, params = window, ()
    elif isinstance(window, tuple) and window and isinstance(window[0], str):
        name, params = window[0], tuple(window[1:])
    else:
        raise op_error(_OP, f"`window`={window!r} must be a window name or a (name, *parameters) tuple")
    if name not in _WINDOWS:
        raise op_error(_OP, f"`window`={name!r} is not a known window; use one of {sorted(_WINDOWS)}")
    fn, required, optional = _WINDOWS[name]
    if isinstance(window, str) and name == "exponential":
        raise op_error(_OP, "`window`='exponential' needs its parameters: pass ('exponential', center, tau) "
                            "or ('exponential', None, tau)")
    if not required <= len(params) <= required + optional:
        raise op_error(_OP, f"`window`={window!r}: the {name!r} window takes {required} required and "
                            f"{optional} optional parameters; got {len(params)} (pass a tuple like "
                            f"({name!r}, ...))")
    m = static_int(win_length, op=_OP, name="win_length")
    if m < 0:
        raise op_error(_OP, f"`win_length`={m} must be >= 0")
    if name == "exponential" and not fftbins and params and params[0] is not None:
        raise op_error(_OP, "a symmetric ('fftbins=False') exponential window takes no `center`")
    dtype = convert_dtype(dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise op_error(_OP, f"`dtype`={dtype} must be a floating dtype")
    if m <= 1:
        return jnp.ones((m,), dtype)
    size = m + 1 if fftbins else m  # a periodic window is the symmetric one of m + 1 samples, truncated
    w = np.asarray(fn(size, *params), dtype=np.float64)[:m]
    if not math.isfinite(float(np.sum(w))):
        raise op_error(_OP, f"`window`={window!r} gives non-finite values for win_length={m}")
    return jnp.asarray(w, dtype)
