"""How pdx lowers some ops, switchable while tracing.

1x1 convolutions (groups 1) are traced as one matmul over the strided pixels
(pdx/nn/functional/_conv.py: faster forward and backward on XLA:CPU). Program
rewrites that work on convolutions, such as folding an eval-mode BatchNorm into
the weights at export (pdx/export/_rewrite.py), trace under
`convolutions_kept()` to see them as convolutions.

Example:
  >>> pointwise_as_matmul()
  True
  >>> with convolutions_kept():
  ...     pointwise_as_matmul()
  False
"""

from __future__ import annotations

import contextlib
import contextvars

__all__ = ["convolutions_kept", "pointwise_as_matmul"]

_POINTWISE_AS_MATMUL = contextvars.ContextVar("pdx_pointwise_as_matmul", default=True)


def pointwise_as_matmul() -> bool:
    """Whether a 1x1 convolution traced now becomes a matmul."""
    return _POINTWISE_AS_MATMUL.get()


@contextlib.contextmanager
def convolutions_kept():
    """Trace 1x1 convolutions as convolutions, not as matmuls, inside the block."""
    token = _POINTWISE_AS_MATMUL.set(False)
    try:
        yield
    finally:
        _POINTWISE_AS_MATMUL.reset(token)
