"""LocalResponseNorm, SpectralNorm and SyncBatchNorm.

SyncBatchNorm is batch normalization whose statistics cover the whole global
batch. pdx programs see global arrays: under `pdx.jit` / `pdx.parallel` with
the batch sharded over a mesh, the mean and variance over the batch axis are
already the cross-device statistics (XLA inserts the all-reduce). So
SyncBatchNorm is BatchNorm over any input rank, and `convert_sync_batchnorm`
swaps it in for the BatchNorm layers of a model, keeping their values.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

import pdx.nn.functional as F
from pdx._args import is_int
from pdx.nn._common import float_dtype, layer_error, reprlist, value_of
from pdx.nn._layer import Layer, ParamAttr, as_rngs
from pdx.nn._norm import _BatchNormBase
from pdx.nn.initializer import Constant, Normal
from pdx._args import as_array

__all__ = ["LocalResponseNorm", "SpectralNorm", "SyncBatchNorm"]


class LocalResponseNorm(Layer):
    """Normalize each value by the sum of squares over `size` neighbouring channels
    (AlexNet's LRN; Paddle's `nn.LocalResponseNorm`).

    Args:
      size: channels in each normalization window.
      alpha: scale of the squared sum.
      beta: exponent.
      k: additive constant.
      data_format: 'NCL', 'NLC', 'NCHW', 'NHWC', 'NCDHW' or 'NDHWC'.
      name: ignored (Paddle compatibility).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.LocalResponseNorm(3)(jnp.ones((1, 4, 2, 2))).shape
      (1, 4, 2, 2)
    """

    def __init__(self, size, alpha=0.0001, beta=0.75, k=1.0, data_format="NCHW", name=None, *, rngs=None):
        super().__init__()
        if not is_int(size) or size < 1:
            raise layer_error("LocalResponseNorm", f"size must be a positive int; got size={size!r}")
        self.size = int(size)
        self.alpha = alpha
        self.beta = beta
        self.k = k
        self.data_format = data_format
        self.name = name

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k, self.data_format)

    def extra_repr(self) -> str:
        out = f"size={self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
        if self.data_format != "NCHW":
            out += f", data_format={self.data_format}"
        if self.name is not None:
            out += f", name={self.name}"
        return out


def _l2_normalize(v, eps):
    return v / (jnp.sqrt(jnp.sum(v * v)) + eps)


class SpectralNorm(Layer):
    """Divide a weight by its largest singular value, estimated by power iteration
    (Paddle's `nn.SpectralNorm`; Miyato et al. 2018).

    The weight is viewed as a matrix [weight_shape[dim], rest]. `weight_u` and
    `weight_v` (non-trainable parameters, Normal(0, 1) at init) start the power
    iteration; as with Paddle's kernel they are not written back. The gradient
    is the exact one with u and v held fixed (as PyTorch's); Paddle's kernel
    returns dOut * (1 - u v^T sum(W / sigma)) / sigma, which is not the
    derivative of W / sigma.

    Args:
      weight_shape: shape of the weight this layer normalizes.
      dim: the dim that becomes the matrix's rows.
      power_iters: power-iteration steps per call.
      eps: added to norms.
      dtype: parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs for weight_u and weight_v.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> sn = pdx.nn.SpectralNorm([2, 3], power_iters=20)
      >>> round(float(jnp.linalg.norm(sn(jnp.eye(2, 3)), 2)), 3)
      1.0
    """

    def __init__(self, weight_shape, dim=0, power_iters=1, eps=1e-12, dtype="float32", *, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        shape = list(weight_shape) if isinstance(weight_shape, (list, tuple)) else None
        if not shape or not all(is_int(s) and s > 0 for s in shape):
            raise layer_error("SpectralNorm", f"weight_shape must be a list of positive ints; got {weight_shape!r}")
        if not is_int(dim) or not 0 <= dim < len(shape):
            raise layer_error("SpectralNorm", f"dim={dim!r} must be in [0, {len(shape)}) for weight_shape={shape}")
        if not is_int(power_iters) or power_iters < 0:
            raise layer_error("SpectralNorm", f"power_iters must be an int >= 0; got power_iters={power_iters!r}")
        self._power_iters = int(power_iters)
        self._eps = eps
        self._dim = int(dim)
        self._weight_shape = tuple(int(s) for s in shape)
        h = shape[dim]
        w = math.prod(shape) // h
        rngs = as_rngs(rngs)
        frozen = ParamAttr(initializer=Normal(0.0, 1.0), trainable=False)
        self.weight_u = self.create_parameter((h,), attr=frozen, rngs=rngs)
        self.weight_v = self.create_parameter((w,), attr=frozen, rngs=rngs)

    def forward(self, x):
        weight = as_array(x, name="x", op="nn.SpectralNorm")
        if tuple(weight.shape) != self._weight_shape:
            raise layer_error("SpectralNorm", f"x.shape={tuple(weight.shape)} must equal "
                                              f"weight_shape={list(self._weight_shape)}")
        mat = jnp.moveaxis(weight, self._dim, 0).reshape(self._weight_shape[self._dim], -1)
        u = value_of(self.weight_u).astype(mat.dtype)
        v = value_of(self.weight_v).astype(mat.dtype)
        for _ in range(self._power_iters):
            v = _l2_normalize(mat.T @ u, self._eps)
            u = _l2_normalize(mat @ v, self._eps)
        u, v = jax.lax.stop_gradient(u), jax.lax.stop_gradient(v)
        sigma = u @ mat @ v
        return weight / sigma

    def extra_repr(self) -> str:
        return (f"weight_shape={reprlist(self._weight_shape)}, dim={self._dim}, power_iters={self._power_iters}, "
                f"eps={self._eps}")


_FIRST = {2: "NC", 3: "NCL", 4: "NCHW", 5: "NCDHW"}
_LAST = {3: "NLC", 4: "NHWC", 5: "NDHWC"}


class SyncBatchNorm(_BatchNormBase):
    """Batch normalization with statistics over the global batch (Paddle's `nn.SyncBatchNorm`).

    pdx arrays are global: inside a `pdx.jit` step whose batch is sharded over
    a mesh (`pdx.parallel`), the batch mean and variance are computed over all
    shards (XLA adds the cross-device reduction), which is what Paddle's
    SyncBatchNorm does with NCCL. Eagerly, or on one device, it is BatchNorm.
    Works for [N, C] and 3-D/4-D/5-D inputs; `weight_attr=False` /
    `bias_attr=False` keep a frozen weight of ones / bias of zeros, as in Paddle.

    Args:
      num_features: channels C.
      momentum: running-statistics momentum (Paddle's convention, default 0.9).
      epsilon: added to the variance.
      weight_attr: None, a ParamAttr or an initializer for `weight` (init 1); False: frozen ones.
      bias_attr: as weight_attr for `bias` (init 0); False: frozen zeros.
      data_format: channel first ('NCHW', 'NCDHW', 'NCL', 'NC') or last ('NHWC', 'NDHWC', 'NLC').
      name: ignored (shown in repr).
      dtype: keyword-only parameter/statistics dtype.
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.SyncBatchNorm(3)(jnp.ones((2, 3, 4))).shape
      (2, 3, 4)
    """

    _ranks = (2, 3, 4, 5)
    _formats = ("NCHW", "NCDHW", "NC", "NCL", "NHWC", "NDHWC", "NLC")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None, *, dtype=None, rngs=None):
        frozen_one = ParamAttr(initializer=Constant(1.0), trainable=False)
        frozen_zero = ParamAttr(initializer=Constant(0.0), trainable=False)
        super().__init__(num_features, momentum, epsilon, frozen_one if weight_attr is False else weight_attr,
                         frozen_zero if bias_attr is False else bias_attr, data_format, None, name,
                         dtype=dtype, rngs=rngs)
        self._weight_attr = weight_attr
        self._bias_attr = bias_attr
        # Paddle creates the frozen stand-ins last, so they follow the statistics in state_dict.
        for name, attr in (("weight", weight_attr), ("bias", bias_attr)):
            if attr is False:
                param = getattr(self, name)
                delattr(self, name)
                setattr(self, name, param)

    def _format_for(self, x) -> str:
        if self._data_format in _LAST.values():
            if x.ndim not in _LAST:
                raise layer_error("SyncBatchNorm", f"a channel-last data_format needs a 3-D to 5-D input; "
                                                   f"got input.shape={tuple(x.shape)}")
            return _LAST[x.ndim]
        return _FIRST[x.ndim]

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        """Replace every BatchNorm layer in `layer` (itself included) by a SyncBatchNorm
        holding the same parameters and running statistics.

        Args:
          layer: a Layer (a model or a single BatchNorm).

        Returns:
          The converted layer (the same object unless `layer` itself was a BatchNorm).

        Example:
          >>> import pdx
          >>> net = pdx.nn.Sequential(pdx.nn.Conv2D(3, 4, 3), pdx.nn.BatchNorm2D(4))
          >>> type(pdx.nn.SyncBatchNorm.convert_sync_batchnorm(net)[1]).__name__
          'SyncBatchNorm'
        """
        if isinstance(layer, _BatchNormBase) and not isinstance(layer, SyncBatchNorm):
            fmt = layer._data_format
            fmt = fmt if fmt in cls._formats else "NCHW"
            new = cls(layer._num_features, layer._momentum, layer._epsilon,
                      None if layer.weight is not None else False, None if layer.bias is not None else False,
                      fmt, layer._name, dtype=layer._dtype)
            for name in ("weight", "bias"):
                old = getattr(layer, name)
                if old is not None:
                    setattr(new, name, old)
            new._mean, new._variance = layer._mean, layer._variance
            new.training = layer.training
            return new
        for name, child in list(layer.named_children()) if isinstance(layer, Layer) else []:
            converted = cls.convert_sync_batchnorm(child)
            if converted is not child:
                _replace_child(layer, name, converted)
        return layer


def _replace_child(parent, name: str, child) -> None:
    """Set the child at a dotted path from named_children ('bn' or 'blocks.0' inside an nnx container)."""
    head, _, rest = name.partition(".")
    if not rest:
        setattr(parent, name, child)
        return
    container = getattr(parent, head)
    if isinstance(container, (nnx.List, list)):
        container[int(rest)] = child
    else:
        container[rest] = child

