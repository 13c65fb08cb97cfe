"""Normalization layers: BatchNorm*, LayerNorm, RMSNorm, GroupNorm, InstanceNorm*.

Batch norm keeps its running statistics as `Buffer`s named `_mean` and
`_variance` (Paddle's names, so state_dicts load both ways). A training-mode
call computes the new statistics functionally and writes them back with
`set_value`, which works eagerly and inside a compiled step that threads the
layer's state.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

import pdx.nn.functional as F
from pdx._dtype import default_float
from pdx._placement import axes_metadata
from pdx.nn import axes
from pdx._args import is_int
from pdx.nn._common import float_dtype, layer_error, value_of
from pdx.nn._layer import Buffer, Layer, as_rngs
from pdx.nn.initializer import Constant
from pdx._args import as_array

__all__ = ["BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "GroupNorm", "InstanceNorm1D",
           "InstanceNorm2D", "InstanceNorm3D", "LayerNorm", "RMSNorm"]


def _channels(value, *, layer: str, name: str) -> int:
    if not is_int(value) or value <= 0:
        raise layer_error(layer, f"`{name}` must be a positive int; got {name}={value!r}")
    return int(value)


def _norm_dtype(dtype):
    # Paddle keeps normalization parameters in float32 when the default dtype is float16.
    if dtype is None and default_float() == np.float16:
        return np.dtype(np.float32)
    return float_dtype(dtype)


def _check_rank(layer: str, x, ranks: tuple[int, ...]):
    x = as_array(x, name="input", op=f"nn.{layer}")
    if x.ndim not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise layer_error(layer, f"expects a {want} input; got input.shape={tuple(x.shape)}")
    return x


class _BatchNormBase(Layer):
    """Shared state and forward of the batch-norm layers."""

    _ranks: tuple[int, ...] = (4,)
    _formats: tuple[str, ...] = ("NCHW", "NHWC")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", use_global_stats=None, name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=_norm_dtype(dtype))
        layer = type(self).__name__
        num_features = _channels(num_features, layer=layer, name="num_features")
        if data_format not in self._formats:
            raise layer_error(layer, f"data_format={data_format!r} is not supported; use one of {list(self._formats)}")
        rngs = as_rngs(rngs)
        self.weight = self.create_parameter((num_features,), attr=weight_attr, default_initializer=Constant(1.0),
                                            axis_names=(axes.NORM,), rngs=rngs)
        self.bias = self.create_parameter((num_features,), attr=bias_attr, is_bias=True,
                                          axis_names=(axes.NORM,), rngs=rngs)
        self._mean = Buffer(jnp.zeros((num_features,), self._dtype), persistable=True,
                            **axes_metadata((axes.NORM,)))
        self._variance = Buffer(jnp.ones((num_features,), self._dtype), persistable=True,
                                **axes_metadata((axes.NORM,)))
        self._num_features = num_features
        self._momentum = momentum
        self._epsilon = epsilon
        self._data_format = data_format
        self._use_global_stats = use_global_stats
        self._name = name

    def _normalize(self, x, use_global_stats, data_format):
        out, mean, var = F.batch_norm_with_stats(
            x, value_of(self._mean), value_of(self._variance), weight=value_of(self.weight),
            bias=value_of(self.bias), training=self.training, momentum=self._momentum, epsilon=self._epsilon,
            data_format=data_format, use_global_stats=use_global_stats)
        # Paddle refreshes the statistics whenever batch statistics are used (even in eval
        # with use_global_stats=False); F returns them unchanged otherwise.
        self._mean.set_value(mean.astype(self._mean.get_value().dtype))
        self._variance.set_value(var.astype(self._variance.get_value().dtype))
        return out

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        x = _check_rank(type(self).__name__, input, self._ranks)
        return self._normalize(x, self._use_global_stats, self._format_for(x))

    def _format_for(self, x) -> str:
        return self._data_format

    def extra_repr(self) -> str:
        out = f"num_features={self._num_features}, momentum={self._momentum}, epsilon={self._epsilon}"
        if self._data_format != "NCHW":
            out += f", data_format={self._data_format}"
        if self._name is not None:
            out += f", name={self._name}"
        return out


_BN_ARGS = """
    Training mode normalizes with the batch statistics and updates the running
    ones: `running = momentum * running + (1 - momentum) * batch` (Paddle's
    convention, with the biased batch variance).
    Eval mode normalizes with the running statistics.

    Args:
      num_features: channels C.
      momentum: running-statistics momentum (Paddle's convention, default 0.9).
      epsilon: added to the variance.
      weight_attr: None, a `ParamAttr` or an initializer for `weight` (init 1); False: no weight.
      bias_attr: as weight_attr for `bias` (init 0); False: no bias.
      data_format: layout name (channel first by default).
      use_global_stats: None (batch stats in training, running stats in eval), True
        (always running stats) or False (always batch stats).
      name: ignored (shown in repr).
      dtype: keyword-only parameter/statistics dtype.
      rngs: keyword-only seed / key / nnx.Rngs (unused by the default initializers).
"""


class BatchNorm1D(_BatchNormBase):
    __doc__ = f"""Batch normalization over [N, C] or [N, C, L] inputs (Paddle's `nn.BatchNorm1D`).
{_BN_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> bn = pdx.nn.BatchNorm1D(3)
      >>> bn(jnp.arange(12.0).reshape(4, 3)).shape, sorted(k for k in bn.state_dict())
      ((4, 3), ['_mean', '_variance', 'bias', 'weight'])
    """
    _ranks = (2, 3)
    _formats = ("NC", "NCL", "NLC")

    def _format_for(self, x) -> str:
        # Paddle reads any of these as "channels on axis 1" for 2-D input.
        if x.ndim == 2:
            return "NC"
        return "NLC" if self._data_format == "NLC" else "NCL"

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCL", use_global_stats=None, name=None, *, dtype=None, rngs=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         use_global_stats, name, dtype=dtype, rngs=rngs)


class BatchNorm2D(_BatchNormBase):
    __doc__ = f"""Batch normalization over [N, C, H, W] (or NHWC) inputs (Paddle's `nn.BatchNorm2D`).
{_BN_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> bn = pdx.nn.BatchNorm2D(3)
      >>> bn(jnp.ones((2, 3, 4, 4))).shape
      (2, 3, 4, 4)
    """


class BatchNorm3D(_BatchNormBase):
    __doc__ = f"""Batch normalization over [N, C, D, H, W] (or NDHWC) inputs (Paddle's `nn.BatchNorm3D`).
{_BN_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.BatchNorm3D(2)(jnp.ones((1, 2, 2, 2, 2))).shape
      (1, 2, 2, 2, 2)
    """
    _ranks = (5,)
    _formats = ("NCDHW", "NDHWC")

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCDHW", use_global_stats=None, name=None, *, dtype=None, rngs=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         use_global_stats, name, dtype=dtype, rngs=rngs)


class BatchNorm(_BatchNormBase):
    """Paddle's older `nn.BatchNorm` API (any rank >= 2, optional fused activation).

    Args:
      num_channels: channels C.
      act: None or the name of an activation in `pdx.nn.functional` applied after.
      is_test: start in eval mode.
      momentum, epsilon: as BatchNorm2D.
      param_attr: attribute of `weight` (init 1).
      bias_attr: attribute of `bias` (init 0).
      dtype: parameter dtype ('float16' is kept as float32, as Paddle).
      data_layout: 'NCHW' or 'NHWC' (channel axis 1 or last, for any rank).
      in_place, moving_mean_name, moving_variance_name, do_model_average_for_mean_and_var:
        accepted for compatibility.
      use_global_stats: always normalize with the running statistics.
      trainable_statistics: use batch statistics even in eval mode.
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.BatchNorm(3, act="relu")(jnp.ones((2, 3))).shape
      (2, 3)
    """

    _ranks = (2, 3, 4, 5)

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                 bias_attr=None, dtype="float32", data_layout="NCHW", in_place=False, moving_mean_name=None,
                 moving_variance_name=None, do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False, *, rngs=None):
        if data_layout not in ("NCHW", "NHWC"):
            raise layer_error("BatchNorm", f"data_layout={data_layout!r} is not supported; use 'NCHW' or 'NHWC'")
        if act is not None and not callable(getattr(F, str(act), None)):
            raise layer_error("BatchNorm", f"act={act!r} is not an activation in pdx.nn.functional")
        dtype = "float32" if dtype in ("float16", np.float16) else dtype
        super().__init__(num_channels, momentum, epsilon, param_attr, bias_attr, data_layout,
                         None, None, dtype=dtype, rngs=rngs)
        self._act = act
        self._data_layout = data_layout
        self._trainable_statistics = bool(trainable_statistics)
        self._use_global_stats = bool(use_global_stats)
        self.training = not is_test

    def forward(self, input):  # noqa: A002
        x = _check_rank("BatchNorm", input, self._ranks)
        # F's use_global_stats: None = batch stats only in training; False = always batch stats.
        if self._use_global_stats:
            mode = True
        else:
            mode = False if self._trainable_statistics else None
        # Paddle's kernel reads the layout as "channel axis 1 or last" for any rank.
        last = self._data_layout == "NHWC"
        fmt = {2: "NC", 3: "NLC" if last else "NCL", 4: self._data_layout, 5: "NDHWC" if last else "NCDHW"}[x.ndim]
        out = self._normalize(x, mode, fmt)
        return out if self._act is None else getattr(F, self._act)(out)


def _normalized_shape(value, layer: str) -> tuple[int, ...]:
    shape = (value,) if is_int(value) else tuple(value) if isinstance(value, (list, tuple)) else ()
    if not shape or not all(is_int(s) and s > 0 for s in shape):
        raise layer_error(layer, f"normalized_shape must be a positive int or a list of positive ints; "
                                 f"got normalized_shape={value!r}")
    return tuple(int(s) for s in shape)


def _as_normalized(param, shape):
    """A flat affine parameter reshaped like normalized_shape, as F takes it."""
    value = value_of(param)
    return None if value is None else value.reshape(shape)


class LayerNorm(Layer):
    """Normalize over the trailing `normalized_shape` dims (Paddle's `nn.LayerNorm`).

    As in Paddle, `weight` and `bias` are flat: shape `[prod(normalized_shape)]`.

    Args:
      normalized_shape: int or list of ints: the trailing dims to normalize.
      epsilon: added to the variance.
      weight_attr: None, a `ParamAttr` or an initializer for `weight` (init 1); False: no weight.
      bias_attr: as weight_attr for `bias` (init 0); False: no bias.
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> ln = pdx.nn.LayerNorm(4)
      >>> ln(jnp.arange(8.0).reshape(2, 4)).shape
      (2, 4)
    """

    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None, name=None, *,
                 dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        self._normalized_shape = _normalized_shape(normalized_shape, "LayerNorm")
        self._epsilon = epsilon
        self._name = name
        rngs = as_rngs(rngs)
        size = (math.prod(self._normalized_shape),)
        self.weight = self.create_parameter(size, attr=weight_attr, default_initializer=Constant(1.0),
                                            axis_names=(axes.NORM,), rngs=rngs)
        self.bias = self.create_parameter(size, attr=bias_attr, is_bias=True, axis_names=(axes.NORM,), rngs=rngs)

    def forward(self, input):  # noqa: A002
        shape = self._normalized_shape
        return F.layer_norm(input, list(shape), weight=_as_normalized(self.weight, shape),
                            bias=_as_normalized(self.bias, shape), epsilon=self._epsilon)

    def extra_repr(self) -> str:
        return f"normalized_shape={list(self._normalized_shape)}, epsilon={self._epsilon}"


class RMSNorm(Layer):
    """Root-mean-square normalization over the trailing dims (pdx extension; no bias).

    `y = x / sqrt(mean(x**2) + epsilon) * weight`, as in LLaMA-style models;
    `weight` is flat (`[prod(normalized_shape)]`) like LayerNorm's.

    Args:
      normalized_shape: int or list of ints: the trailing dims to normalize.
      epsilon: added to the mean square.
      weight_attr: None, a `ParamAttr` or an initializer for `weight` (init 1); False: no weight.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.RMSNorm(4)(jnp.ones((2, 4))).shape
      (2, 4)
    """

    def __init__(self, normalized_shape, epsilon=1e-06, weight_attr=None, *, dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        self._normalized_shape = _normalized_shape(normalized_shape, "RMSNorm")
        self._epsilon = epsilon
        size = (math.prod(self._normalized_shape),)
        self.weight = self.create_parameter(size, attr=weight_attr, default_initializer=Constant(1.0),
                                            axis_names=(axes.NORM,), rngs=as_rngs(rngs))

    def forward(self, input):  # noqa: A002
        shape = self._normalized_shape
        out, _ = F.rms_norm(input, list(shape), weight=_as_normalized(self.weight, shape), eps=self._epsilon)
        return out

    def extra_repr(self) -> str:
        return f"normalized_shape={list(self._normalized_shape)}, epsilon={self._epsilon}"


class GroupNorm(Layer):
    """Normalize over groups of channels (Paddle's `nn.GroupNorm`).

    Args:
      num_groups: number of channel groups; must divide num_channels.
      num_channels: channels C.
      epsilon: added to the variance.
      weight_attr: attribute of `weight` (init 1); False: no weight.
      bias_attr: attribute of `bias` (init 0); False: no bias.
      data_format: 'NCL', 'NCHW', 'NCDHW' or the channel-last 'NLC', 'NHWC', 'NDHWC'.
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.GroupNorm(2, 4)(jnp.ones((2, 4, 3, 3))).shape
      (2, 4, 3, 3)
    """

    _FORMATS = ("NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")

    def __init__(self, num_groups, num_channels, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        num_groups = _channels(num_groups, layer="GroupNorm", name="num_groups")
        num_channels = _channels(num_channels, layer="GroupNorm", name="num_channels")
        if num_channels % num_groups:
            raise layer_error("GroupNorm", f"num_channels={num_channels} must be divisible by num_groups={num_groups}")
        if data_format not in self._FORMATS:
            raise layer_error("GroupNorm", f"data_format={data_format!r} is not supported; use one of {list(self._FORMATS)}")
        self._num_groups = num_groups
        self._num_channels = num_channels
        self._epsilon = epsilon
        self._data_format = data_format
        rngs = as_rngs(rngs)
        self.weight = self.create_parameter((num_channels,), attr=weight_attr, default_initializer=Constant(1.0),
                                            axis_names=(axes.NORM,), rngs=rngs)
        self.bias = self.create_parameter((num_channels,), attr=bias_attr, is_bias=True,
                                          axis_names=(axes.NORM,), rngs=rngs)

    def forward(self, input):  # noqa: A002
        return F.group_norm(input, self._num_groups, epsilon=self._epsilon, weight=value_of(self.weight),
                            bias=value_of(self.bias), data_format=self._data_format)

    def extra_repr(self) -> str:
        return f"num_groups={self._num_groups}, num_channels={self._num_channels}, epsilon={self._epsilon}"


class _InstanceNormBase(Layer):
    """Per-sample, per-channel normalization; parameters are `scale` and `bias` (Paddle's names)."""

    _ranks: tuple[int, ...] = (4,)

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format="NCHW", name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        layer = type(self).__name__
        num_features = _channels(num_features, layer=layer, name="num_features")
        if (weight_attr is False) != (bias_attr is False):
            raise layer_error(layer, "weight_attr and bias_attr must be False together (Paddle's rule); "
                                     f"got weight_attr={weight_attr!r}, bias_attr={bias_attr!r}")
        self._num_features = num_features
        self._epsilon = epsilon
        self._momentum = momentum
        self._data_format = data_format
        rngs = as_rngs(rngs)
        self.scale = self.create_parameter((num_features,), attr=weight_attr, default_initializer=Constant(1.0),
                                           axis_names=(axes.NORM,), rngs=rngs)
        self.bias = self.create_parameter((num_features,), attr=bias_attr, is_bias=True,
                                          axis_names=(axes.NORM,), rngs=rngs)

    def forward(self, input):  # noqa: A002
        x = _check_rank(type(self).__name__, input, self._ranks)
        return F.instance_norm(x, weight=value_of(self.scale), bias=value_of(self.bias), momentum=self._momentum,
                               eps=self._epsilon, data_format=self._data_format)

    def extra_repr(self) -> str:
        return f"num_features={self._num_features}, epsilon={self._epsilon}"


_IN_ARGS = """
    Args:
      num_features: channels C.
      epsilon: added to the variance.
      momentum: accepted for compatibility (instance norm keeps no running statistics).
      weight_attr: attribute of `scale` (init 1); False (with bias_attr=False): no affine.
      bias_attr: attribute of `bias` (init 0).
      data_format: channel-first layout name.
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs.
"""


class InstanceNorm1D(_InstanceNormBase):
    __doc__ = f"""Instance normalization over [N, C, L] inputs (Paddle's `nn.InstanceNorm1D`).
{_IN_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.InstanceNorm1D(2)(jnp.ones((1, 2, 5))).shape
      (1, 2, 5)
    """
    _ranks = (2, 3)

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format="NCL", name=None, *, dtype=None, rngs=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format, name,
                         dtype=dtype, rngs=rngs)


class InstanceNorm2D(_InstanceNormBase):
    __doc__ = f"""Instance normalization over [N, C, H, W] inputs (Paddle's `nn.InstanceNorm2D`).
{_IN_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.InstanceNorm2D(3)(jnp.ones((2, 3, 4, 4))).shape
      (2, 3, 4, 4)
    """


class InstanceNorm3D(_InstanceNormBase):
    __doc__ = f"""Instance normalization over [N, C, D, H, W] inputs (Paddle's `nn.InstanceNorm3D`).
{_IN_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.InstanceNorm3D(2)(jnp.ones((1, 2, 2, 2, 2))).shape
      (1, 2, 2, 2, 2)
    """
    _ranks = (5,)

    def __init__(self, num_features, epsilon=1e-05, momentum=0.9, weight_attr=None, bias_attr=None,
                 data_format="NCDHW", name=None, *, dtype=None, rngs=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format, name,
                         dtype=dtype, rngs=rngs)
