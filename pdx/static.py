"""pdx.static: Paddle's `paddle.static` names that still make sense in pdx."""

from pdx.jit import InputSpec

__all__ = ["InputSpec"]
