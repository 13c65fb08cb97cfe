"""Fake quanters for quantization-aware training (Paddle's `paddle.quantization.quanters`).

In training mode a quanter updates its threshold from the batch and returns
quantize-dequantize(x) with a straight-through gradient; in eval mode it uses
the frozen threshold.

    FakeQuanterWithAbsMaxObserver             moving-average absmax, one threshold per tensor (Paddle's)
    FakeQuanterChannelWiseAbsMaxObserver      current absmax per output channel (weights)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pdx.quantization._base import BaseQuanter, QuanterFactory, fake_quant, weight_channel_axis

__all__ = ["FakeQuanterChannelWiseAbsMaxObserver", "FakeQuanterWithAbsMaxObserver"]


class FakeQuanterWithAbsMaxObserverLayer(BaseQuanter):
    def __init__(self, layer=None, name=None, moving_rate=0.9, bit_length=8, dtype="float32"):
        super().__init__(bit_length)
        if not 0.0 < moving_rate < 1.0:
            raise ValueError(f"moving_rate={moving_rate!r} must lie in (0, 1)")
        self._rate = float(moving_rate)
        # Paddle's initial values: scale 0.001, state 1, accum 1.
        self.register_buffer("_scale", jnp.full((), 0.001, jnp.float32))
        self.register_buffer("_state", jnp.ones((), jnp.float32))
        self.register_buffer("_accum", jnp.ones((), jnp.float32))

    def forward(self, input):  # noqa: A002
        x = jnp.asarray(input)
        if self.training:
            absmax = jnp.max(jnp.abs(jax.lax.stop_gradient(x))).astype(jnp.float32)
            state = self._rate * self._state.get_value() + 1.0
            accum = self._rate * self._accum.get_value() + absmax
            self._state.set_value(state)
            self._accum.set_value(accum)
            self._scale.set_value(accum / state)
            self._seen()
        return fake_quant(x, self._scale.get_value(), self._bits)

    def scales(self):
        return self._scale.get_value()


class FakeQuanterChannelWiseAbsMaxObserverLayer(BaseQuanter):
    def __init__(self, layer=None, bit_length=8, quant_axis=None):
        super().__init__(bit_length)
        if quant_axis is None:
            quant_axis = weight_channel_axis(layer)
        self._axis = int(quant_axis)
        channels = layer.weight.shape[self._axis] if layer is not None else 1
        self.register_buffer("_scale", jnp.zeros((channels,), jnp.float32))

    def forward(self, input):  # noqa: A002
        x = jnp.asarray(input)
        if self.training or not self.calibrated():
            reduce = tuple(a for a in range(x.ndim) if a != self._axis)
            self._scale.set_value(jnp.max(jnp.abs(jax.lax.stop_gradient(x)), axis=reduce).astype(jnp.float32))
            self._seen()
        return fake_quant(x, self._scale.get_value(), self._bits, axis=self._axis)

    def quant_axis(self):
        return self._axis

    def scales(self):
        return self._scale.get_value()


class FakeQuanterWithAbsMaxObserver(QuanterFactory):
    """QAT quanter with a moving-average absmax threshold (Paddle's FakeQuanterWithAbsMaxObserver).

    Example:
      >>> import pdx
      >>> from pdx.quantization import QAT, QuantConfig
      >>> q = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)
      >>> model = QAT(QuantConfig(activation=q, weight=q)).quantize(pdx.nn.Sequential(pdx.nn.Linear(4, 2)))
      >>> type(model[0]).__name__
      'QuantedLinear'
    """

    _layer_class = FakeQuanterWithAbsMaxObserverLayer

    def __init__(self, moving_rate=0.9, bit_length=8, dtype="float32", name=None):
        super().__init__(moving_rate=moving_rate, bit_length=bit_length, dtype=dtype, name=name)


class FakeQuanterChannelWiseAbsMaxObserver(QuanterFactory):
    """QAT weight quanter: the current absmax per output channel (axis from the layer type when None)."""

    _layer_class = FakeQuanterChannelWiseAbsMaxObserverLayer

    def __init__(self, bit_length=8, quant_axis=None):
        super().__init__(bit_length=bit_length, quant_axis=quant_axis)
