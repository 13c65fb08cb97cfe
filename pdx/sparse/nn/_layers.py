"""Sparse activation layers (Paddle's `paddle.sparse.nn`): stateless wrappers over the functional ops."""

from __future__ import annotations

from pdx.nn import Layer
from pdx.sparse.nn import functional as F

__all__ = ["LeakyReLU", "ReLU", "ReLU6", "Softmax"]


class ReLU(Layer):
    """Sparse ReLU layer: `max(x, 0)` on the stored values.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([-1., 0., 2.]), 1)
        >>> pdx.sparse.values(pdx.sparse.nn.ReLU()(x)).tolist()
        [0.0, 2.0]
    """

    def __init__(self, name=None, *, rngs=None):
        super().__init__()

    def forward(self, x):
        return F.relu(x)


class ReLU6(Layer):
    """Sparse ReLU6 layer: `min(max(x, 0), 6)` on the stored values.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([-1., 0., 8.]), 1)
        >>> pdx.sparse.values(pdx.sparse.nn.ReLU6()(x)).tolist()
        [0.0, 6.0]
    """

    def __init__(self, name=None, *, rngs=None):
        super().__init__()

    def forward(self, x):
        return F.relu6(x)


class LeakyReLU(Layer):
    """Sparse leaky ReLU layer on the stored values.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.array([-1., 0., 2.]), 1)
        >>> pdx.sparse.values(pdx.sparse.nn.LeakyReLU(0.5)(x)).tolist()
        [-0.5, 2.0]
    """

    def __init__(self, negative_slope=0.01, name=None, *, rngs=None):
        super().__init__()
        self._negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, self._negative_slope)


class Softmax(Layer):
    """Sparse softmax layer over the stored values along `axis`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_csr(jnp.array([[0., 1., 1.], [2., 0., 0.]]))
        >>> pdx.sparse.values(pdx.sparse.nn.Softmax()(x)).tolist()
        [0.5, 0.5, 1.0]
    """

    def __init__(self, axis=-1, name=None, *, rngs=None):
        super().__init__()
        self._axis = axis

    def forward(self, x):
        return F.softmax(x, self._axis)
