"""Top-level linear algebra Paddle keeps beside `paddle.linalg`: eigvalsh."""

from __future__ import annotations

import jax.numpy as jnp

from pdx.ops._common import as_array, op_error
from pdx.ops._elementwise import _to_float


def eigvalsh(x, UPLO="L", name=None):  # noqa: N803 (Paddle's name)
    """Eigenvalues of symmetric (Hermitian) matrices, ascending, read from one triangle.

    Args:
      x: a `[..., N, N]` tensor.
      UPLO: 'L' reads the lower triangle, 'U' the upper.
      name: ignored.

    Returns:
      A real `[..., N]` tensor.

    Example:
      >>> import pdx
      >>> pdx.eigvalsh(pdx.to_tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
      [1.0, 2.0]
    """
    x = _to_float(as_array(x, op="eigvalsh"))
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise op_error("eigvalsh", f"`x` must be a batch of square matrices [..., N, N]; got x.shape={tuple(x.shape)}")
    if UPLO not in ("L", "U"):
        raise op_error("eigvalsh", f"`UPLO`={UPLO!r} must be 'L' or 'U'")
    return jnp.linalg.eigvalsh(x, UPLO=UPLO, symmetrize_input=False)
