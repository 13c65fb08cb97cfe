"""The two forms of a quantized layer.

Quanted* (after `PTQ/QAT.quantize`): the float layer's own weight and bias,
plus a quanter or observer on its input activations and one on its weight.
With observers (PTQ) forward is the float computation while they record
ranges; with fake quanters (QAT) forward rounds to the integer grid with a
straight-through gradient.

Quantized* (after `convert`): weights stored as int8 Buffers with their
steps, inputs quantized to int8, int8 x int8 -> int32 dots and convolutions,
one float rescale at the end. With no activation quanter the layer is
weight-only: the int8 (or group-wise int4-range) weight is dequantized
before a float dot.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

import pdx.nn.functional as F
from pdx import nn
from pdx.nn import Buffer, Layer
from pdx.quantization._base import QuantParams, _along, qmax

__all__ = ["QuantedConv", "QuantedEmbedding", "QuantedLinear", "QuantizedConv", "QuantizedEmbedding",
           "QuantizedLinear", "default_mapping"]

_CONVS = (nn.Conv1D, nn.Conv2D, nn.Conv3D, nn.Conv1DTranspose, nn.Conv2DTranspose, nn.Conv3DTranspose)
_TRANSPOSED = (nn.Conv1DTranspose, nn.Conv2DTranspose, nn.Conv3DTranspose)

_NOT_CALIBRATED = (
    "convert() before calibration: the activation {kind} of layer {layer} has seen no data. "
    "PTQ: run calibration batches through the model PTQ.quantize returned, then convert. "
    "QAT: train (training mode) the model QAT.quantize returned for at least one step, then convert."
)


def _make(factory, layer):
    return None if factory is None else factory._instance(layer)


def _value(var):
    return None if var is None else var.get_value()


def quantize_array(x, params: QuantParams, axis_ndim=None):
    """Float -> int8 codes with `params` (step per channel along params.axis)."""
    ndim = x.ndim if axis_ndim is None else axis_ndim
    step = _along(params.step, ndim, params.axis)
    q = jnp.round(x / step)
    if params.zero_point is not None:
        q = q + params.zero_point
        lo, hi = -2 ** (params.bits - 1), qmax(params.bits)
    else:
        lo, hi = -qmax(params.bits), qmax(params.bits)
    return jnp.clip(q, lo, hi).astype(jnp.int8)


def _weight_params(quanter, weight):
    """The weight quanter's params; a weight observer that never ran looks at the weight now."""
    if not quanter.calibrated():
        quanter(weight)
    return quanter.quant_params()


def _activation_params(quanter, name):
    if not quanter.calibrated():
        raise RuntimeError(_NOT_CALIBRATED.format(kind=type(quanter).__name__, layer=name))
    return quanter.quant_params()


# -- before convert: float layers with quanters ------------------------------------------------


class QuantedLinear(Layer):
    """Linear with quanters on its input and weight (Paddle's `nn.quant.qat.QuantedLinear`)."""

    def __init__(self, layer, q_config):
        super().__init__()
        self.weight, self.bias = layer.weight, layer.bias
        self.weight_quanter = _make(q_config.weight, layer)
        self.activation_quanter = _make(q_config.activation, layer)

    def forward(self, input):  # noqa: A002
        x = input if self.activation_quanter is None else self.activation_quanter(input)
        w = _value(self.weight)
        w = w if self.weight_quanter is None else self.weight_quanter(w)
        return F.linear(x, w, _value(self.bias))


@dataclasses.dataclass(frozen=True)
class _ConvSpec:
    """A convolution layer's static configuration, read once from the float layer."""

    dims: int
    transposed: bool
    stride: tuple
    padding: object
    padding_mode: str
    output_padding: object
    dilation: tuple
    groups: int
    data_format: str

    @classmethod
    def of(cls, layer) -> "_ConvSpec":
        return cls(layer._dims, isinstance(layer, _TRANSPOSED), tuple(layer._stride), layer._padding,
                   layer._padding_mode, layer.output_padding, tuple(layer._dilation), layer._groups,
                   layer._data_format)

    @property
    def channel_last(self) -> bool:
        return self.data_format[-1] == "C"

    def pad_input(self, x):
        """Non-zero padding modes pad the input first (as the float layer does); returns (x, padding)."""
        if self.padding_mode == "zeros":
            return x, _as_list(self.padding)
        return F.pad(x, [self.padding] * (2 * self.dims), mode=self.padding_mode, data_format=self.data_format), 0

    def __call__(self, x, weight, bias):
        x, padding = self.pad_input(x)
        if self.transposed:
            conv = (F.conv1d_transpose, F.conv2d_transpose, F.conv3d_transpose)[self.dims - 1]
            return conv(x, weight, bias=bias, stride=list(self.stride), padding=padding,
                        output_padding=_as_list(self.output_padding), dilation=list(self.dilation),
                        groups=self.groups, data_format=self.data_format)
        conv = (F.conv1d, F.conv2d, F.conv3d)[self.dims - 1]
        return conv(x, weight, bias=bias, stride=list(self.stride), padding=padding,
                    dilation=list(self.dilation), groups=self.groups, data_format=self.data_format)


