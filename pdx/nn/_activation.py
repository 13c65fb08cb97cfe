"""Activation layers: thin stateless wrappers over `pdx.nn.functional` (Paddle's names).

Each layer stores its hyper-parameters (static, part of the graph definition)
and calls the functional op; PReLU holds a parameter and RReLU an RNG state.
"""

from __future__ import annotations

import pdx.nn.functional as F
from pdx._args import is_int
from pdx.nn._common import float_dtype, init_rng_state, layer_error, next_rng, value_of
from pdx.nn._layer import Layer, as_rngs
from pdx.nn.initializer import Constant

__all__ = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "LogSoftmax", "Maxout", "Mish", "PReLU", "RReLU", "ReLU", "ReLU6", "SELU", "Sigmoid",
           "Silu", "Softmax", "Softmax2D", "Softplus", "Softshrink", "Softsign", "Swish", "Tanh", "Tanhshrink",
           "ThresholdedReLU"]


class _Activation(Layer):
    """Calls `F.<_fn>(x, *hyper-parameters)`; the same names print in repr.

    Like every layer, each takes a keyword-only `rngs=` (unused: no parameters).
    """

    _fn = ""
    _params: tuple[str, ...] = ()

    def __init__(self, name=None, **params):
        super().__init__()
        for key, value in params.items():
            setattr(self, "_" + key, value)
        self._name = name

    def forward(self, x):
        return getattr(F, self._fn)(x, *(getattr(self, "_" + p) for p in self._params))

    def extra_repr(self) -> str:
        parts = [f"{p}={getattr(self, '_' + p)}" for p in self._params]
        if self._name:
            parts.append(f"name={self._name}")
        return ", ".join(parts)


class ReLU(_Activation):
    """max(x, 0) (Paddle's `nn.ReLU`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ReLU()(jnp.array([-1.0, 2.0])).tolist()
      [0.0, 2.0]
    """

    _fn = "relu"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class ReLU6(_Activation):
    """min(max(x, 0), 6) (Paddle's `nn.ReLU6`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ReLU6()(jnp.array([-1.0, 7.0])).tolist()
      [0.0, 6.0]
    """

    _fn = "relu6"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class LeakyReLU(_Activation):
    """x if x >= 0 else negative_slope * x (Paddle's `nn.LeakyReLU`).

    Args:
      negative_slope: slope for negative inputs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.LeakyReLU(0.5)(jnp.array([-1.0, 2.0])).tolist()
      [-0.5, 2.0]
    """

    _fn, _params = "leaky_relu", ("negative_slope",)

    def __init__(self, negative_slope=0.01, name=None, *, rngs=None):
        super().__init__(name, negative_slope=negative_slope)


class ELU(_Activation):
    """x if x > 0 else alpha * (exp(x) - 1) (Paddle's `nn.ELU`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ELU()(jnp.array([0.0, 1.0])).tolist()
      [0.0, 1.0]
    """

    _fn, _params = "elu", ("alpha",)

    def __init__(self, alpha=1.0, name=None, *, rngs=None):
        super().__init__(name, alpha=alpha)


