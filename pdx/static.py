"""pdx.static: Paddle's `paddle.static` names that still make sense in pdx."""

from pdx.jit._input_spec import InputSpec

__all__ = ["InputSpec"]