def _as_list(padding):
    if isinstance(padding, tuple):
        return [_as_list(p) for p in padding]
    return padding


class QuantedConv(Layer):
    """Conv1D/2D/3D or a transposed conv (any groups) with quanters on its input and weight."""

    def __init__(self, layer, q_config):
        super().__init__()
        self._spec = _ConvSpec.of(layer)
        self.weight, self.bias = layer.weight, layer.bias
        self.weight_quanter = _make(q_config.weight, layer)
        self.activation_quanter = _make(q_config.activation, layer)

    def forward(self, x):
        x = x if self.activation_quanter is None else self.activation_quanter(x)
        w = _value(self.weight)
        w = w if self.weight_quanter is None else self.weight_quanter(w)
        return self._spec(x, w, _value(self.bias))


class QuantedEmbedding(Layer):
    """Embedding with a weight quanter (ids are not quantized)."""

    def __init__(self, layer, q_config):
        super().__init__()
        self.weight = layer.weight
        self._padding_idx = None if layer._padding_idx is None else layer._row
        self.weight_quanter = _make(q_config.weight, layer)

    def forward(self, x):
        w = _value(self.weight)
        w = w if self.weight_quanter is None else self.weight_quanter(w)
        return F.embedding(x, w, padding_idx=self._padding_idx)


def default_mapping() -> dict:
    """Float layer type -> quantized layer type used by PTQ/QAT."""
    return {nn.Linear: QuantedLinear, nn.Embedding: QuantedEmbedding, **{c: QuantedConv for c in _CONVS}}


# -- after convert: integer layers ---------------------------------------------------------------


class _Integer(Layer):
    """Shared storage: int8 weight, its step(s), the input's step and zero point, a float bias."""

    def __init__(self, quanted, name: str):
        super().__init__()
        weight = _value(quanted.weight)
        if quanted.weight_quanter is None:
            raise ValueError(f"layer {name!r} has no weight quanter: nothing to store as integers "
                             f"(give the QuantConfig a weight= quanter for it)")
        wp = _weight_params(quanted.weight_quanter, weight)
        self._w_axis, self._w_bits = wp.axis, wp.bits
        self._grouped = jnp.ndim(wp.step) == 2
        if self._grouped:
            g = weight.shape[0] // wp.step.shape[0]
            codes = jnp.clip(jnp.round(weight.reshape(wp.step.shape[0], g, -1) / wp.step[:, None, :]),
                             -qmax(wp.bits), qmax(wp.bits)).astype(jnp.int8).reshape(weight.shape)
        else:
            codes = quantize_array(weight, wp)
        self.weight = Buffer(codes)
        self.weight_scale = Buffer(jnp.asarray(wp.step, jnp.float32))
        bias = getattr(quanted, "bias", None)
        self.bias = None if bias is None else Buffer(_value(bias))
        aq = getattr(quanted, "activation_quanter", None)
        self._integer = aq is not None
        self._asymmetric = False
        if self._integer:
            if self._grouped:
                raise ValueError(f"layer {name!r}: group-wise weights are for weight-only quantization "
                                 f"(activation=None in the QuantConfig)")
            ap = _activation_params(aq, name)
            self._a_bits = ap.bits
            self.activation_scale = Buffer(jnp.asarray(ap.step, jnp.float32))
            self._asymmetric = ap.zero_point is not None
            if self._asymmetric:
                self.activation_zero_point = Buffer(jnp.asarray(ap.zero_point, jnp.int32))

    def dequantized_weight(self, dtype=jnp.float32):
        """The float weight the integer one stands for."""
        w, step = self.weight.get_value().astype(dtype), self.weight_scale.get_value().astype(dtype)
        if self._grouped:
            return (w.reshape(step.shape[0], -1, w.shape[-1]) * step[:, None, :]).reshape(w.shape)
        return w * _along(step, w.ndim, self._w_axis)

    def _input_codes(self, x):
        zp = self.activation_zero_point.get_value() if self._asymmetric else None
        return quantize_array(x, QuantParams(self.activation_scale.get_value(), zp, None, self._a_bits))