class CELU(_Activation):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (Paddle's `nn.CELU`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.CELU()(jnp.array([0.0, 1.0])).tolist()
      [0.0, 1.0]
    """

    _fn, _params = "celu", ("alpha",)

    def __init__(self, alpha=1.0, name=None, *, rngs=None):
        super().__init__(name, alpha=alpha)


class SELU(_Activation):
    """scale * (x if x > 0 else alpha * (exp(x) - 1)) (Paddle's `nn.SELU`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.SELU()(jnp.array([0.0])).tolist()
      [0.0]
    """

    _fn, _params = "selu", ("scale", "alpha")

    def __init__(self, scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717,
                 name=None, *, rngs=None):
        super().__init__(name, scale=scale, alpha=alpha)


class GELU(_Activation):
    """Gaussian error linear unit (Paddle's `nn.GELU`).

    Args:
      approximate: False/'none' (erf form) or True/'tanh' (tanh approximation).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.GELU()(jnp.array([0.0])).tolist()
      [0.0]
    """

    _fn, _params = "gelu", ("approximate",)

    def __init__(self, approximate=False, name=None, *, rngs=None):
        super().__init__(name, approximate=approximate)


class Sigmoid(_Activation):
    """1 / (1 + exp(-x)) (Paddle's `nn.Sigmoid`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Sigmoid()(jnp.array([0.0])).tolist()
      [0.5]
    """

    _fn = "sigmoid"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class Silu(_Activation):
    """x * sigmoid(x) (Paddle's `nn.Silu`); `inplace` is ignored.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Silu()(jnp.array([0.0])).tolist()
      [0.0]
    """

    _fn = "silu"

    def __init__(self, inplace=False, name=None, *, rngs=None):
        super().__init__(name)
        self._inplace = inplace

    def extra_repr(self) -> str:
        return f"inplace={self._inplace}" + (f", name={self._name}" if self._name else "")


class Swish(_Activation):
    """x * sigmoid(x) (Paddle's `nn.Swish`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Swish()(jnp.array([0.0])).tolist()
      [0.0]
    """

    _fn = "swish"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class Tanh(_Activation):
    """Hyperbolic tangent (Paddle's `nn.Tanh`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Tanh()(jnp.array([0.0])).tolist()
      [0.0]
    """

    _fn = "tanh"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class Hardswish(_Activation):
    """x * relu6(x + 3) / 6 (Paddle's `nn.Hardswish`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Hardswish()(jnp.array([0.0, 4.0])).tolist()
      [0.0, 4.0]
    """

    _fn = "hardswish"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class Hardsigmoid(_Activation):
    """clip(x / 6 + 0.5, 0, 1) (Paddle's `nn.Hardsigmoid`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Hardsigmoid()(jnp.array([0.0])).tolist()
      [0.5]
    """

    _fn = "hardsigmoid"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class Hardtanh(_Activation):
    """clip(x, min, max) (Paddle's `nn.Hardtanh`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Hardtanh()(jnp.array([-2.0, 0.5])).tolist()
      [-1.0, 0.5]
    """

    _fn, _params = "hardtanh", ("min", "max")

    def __init__(self, min=-1.0, max=1.0, name=None, *, rngs=None):  # noqa: A002  (Paddle's argument names)
        super().__init__(name, min=min, max=max)


class Hardshrink(_Activation):
    """x where |x| > threshold, else 0 (Paddle's `nn.Hardshrink`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Hardshrink()(jnp.array([0.2, 1.0])).tolist()
      [0.0, 1.0]
    """

    _fn, _params = "hardshrink", ("threshold",)

    def __init__(self, threshold=0.5, name=None, *, rngs=None):
        super().__init__(name, threshold=threshold)


class Softshrink(_Activation):
    """Shrink x towards 0 by `threshold` (Paddle's `nn.Softshrink`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Softshrink()(jnp.array([0.2, 1.0])).tolist()
      [0.0, 0.5]
    """

    _fn, _params = "softshrink", ("threshold",)

    def __init__(self, threshold=0.5, name=None, *, rngs=None):
        super().__init__(name, threshold=threshold)


class ThresholdedReLU(_Activation):
    """x where x > threshold, else `value` (Paddle's `nn.ThresholdedReLU`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.ThresholdedReLU()(jnp.array([0.5, 2.0])).tolist()
      [0.0, 2.0]
    """

    _fn, _params = "thresholded_relu", ("threshold", "value")

    def __init__(self, threshold=1.0, value=0.0, name=None, *, rngs=None):
        super().__init__(name, threshold=threshold, value=value)


class Softsign(_Activation):
    """x / (1 + |x|) (Paddle's `nn.Softsign`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Softsign()(jnp.array([1.0])).tolist()
      [0.5]
    """

    _fn = "softsign"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class Tanhshrink(_Activation):
    """x - tanh(x) (Paddle's `nn.Tanhshrink`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Tanhshrink()(jnp.array([0.0])).tolist()
      [0.0]
    """

    _fn = "tanhshrink"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class LogSigmoid(_Activation):
    """log(sigmoid(x)) (Paddle's `nn.LogSigmoid`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> round(pdx.nn.LogSigmoid()(jnp.array([0.0])).tolist()[0], 4)
      -0.6931
    """

    _fn = "log_sigmoid"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class Mish(_Activation):
    """x * tanh(softplus(x)) (Paddle's `nn.Mish`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Mish()(jnp.array([0.0])).tolist()
      [0.0]
    """

    _fn = "mish"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)


class Softplus(_Activation):
    """log(1 + exp(beta * x)) / beta, linear above `threshold` (Paddle's `nn.Softplus`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Softplus()(jnp.array([30.0])).tolist()
      [30.0]
    """

    _fn, _params = "softplus", ("beta", "threshold")

    def __init__(self, beta=1, threshold=20, name=None, *, rngs=None):
        super().__init__(name, beta=beta, threshold=threshold)


class Softmax(_Activation):
    """Softmax along `axis` (Paddle's `nn.Softmax`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Softmax()(jnp.array([0.0, 0.0])).tolist()
      [0.5, 0.5]
    """

    _fn, _params = "softmax", ("axis",)

    def __init__(self, axis=-1, name=None, *, rngs=None):
        super().__init__(name, axis=axis)


class LogSoftmax(_Activation):
    """log(softmax(x)) along `axis` (Paddle's `nn.LogSoftmax`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> round(pdx.nn.LogSoftmax()(jnp.array([0.0, 0.0])).tolist()[0], 4)
      -0.6931
    """

    _fn, _params = "log_softmax", ("axis",)

    def __init__(self, axis=-1, name=None, *, rngs=None):
        super().__init__(name, axis=axis)


class Softmax2D(_Activation):
    """Softmax over the channel dim of a [N, C, H, W] or [C, H, W] input (Paddle's `nn.Softmax2D`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Softmax2D()(jnp.zeros((1, 2, 1, 1))).ravel().tolist()
      [0.5, 0.5]
    """

    _fn = "softmax"

    def __init__(self, name=None, *, rngs=None):
        super().__init__(name)

    def forward(self, x):
        ndim = getattr(x, "ndim", None)
        if ndim not in (3, 4):
            raise layer_error("Softmax2D", f"expects a 3-D or 4-D input; got shape {getattr(x, 'shape', None)}")
        return F.softmax(x, axis=-3)


class GLU(_Activation):
    """Gated linear unit: split in halves a, b along `axis`, return a * sigmoid(b) (Paddle's `nn.GLU`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.GLU()(jnp.ones((2, 4))).shape
      (2, 2)
    """

    _fn, _params = "glu", ("axis",)

    def __init__(self, axis=-1, name=None, *, rngs=None):
        super().__init__(name, axis=axis)


class Maxout(_Activation):
    """Max over `groups` consecutive channels (Paddle's `nn.Maxout`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Maxout(2)(jnp.ones((1, 4, 2, 2))).shape
      (1, 2, 2, 2)
    """

    _fn, _params = "maxout", ("groups", "axis")

    def __init__(self, groups, axis=1, name=None, *, rngs=None):
        if not is_int(groups) or groups <= 0:
            raise layer_error("Maxout", f"groups must be a positive int; got groups={groups!r}")
        super().__init__(name, groups=groups, axis=axis)


class PReLU(Layer):
    """max(0, x) + weight * min(0, x) with a learned slope (Paddle's `nn.PReLU`).

    The parameter is named `_weight` (Paddle's name), shape `[num_parameters]`.

    Args:
      num_parameters: 1 (one shared slope) or the number of channels.
      init: initial slope.
      weight_attr: None, a `ParamAttr` or an initializer.
      data_format: where the channels are for a per-channel slope ('NCHW'-style or 'NHWC'-style).
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.PReLU()(jnp.array([-2.0, 1.0])).tolist()
      [-0.5, 1.0]
    """

    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, data_format="NCHW", name=None, *,
                 dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        if not is_int(num_parameters) or num_parameters <= 0:
            raise layer_error("PReLU", f"num_parameters must be a positive int; got num_parameters={num_parameters!r}")
        self._num_parameters = int(num_parameters)
        self._init = init
        self._data_format = data_format
        self._name = name
        self._weight = self.create_parameter((self._num_parameters,), attr=weight_attr,
                                             default_initializer=Constant(init), axis_names=(None,),
                                             rngs=as_rngs(rngs))

    def forward(self, x):
        return F.prelu(x, value_of(self._weight), data_format=self._data_format)

    def extra_repr(self) -> str:
        name = f", name={self._name}" if self._name else ""
        return (f"num_parameters={self._num_parameters}, data_format={self._data_format}, init={self._init}, "
                f"dtype={self._dtype}{name}")


class RReLU(Layer):
    """Randomized leaky ReLU (Paddle's `nn.RReLU`): a random slope in [lower, upper]
    per element in training, the mean slope in eval.

    Args:
      lower: lower bound of the slope.
      upper: upper bound of the slope.
      name: ignored.
      rngs: keyword-only seed of the layer's own key (see `pdx.nn.Dropout`).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.RReLU().eval()(jnp.array([1.0])).tolist()
      [1.0]
    """

    def __init__(self, lower=1.0 / 8.0, upper=1.0 / 3.0, name=None, *, rngs=None):
        super().__init__()
        if not 0 <= lower <= upper <= 1:
            raise layer_error("RReLU", f"need 0 <= lower <= upper <= 1; got lower={lower}, upper={upper}")
        self._lower = lower
        self._upper = upper
        self._name = name
        self.rng = init_rng_state(as_rngs(rngs), op="RReLU")

    def forward(self, x):
        key = next_rng(self.rng) if self.training else None
        return F.rrelu(x, self._lower, self._upper, training=self.training, key=key)

    def extra_repr(self) -> str:
        name = f", name={self._name}" if self._name else ""
        return f"lower={self._lower}, upper={self._upper}{name}"
