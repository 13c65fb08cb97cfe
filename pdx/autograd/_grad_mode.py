"""Paddle's grad-mode switches: no_grad, enable_grad, set_grad_enabled, is_grad_enabled.

pdx records nothing for autodiff: gradients exist only inside `pdx.grad` /
`jax.grad`. These switches keep a flag that `is_grad_enabled()` reports, so
ported code that branches on it keeps working. Used as a *decorator*,
`no_grad` also stops gradients at the function's outputs
(`jax.lax.stop_gradient`), which matches Paddle: values computed under
no_grad do not propagate gradients. As a `with` block it cannot reach the
values computed inside; wrap them in `jax.lax.stop_gradient` to block
gradients there.
"""

from __future__ import annotations

import functools
import threading

import jax

from pdx._autograd import no_grad as _pdx_no_grad

__all__ = ["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]

_mode = threading.local()


def is_grad_enabled() -> bool:
    """Whether grad mode is on (it is unless inside no_grad / set_grad_enabled(False)).

    Example:
        >>> import pdx
        >>> with pdx.autograd.no_grad():
        ...     pdx.autograd.is_grad_enabled()
        False
    """
    return getattr(_mode, "enabled", True)


def _set(value: bool) -> None:
    _mode.enabled = bool(value)


def _stop(tree):
    return jax.tree_util.tree_map(lambda x: jax.lax.stop_gradient(x) if isinstance(x, jax.Array) else x, tree)


class _GradMode:
    _target: bool = True
    _stop_outputs: bool = False

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self._target)
        return self

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            prev = is_grad_enabled()
            _set(self._target)
            try:
                out = func(*args, **kwargs)
            finally:
                _set(prev)
            return _stop(out) if self._stop_outputs else out

        return wrapper


class no_grad(_GradMode, _pdx_no_grad):
    """Turn grad mode off (context manager or decorator).

    As a decorator the function's outputs also stop gradients, as Paddle's
    outputs computed under no_grad do. See the module notes for the `with`
    form.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> @pdx.autograd.no_grad()
        ... def double(x):
        ...     return 2 * x
        >>> pdx.grad(lambda x: (double(x) + x).sum())(jnp.ones(2))
        Array([1., 1.], dtype=float32)
    """

    _target = False
    _stop_outputs = True


class enable_grad(_GradMode):
    """Turn grad mode back on inside a no_grad region (context manager or decorator).

    Example:
        >>> import pdx
        >>> with pdx.autograd.no_grad():
        ...     with pdx.autograd.enable_grad():
        ...         pdx.autograd.is_grad_enabled()
        True
    """

    _target = True


class set_grad_enabled(_GradMode):
    """Set grad mode on or off: as a call, or as a context manager restoring the old mode.

    Example:
        >>> import pdx
        >>> with pdx.autograd.set_grad_enabled(False):
        ...     pdx.autograd.is_grad_enabled()
        False
    """

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"pdx.autograd.set_grad_enabled: `mode` must be True or False; got {mode!r}")
        self._target = mode
        self._prev = is_grad_enabled()
        _set(mode)

    def __enter__(self):
        return self
