"""Convolution layers: Conv1D/2D/3D and their transposes (Paddle's names and layouts).

Weights follow Paddle: `[out_channels, in_channels / groups, *kernel]` for a
convolution and `[in_channels, out_channels / groups, *kernel]` for a
transposed one. Default init as Paddle: Normal(0, sqrt(2 / (in_channels *
prod(kernel)))) for convolutions, XavierUniform for transposes; biases zero.
"""

from __future__ import annotations

import math

import pdx.nn.functional as F
from pdx.nn import axes
from pdx._args import is_int, ntuple
from pdx.nn._common import float_dtype, layer_error, reprlist, value_of
from pdx.nn._layer import Layer, as_rngs
from pdx.nn.initializer import Normal

__all__ = ["Conv1D", "Conv1DTranspose", "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_FORMATS = {1: ("NCL", "NLC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _static_padding(padding):
    """Lists (possibly nested) become tuples so the layer's static config stays hashable."""
    if isinstance(padding, (list, tuple)):
        return tuple(_static_padding(p) for p in padding)
    return padding


def _call_padding(padding):
    """Back to Paddle's list form for the functional call."""
    if isinstance(padding, tuple):
        return [_call_padding(p) for p in padding]
    return padding


class _ConvNd(Layer):
    """Shared constructor, state and repr of all convolution layers."""

    _dims = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                 padding_mode, output_padding, weight_attr, bias_attr, data_format, dtype, rngs):
        super().__init__(dtype=float_dtype(dtype))
        layer, n = type(self).__name__, self._dims
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            if not is_int(value) or value <= 0:
                raise layer_error(layer, f"`{name}` must be a positive int; got {name}={value!r}")
        if in_channels % groups or out_channels % groups:
            raise layer_error(layer, f"in_channels={in_channels} and out_channels={out_channels} must both be "
                                     f"divisible by groups={groups}")
        if data_format not in _FORMATS[n]:
            raise layer_error(layer, f"data_format={data_format!r} is not supported; use one of {list(_FORMATS[n])}")
        if padding_mode not in _PADDING_MODES:
            raise layer_error(layer, f"padding_mode={padding_mode!r} is not supported; use one of {list(_PADDING_MODES)}")
        if padding_mode != "zeros" and not is_int(padding):
            raise layer_error(layer, f"padding_mode={padding_mode!r} needs an int padding; got padding={padding!r}")
        if weight_attr is False:
            raise layer_error(layer, "weight_attr=False is not allowed: a convolution needs its weight")
        self._in_channels = int(in_channels)
        self._out_channels = int(out_channels)
        self._kernel_size = ntuple(kernel_size, n, op=f"nn.{layer}", name="kernel_size", minimum=1)
        self._stride = ntuple(stride, n, op=f"nn.{layer}", name="stride", minimum=1)
        self._dilation = ntuple(dilation, n, op=f"nn.{layer}", name="dilation", minimum=1)
        self._padding = _static_padding(padding)
        self._padding_mode = padding_mode
        self.output_padding = _static_padding(output_padding)
        self._groups = int(groups)
        self._data_format = data_format
        rngs = as_rngs(rngs)
        if self._transposed:
            shape = (self._in_channels, self._out_channels // groups, *self._kernel_size)
            names = (axes.CONV_IN, axes.CONV_OUT) + (None,) * n
            init = None  # Paddle's default: XavierUniform
        else:
            shape = (self._out_channels, self._in_channels // groups, *self._kernel_size)
            names = (axes.CONV_OUT, axes.CONV_IN) + (None,) * n
            init = Normal(0.0, math.sqrt(2.0 / (self._in_channels * math.prod(self._kernel_size))))
        self.weight = self.create_parameter(shape, attr=weight_attr, default_initializer=init,
                                            axis_names=names, rngs=rngs)
        self.bias = self.create_parameter((self._out_channels,), attr=bias_attr, is_bias=True,
                                          axis_names=(axes.CONV_OUT,), rngs=rngs)

    def _padded_input(self, x):
        """Non-zero padding modes pad the input explicitly, then convolve unpadded (as Paddle)."""
        if self._padding_mode == "zeros":
            return x, _call_padding(self._padding)
        pads = [self._padding] * (2 * self._dims)
        return F.pad(x, pads, mode=self._padding_mode, data_format=self._data_format), 0

    def extra_repr(self) -> str:
        out = f"{self._in_channels}, {self._out_channels}, kernel_size={list(self._kernel_size)}"
        if self._stride != (1,) * self._dims:
            out += f", stride={list(self._stride)}"
        if self._padding != 0:
            out += f", padding={reprlist(_call_padding(self._padding))}"
        if self._padding_mode != "zeros":
            out += f", padding_mode={self._padding_mode}"
        if self.output_padding != 0:
            out += f", output_padding={reprlist(_call_padding(self.output_padding))}"
        if self._dilation != (1,) * self._dims:
            out += f", dilation={list(self._dilation)}"
        if self._groups != 1:
            out += f", groups={self._groups}"
        return out + f", data_format={self._data_format}"


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCHW", *,
                 dtype=None, rngs=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         padding_mode, 0, weight_attr, bias_attr, data_format, dtype, rngs)

    def forward(self, x):
        x, padding = self._padded_input(x)
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._dims - 1]
        return conv(x, value_of(self.weight), bias=value_of(self.bias), stride=list(self._stride),
                    padding=padding, dilation=list(self._dilation), groups=self._groups,
                    data_format=self._data_format)


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 dilation=1, groups=1, weight_attr=None, bias_attr=None, data_format="NCHW", *,
                 dtype=None, rngs=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         "zeros", output_padding, weight_attr, bias_attr, data_format, dtype, rngs)

    def forward(self, x, output_size=None):
        conv = (F.conv1d_transpose, F.conv2d_transpose, F.conv3d_transpose)[self._dims - 1]
        output_padding = _call_padding(self.output_padding) if output_size is None else 0
        return conv(x, value_of(self.weight), bias=value_of(self.bias), stride=list(self._stride),
                    padding=_call_padding(self._padding), output_padding=output_padding,
                    dilation=list(self._dilation), groups=self._groups, output_size=output_size,
                    data_format=self._data_format)


