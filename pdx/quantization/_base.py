"""Quantization arithmetic and the base classes every observer and quanter builds on.

An observer watches values and proposes quantization parameters; a quanter
also fake-quantizes (quantize, then dequantize) in its forward so training
sees the rounding. Both are Layers whose statistics live in Buffers, so they
update under `pdx.jit` exactly as BatchNorm's running statistics do, and are
saved in the state dict.

Paddle's convention is kept: `scales()` returns the *threshold* (the largest
magnitude represented, e.g. the absolute maximum), and an int8 value q stands
for q * threshold / 127. `quant_params()` gives the arithmetic form the
converted layers use: (step, zero_point, axis) with real = step * (q - zero_point).
"""

from __future__ import annotations

import dataclasses
import sys

import jax
import jax.numpy as jnp

from pdx.nn import Layer

__all__ = ["BaseObserver", "BaseQuanter", "QuantParams", "QuanterFactory", "fake_quant", "qmax", "quanter"]

_TINY = 1e-8


def qmax(bits: int) -> int:
    """Largest symmetric integer of `bits` bits: 127 for 8, 7 for 4."""
    return 2 ** (bits - 1) - 1


def _along(values, ndim: int, axis):
    """Broadcast per-channel `values` against an ndim array along `axis` (None: scalar)."""
    values = jnp.asarray(values)
    if axis is None or values.ndim == 0:
        return values
    shape = [1] * ndim
    shape[axis] = -1
    return values.reshape(shape)


def fake_quant(x, threshold, bits: int = 8, axis=None):
    """Symmetric quantize-dequantize with a straight-through gradient.

    Args:
      x: values to round onto the grid.
      threshold: largest magnitude represented (scalar, or one per channel along `axis`).
      bits: integer width.
      axis: channel axis of x for per-channel thresholds.

    Returns:
      x rounded to multiples of threshold / qmax(bits), clipped to ±threshold;
      the gradient passes straight through (Paddle's STE).

    Example:
      >>> import jax.numpy as jnp
      >>> float(fake_quant(jnp.asarray(0.3), 1.0, bits=2))
      0.0
    """
    q = qmax(bits)
    t = jnp.maximum(_along(threshold, x.ndim, axis).astype(x.dtype), _TINY)
    rounded = jnp.clip(jnp.round(x / t * q), -q, q) * t / q
    return x + jax.lax.stop_gradient(rounded - x)


@dataclasses.dataclass(frozen=True)
class QuantParams:
    """How real values map to integers: real = step * (q - zero_point)."""

    step: jax.Array                 # scalar or one per channel
    zero_point: jax.Array | None    # None: symmetric
    axis: int | None                # channel axis of step, None per tensor
    bits: int


class _Quantizer(Layer):
    """Shared state of observers and quanters: bit width and how often they have seen data."""

    def __init__(self, bits: int):
        super().__init__()
        if bits not in (2, 3, 4, 5, 6, 7, 8):
            raise ValueError(f"quant_bits={bits!r}: pdx quantizes to 2..8 bits (int8 storage)")
        self._bits = int(bits)
        self.register_buffer("_count", jnp.zeros((), jnp.int32))

    def _seen(self):
        self._count.set_value(self._count.get_value() + 1)

    def calibrated(self) -> bool:
        """True once forward has observed at least one batch."""
        return int(self._count.get_value()) > 0

    def bit_length(self) -> int:
        return self._bits

    def quant_axis(self):
        """The channel axis of per-channel scales; None for one scale per tensor."""
        return None

    def scales(self):
        raise NotImplementedError

    def zero_points(self):
        return None

    def quant_params(self) -> QuantParams:
        """(step, zero_point, axis, bits) for integer arithmetic; symmetric unless overridden."""
        step = jnp.maximum(jnp.asarray(self.scales(), jnp.float32), _TINY) / qmax(self._bits)
        return QuantParams(step, None, self.quant_axis(), self._bits)


class BaseObserver(_Quantizer):
    """An observer: forward returns its input unchanged and records statistics (Paddle's BaseObserver)."""

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        self._observe(jax.lax.stop_gradient(jnp.asarray(input)))
        self._seen()
        return input

    def _observe(self, x):
        raise NotImplementedError

    def cal_thresholds(self):
        """Paddle's name: the thresholds the statistics give (same as scales())."""
        return self.scales()


class BaseQuanter(_Quantizer):
    """A quanter: forward fake-quantizes its input (Paddle's BaseQuanter)."""


class QuanterFactory:
    """Paddle's quanter factory: holds constructor arguments; `_instance(layer)` builds one per layer.

    Example:
      >>> from pdx.quantization.observers import AbsmaxObserver
      >>> AbsmaxObserver(quant_bits=8)
      AbsmaxObserver(quant_bits=8)
    """

    _layer_class: type = None

    def __init__(self, *args, **kwargs):
        self._args, self._kwargs = args, kwargs

    @property
    def args(self):
        return self._args

    @property
    def kwargs(self):
        return dict(self._kwargs)

    def _instance(self, layer) -> _Quantizer:
        return self._layer_class(layer, *self._args, **self._kwargs)

    def __repr__(self):
        args = ", ".join([repr(a) for a in self._args] + [f"{k}={v!r}" for k, v in self._kwargs.items()])
        return f"{type(self).__name__}({args})"

    __str__ = __repr__


def weight_channel_axis(layer) -> int:
    """The output-channel axis of a layer's weight: Linear [in, out] -> 1, Conv [out, in/g, *k] -> 0,
    ConvTranspose [in, out/g, *k] -> 1, Embedding [rows, dim] -> 0 (one scale per row)."""
    from pdx import nn

    if isinstance(layer, nn.Linear):
        return 1
    if isinstance(layer, (nn.Conv1DTranspose, nn.Conv2DTranspose, nn.Conv3DTranspose)):
        return 1
    if isinstance(layer, (nn.Conv1D, nn.Conv2D, nn.Conv3D, nn.Embedding)):
        return 0
    raise ValueError(f"per-channel quantization needs a layer with a weight (Linear, Conv, Embedding); "
                     f"got {type(layer).__name__}")


def quanter(class_name: str):
    """Declare a factory named `class_name` for a custom quanter/observer layer (Paddle's `quanter`).

    The factory is added to the decorated class's module; `Factory(*args, **kwargs)` goes into a
    QuantConfig, and each quantized layer gets `LayerClass(layer, *args, **kwargs)`.

    Example (at the top level of your module, where the factory name is added):

        from pdx.quantization import BaseQuanter, QuantConfig, fake_quant, quanter

        @quanter("HalfRange")
        class HalfRangeLayer(BaseQuanter):
            def __init__(self, layer, bit_length=8):
                super().__init__(bit_length)

            def forward(self, x):
                return fake_quant(x, 0.5 * jnp.max(jnp.abs(x)), self.bit_length())

        config = QuantConfig(activation=HalfRange(bit_length=8), weight=None)
    """
    if not isinstance(class_name, str) or not class_name.isidentifier():
        raise ValueError(f"quanter(class_name={class_name!r}): give the factory's name as an identifier")

    def wrapper(target_class):
        factory = type(class_name, (QuanterFactory,), {
            "_layer_class": target_class, "__module__": target_class.__module__,
            "__doc__": f"Factory of {target_class.__name__} (declared with pdx.quantization.quanter)."})
        module = sys.modules.get(target_class.__module__)
        if module is not None:
            setattr(module, class_name, factory)
        return target_class

    return wrapper
