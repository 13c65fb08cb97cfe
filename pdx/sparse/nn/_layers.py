"""Sparse layers (Paddle's `paddle.sparse.nn`): activations, convolutions, max pooling, batch norm."""

from __future__ import annotations

import math

import numpy as np

from pdx.nn import BatchNorm1D, Layer
from pdx.nn.initializer import Normal
from pdx.sparse._core import BCOO, as_coo, require_sparse
from pdx.sparse.nn import functional as F

__all__ = ["BatchNorm", "Conv2D", "Conv3D", "LeakyReLU", "MaxPool3D", "ReLU", "ReLU6", "Softmax", "SubmConv2D",
           "SubmConv3D"]


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


class _SparseConv(Layer):
    _dims = 3
    _subm = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", key=None, weight_attr=None, bias_attr=None, data_format=None, *, rngs=None):
        super().__init__()
        n = self._dims
        k = (kernel_size,) * n if isinstance(kernel_size, (int, np.integer)) else tuple(kernel_size)
        if groups != 1 or padding_mode != "zeros":
            raise ValueError(f"pdx.sparse.nn.{type(self).__name__}: only groups=1 and padding_mode='zeros' are "
                             f"supported (as in Paddle); got groups={groups!r}, padding_mode={padding_mode!r}")
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._data_format = data_format or ("NDHWC" if n == 3 else "NHWC")
        init = Normal(0.0, math.sqrt(2.0 / (in_channels * math.prod(k))))
        self.weight = self.create_parameter(k + (in_channels, out_channels), attr=weight_attr,
                                            default_initializer=init, rngs=rngs)
        self.bias = self.create_parameter((out_channels,), attr=bias_attr, is_bias=True, rngs=rngs)

    def forward(self, x):
        fn = {(3, False): F.conv3d, (3, True): F.subm_conv3d, (2, False): F.conv2d, (2, True): F.subm_conv2d}
        bias = None if self.bias is None else self.bias[...]
        return fn[(self._dims, self._subm)](x, self.weight[...], bias, self._stride, self._padding, self._dilation,
                                            1, self._data_format)


class Conv3D(_SparseConv):
    """Sparse 3-D convolution layer on COO `[N, D, H, W, C]`; weight `[kD, kH, kW, C_in, C_out]`.

    See `pdx.sparse.nn.functional.conv3d`. Default weight init as Paddle:
    Normal(0, sqrt(2 / (C_in * kD * kH * kW))); bias zeros.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.ones((1, 2, 2, 2, 3)), 4)
        >>> pdx.sparse.nn.Conv3D(3, 4, 2)(x).shape
        (1, 1, 1, 1, 4)
    """

    _dims, _subm = 3, False


class SubmConv3D(_SparseConv):
    """Submanifold sparse 3-D convolution layer: output at the input sites only.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.ones((1, 2, 2, 2, 3)), 4)
        >>> pdx.sparse.nn.SubmConv3D(3, 4, 3, padding=1)(x).shape
        (1, 2, 2, 2, 4)
    """

    _dims, _subm = 3, True


class Conv2D(_SparseConv):
    """Sparse 2-D convolution layer on COO `[N, H, W, C]`; weight `[kH, kW, C_in, C_out]`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.ones((1, 2, 2, 3)), 3)
        >>> pdx.sparse.nn.Conv2D(3, 4, 2)(x).shape
        (1, 1, 1, 4)
    """

    _dims, _subm = 2, False


class SubmConv2D(_SparseConv):
    """Submanifold sparse 2-D convolution layer: output at the input sites only.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.ones((1, 2, 2, 3)), 3)
        >>> pdx.sparse.nn.SubmConv2D(3, 4, 3, padding=1)(x).shape
        (1, 2, 2, 4)
    """

    _dims, _subm = 2, True


class MaxPool3D(Layer):
    """Sparse 3-D max pooling layer over the stored sites (see `functional.max_pool3d`).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.ones((1, 2, 2, 2, 3)), 4)
        >>> pdx.sparse.nn.MaxPool3D(2)(x).shape
        (1, 1, 1, 1, 3)
    """

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False,
                 data_format="NDHWC", name=None, *, rngs=None):
        super().__init__()
        if return_mask:
            raise ValueError("pdx.sparse.nn.MaxPool3D: return_mask=True is not supported (as in Paddle's sparse pooling)")
        self._args = (kernel_size, stride, padding, ceil_mode, data_format)

    def forward(self, x):
        return F.max_pool3d(x, *self._args)


class BatchNorm(BatchNorm1D):
    """Batch norm over the channel values `[nnz, C]` of a channels-last sparse tensor.

    Statistics are taken over the stored sites only (Paddle's sparse
    BatchNorm); parameters and buffers are named as in Paddle (`weight`,
    `bias`, `_mean`, `_variance`) and training/eval mode works as for
    `pdx.nn.BatchNorm1D`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> x = pdx.sparse.to_sparse_coo(jnp.ones((1, 2, 2, 2, 3)), 4)
        >>> pdx.sparse.nn.BatchNorm(3)(x).shape
        (1, 2, 2, 2, 3)
    """

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NDHWC", use_global_stats=None, name=None, *, rngs=None):
        if data_format not in ("NDHWC", "NHWC"):
            raise ValueError(f"pdx.sparse.nn.BatchNorm: `data_format` must be 'NDHWC' or 'NHWC'; got {data_format!r}")
        super().__init__(num_features, momentum=momentum, epsilon=epsilon, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format="NCL", use_global_stats=use_global_stats, rngs=rngs)

    def forward(self, x):
        require_sparse(x, "nn.BatchNorm")
        c = as_coo(x, "nn.BatchNorm")
        if c.n_dense != 1:
            raise ValueError(f"pdx.sparse.nn.BatchNorm: `x` must hold channel values [nnz, C] (one dense dim); got "
                             f"shape {list(x.shape)} with {c.n_dense} dense dims")
        return BCOO((super().forward(c.data), c.indices), shape=c.shape)