_CONV_ARGS = """
    Args:
      in_channels: input channels.
      out_channels: output channels (filters).
      kernel_size: int or one int per spatial dim.
      stride: int or one int per spatial dim.
      padding: int, ints per spatial dim, (before, after) per dim, 'SAME' or 'VALID' (Paddle's forms).
      dilation: int or one int per spatial dim.
      groups: channel groups; in_channels and out_channels must divide by it.
      padding_mode: 'zeros', 'reflect', 'replicate' or 'circular' (non-zero modes need an int padding).
      weight_attr: None, a `ParamAttr` or an initializer for `weight`.
      bias_attr: as weight_attr for `bias`; False means no bias.
      data_format: channel-first (default) or channel-last layout name.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs (else the global generator).
"""

_CONVT_ARGS = """
    Args:
      in_channels: input channels.
      out_channels: output channels.
      kernel_size: int or one int per spatial dim.
      stride: int or one int per spatial dim.
      padding: int, ints per spatial dim, (before, after) per dim, 'SAME' or 'VALID'.
      output_padding: extra size added to one side of each output dim.
      dilation: int or one int per spatial dim.
      groups: channel groups.
      weight_attr: None, a `ParamAttr` or an initializer for `weight`.
      bias_attr: as weight_attr for `bias`; False means no bias.
      data_format: channel-first (default) or channel-last layout name.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs (else the global generator).

    `forward(x, output_size=None)`: with `output_size`, output_padding is inferred.
"""


class Conv1D(_Conv):
    __doc__ = f"""1-D convolution over [N, C, L] (or NLC) inputs (Paddle's `nn.Conv1D`).
{_CONV_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Conv1D(3, 4, 3, padding=1)(jnp.ones((2, 3, 8))).shape
      (2, 4, 8)
    """
    _dims = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCL", *,
                 dtype=None, rngs=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         padding_mode, weight_attr, bias_attr, data_format, dtype=dtype, rngs=rngs)


class Conv2D(_Conv):
    __doc__ = f"""2-D convolution over [N, C, H, W] (or NHWC) inputs (Paddle's `nn.Conv2D`).
{_CONV_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> conv = pdx.nn.Conv2D(3, 8, 3, padding=1)
      >>> conv(jnp.ones((2, 3, 5, 5))).shape, conv.weight.shape
      ((2, 8, 5, 5), (8, 3, 3, 3))
    """
    _dims = 2


class Conv3D(_Conv):
    __doc__ = f"""3-D convolution over [N, C, D, H, W] (or NDHWC) inputs (Paddle's `nn.Conv3D`).
{_CONV_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Conv3D(2, 4, 3)(jnp.ones((1, 2, 4, 4, 4))).shape
      (1, 4, 2, 2, 2)
    """
    _dims = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCDHW", *,
                 dtype=None, rngs=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         padding_mode, weight_attr, bias_attr, data_format, dtype=dtype, rngs=rngs)


class Conv1DTranspose(_ConvTranspose):
    __doc__ = f"""1-D transposed convolution (Paddle's `nn.Conv1DTranspose`).
{_CONVT_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Conv1DTranspose(3, 2, 3, stride=2)(jnp.ones((1, 3, 4))).shape
      (1, 2, 9)
    """
    _dims = 1

    # Paddle's Conv1DTranspose puts groups before dilation (unlike the 2-D/3-D ones).
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, dilation=1, weight_attr=None, bias_attr=None, data_format="NCL", *,
                 dtype=None, rngs=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, dilation,
                         groups, weight_attr, bias_attr, data_format, dtype=dtype, rngs=rngs)


class Conv2DTranspose(_ConvTranspose):
    __doc__ = f"""2-D transposed convolution (Paddle's `nn.Conv2DTranspose`).
{_CONVT_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Conv2DTranspose(3, 2, 2, stride=2)(jnp.ones((1, 3, 4, 4))).shape
      (1, 2, 8, 8)
    """
    _dims = 2


class Conv3DTranspose(_ConvTranspose):
    __doc__ = f"""3-D transposed convolution (Paddle's `nn.Conv3DTranspose`).
{_CONVT_ARGS}
    Example:
      >>> import pdx, jax.numpy as jnp
      >>> pdx.nn.Conv3DTranspose(2, 2, 2, stride=2)(jnp.ones((1, 2, 2, 2, 2))).shape
      (1, 2, 4, 4, 4)
    """
    _dims = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 dilation=1, groups=1, weight_attr=None, bias_attr=None, data_format="NCDHW", *,
                 dtype=None, rngs=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, dilation,
                         groups, weight_attr, bias_attr, data_format, dtype=dtype, rngs=rngs)