class QuantizedLinear(_Integer):
    """Linear as int8 x int8 -> int32 `dot_general` and one rescale (weight-only when no activation quanter)."""

    def __init__(self, quanted, name: str = ""):
        super().__init__(quanted, name)
        if self._asymmetric:  # sum_k (x_k - z) w_k = sum_k x_k w_k - z * sum_k w_k
            self.weight_colsum = Buffer(jnp.sum(self.weight.get_value().astype(jnp.int32), axis=0))

    def forward(self, input):  # noqa: A002
        x = jnp.asarray(input)
        if not self._integer:
            return F.linear(x, self.dequantized_weight(x.dtype if jnp.issubdtype(x.dtype, jnp.floating)
                                                       else jnp.float32), _value(self.bias))
        codes = self._input_codes(x)
        acc = jax.lax.dot_general(codes, self.weight.get_value(), (((x.ndim - 1,), (0,)), ((), ())),
                                  preferred_element_type=jnp.int32)
        if self._asymmetric:
            acc = acc - self.activation_zero_point.get_value() * self.weight_colsum.get_value()
        out = acc.astype(jnp.float32) * (self.activation_scale.get_value() * self.weight_scale.get_value())
        return out if self.bias is None else out + self.bias.get_value()


class QuantizedConv(_Integer):
    """A convolution as an int8 x int8 -> int32 convolution and one per-channel rescale."""

    def __init__(self, quanted, name: str = ""):
        super().__init__(quanted, name)
        self._spec = quanted._spec
        if self._asymmetric:
            raise ValueError(f"layer {name!r}: asymmetric (zero-point) activations are supported for Linear; "
                             f"give convolutions a symmetric activation observer (e.g. AbsmaxObserver)")

    def _out_steps(self):
        step = self.weight_scale.get_value()
        if self._spec.transposed and jnp.ndim(step) == 1:   # [in, out/g, *k]: per (out/g), repeated per group
            step = jnp.tile(step, self._spec.groups)
        return step

    def forward(self, x):
        x = jnp.asarray(x)
        if not self._integer:
            return self._spec(x, self.dequantized_weight(x.dtype), _value(self.bias))
        spec = self._spec
        if spec.padding_mode != "zeros":  # pad the float input as the float layer does, then convolve unpadded
            x, _ = spec.pad_input(x)
            spec = dataclasses.replace(spec, padding=0, padding_mode="zeros")
        acc = spec(self._input_codes(x), self.weight.get_value(), None)
        channel_axis = acc.ndim - 1 if spec.channel_last else 1
        scale = _along(self.activation_scale.get_value() * self._out_steps(), acc.ndim, channel_axis)
        out = acc.astype(jnp.float32) * scale
        if self.bias is not None:
            out = out + _along(self.bias.get_value(), out.ndim, channel_axis)
        return out


class QuantizedEmbedding(_Integer):
    """An int8 table with one step per row (or per tensor); lookups dequantize the rows they read."""

    def __init__(self, quanted, name: str = ""):
        super().__init__(quanted, name)
        self._padding_idx = quanted._padding_idx

    def forward(self, x):
        ids = jnp.asarray(x)
        rows = jnp.take(self.weight.get_value(), ids, axis=0).astype(jnp.float32)
        step = self.weight_scale.get_value()
        out = rows * (jnp.take(step, ids, axis=0)[..., None] if jnp.ndim(step) == 1 else step)
        if self._padding_idx is not None:
            out = jnp.where((ids == self._padding_idx)[..., None], 0.0, out)
        return out


def converted_type(quanted) -> type:
    """The integer layer class a Quanted* layer converts to."""
    for source, target in ((QuantedLinear, QuantizedLinear), (QuantedConv, QuantizedConv),
                           (QuantedEmbedding, QuantizedEmbedding)):
        if isinstance(quanted, source):
            return target
    return None
