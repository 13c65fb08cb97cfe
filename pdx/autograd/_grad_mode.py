"""Paddle's grad-mode switches: no_grad, enable_grad, set_grad_enabled, is_grad_enabled.

pdx records nothing for autodiff: gradients exist only inside `pdx.grad` /
`jax.grad`. These switches keep a flag that `is_grad_enabled()` reports, so
ported code that branches on it keeps working. Used as a *decorator*,
`no_grad` also stops gradients at the function's outputs
(`jax.lax.stop_gradient`), which matches Paddle: values computed under
no_grad do not propagate gradients. As a `with` block it cannot reach the
values computed inside; wrap them in `jax.lax.stop_gradient` to block
gradients there.

The flag is a trace-context setting ("pdx.autograd.grad_enabled",
`pdx/_trace_context.py`): code that branches on `is_grad_enabled()` under a
compiled function traces once per mode.
"""

from __future__ import annotations

import functools

import jax

from pdx import _trace_context
from pdx._autograd import no_grad as _pdx_no_grad

__all__ = ["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]

_ENABLED = _trace_context.GRAD_ENABLED


def is_grad_enabled() -> bool:
    """Whether grad mode is on (it is unless inside no_grad / set_grad_enabled(False)).

    Example:
        >>> import pdx
        >>> with pdx.autograd.no_grad():
        ...     pdx.autograd.is_grad_enabled()
        False
    """
    return _ENABLED.get()


def _stop(tree):
    return jax.tree_util.tree_map(lambda x: jax.lax.stop_gradient(x) if isinstance(x, jax.Array) else x, tree)


class _GradMode:
    _target: bool = True
    _stop_outputs: bool = False

    def __enter__(self):
        self._scope = _ENABLED.set(self._target)
        self._scope.__enter__()
        return self

    def __exit__(self, *exc):
        self._scope.__exit__(*exc)
        return False

    def __call__(self, func):
        target, stop_outputs = self._target, self._stop_outputs

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with _ENABLED.set(target):
                out = func(*args, **kwargs)
            return _stop(out) if stop_outputs else out

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
        # Called, it switches the mode on this thread for good; used as a `with`, the block's
        # exit restores the mode from before the call.
        self._scope = _ENABLED.set(mode)
        self._scope.__enter__()

    def __enter__(self):
        return self
