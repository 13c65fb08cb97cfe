"""pdx.jit: compile eager code with XLA — Paddle's `paddle.jit`.

`pdx.jit` is both the decorator and this namespace: `@pdx.jit`,
`@pdx.jit(static_argnames=...)` and `@pdx.jit.to_static` are the same thing,
so a Paddle script ports by changing its import.

`pdx.jit.save`, `pdx.jit.load` and `pdx.jit.TranslatedLayer` are pdx.export's
(`save_layer`, `load_layer`, `TranslatedLayer`: export builds on jit's
tracing), given their Paddle names here by pdx's alias table
(`NAMES` in pdx/_paddle_tree.py) on first use.

Example:
    >>> import pdx, jax.numpy as jnp
    >>> @pdx.jit
    ... def f(x):
    ...     return x * 2
    >>> f(jnp.ones(2)).tolist()
    [2.0, 2.0]
"""

import sys
import types

from pdx.jit._dy2static import Dy2StaticError, get_code, max_iterations
from pdx.jit._input_spec import InputSpec
from pdx.jit._static_function import StaticFunction, enable_to_static, not_to_static, to_static

__all__ = [
    "Dy2StaticError",
    "InputSpec",
    "StaticFunction",
    "enable_to_static",
    "get_code",
    "max_iterations",
    "not_to_static",
    "to_static",
]


class _CallableModule(types.ModuleType):
    """Lets `pdx.jit(fn)` work while `pdx.jit.to_static` etc. stay module attributes."""

    def __call__(self, function=None, *args, **kwargs):
        return to_static(function, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
