"""pdx.jit: compile eager code with XLA — Paddle's `paddle.jit`.

`pdx.jit` is both the decorator and this namespace: `@pdx.jit`,
`@pdx.jit(static_argnames=...)` and `@pdx.jit.to_static` are the same thing,
so a Paddle script ports by changing its import.

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
from pdx.jit._save import load, save

__all__ = [
    "Dy2StaticError",
    "InputSpec",
    "StaticFunction",
    "TranslatedLayer",
    "enable_to_static",
    "get_code",
    "load",
    "max_iterations",
    "not_to_static",
    "save",
    "to_static",
]


def __getattr__(name: str):
    # pdx.export builds on pdx.jit (InputSpec), so jit.load's result type loads on first use
    if name == "TranslatedLayer":
        from pdx.export import TranslatedLayer

        return TranslatedLayer
    raise AttributeError(f"module 'pdx.jit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "TranslatedLayer"])


class _CallableModule(types.ModuleType):
    """Lets `pdx.jit(fn)` work while `pdx.jit.to_static` etc. stay module attributes."""

    def __call__(self, function=None, *args, **kwargs):
        return to_static(function, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
