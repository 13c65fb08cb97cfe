"""pdx.incubate.jit: Paddle's `paddle.incubate.jit` (the `inference` decorator, compiled with XLA)."""

from pdx.incubate._inference import inference

__all__ = ["inference"]
