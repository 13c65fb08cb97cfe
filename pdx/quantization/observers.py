"""Observers for post-training quantization (Paddle's `paddle.quantization.observers`).

Each public name is a factory (`AbsmaxObserver(quant_bits=8)`) that
`QuantConfig` instantiates once per layer; the layer classes hold the
statistics in Buffers.

    AbsmaxObserver                largest |x| seen (per tensor)
    PerChannelAbsmaxObserver      largest |w| per output channel (weights)
    MovingAverageAbsmaxObserver   moving average of each batch's largest |x|
    MinMaxObserver                asymmetric: min and max seen -> step and zero point
    PercentileObserver            the p-th percentile of |x| from a histogram
    KLObserver                    the threshold minimizing KL divergence (TensorRT's entropy calibration)
    GroupWiseWeightObserver       one scale per group of `group_size` input rows (weight-only LLMs)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from pdx.quantization._base import BaseObserver, QuanterFactory, QuantParams, qmax, weight_channel_axis

__all__ = [
    "AbsmaxObserver",
    "GroupWiseWeightObserver",
    "KLObserver",
    "MinMaxObserver",
    "MovingAverageAbsmaxObserver",
    "PercentileObserver",
    "PerChannelAbsmaxObserver",
]


class AbsmaxObserverLayer(BaseObserver):
    def __init__(self, layer=None, quant_bits=8):
        super().__init__(quant_bits)
        self.register_buffer("_max", jnp.zeros((), jnp.float32))

    def _observe(self, x):
        self._max.set_value(jnp.maximum(self._max.get_value(), jnp.max(jnp.abs(x)).astype(jnp.float32)))

    def scales(self):
        return self._max.get_value()


class PerChannelAbsmaxObserverLayer(BaseObserver):
    def __init__(self, layer=None, quant_bits=8, quant_axis=None):
        super().__init__(quant_bits)
        if quant_axis is None:
            if layer is None:
                raise ValueError("PerChannelAbsmaxObserver needs quant_axis= when it observes no layer's weight")
            quant_axis = weight_channel_axis(layer)
        self._axis = int(quant_axis)
        channels = layer.weight.shape[self._axis] if layer is not None else 1
        self.register_buffer("_max", jnp.zeros((channels,), jnp.float32))

    def _observe(self, x):
        if self._axis >= x.ndim or x.shape[self._axis] != self._max.shape[0]:
            raise ValueError(f"PerChannelAbsmaxObserver(quant_axis={self._axis}) expects {self._max.shape[0]} "
                             f"channels on that axis; got shape {tuple(x.shape)} (use it for weights)")
        reduce = tuple(a for a in range(x.ndim) if a != self._axis)
        self._max.set_value(jnp.maximum(self._max.get_value(), jnp.max(jnp.abs(x), axis=reduce).astype(jnp.float32)))

    def quant_axis(self):
        return self._axis

    def scales(self):
        return self._max.get_value()


class MovingAverageAbsmaxObserverLayer(BaseObserver):
    def __init__(self, layer=None, quant_bits=8, moving_rate=0.9):
        super().__init__(quant_bits)
        if not 0.0 < moving_rate < 1.0:
            raise ValueError(f"moving_rate={moving_rate!r} must lie in (0, 1)")
        self._rate = float(moving_rate)
        self.register_buffer("_state", jnp.zeros((), jnp.float32))
        self.register_buffer("_accum", jnp.zeros((), jnp.float32))

    def _observe(self, x):
        # Paddle's moving_average_abs_max: state = r*state + 1, accum = r*accum + max|x|, scale = accum/state.
        self._state.set_value(self._rate * self._state.get_value() + 1.0)
        self._accum.set_value(self._rate * self._accum.get_value() + jnp.max(jnp.abs(x)).astype(jnp.float32))

    def scales(self):
        return self._accum.get_value() / jnp.maximum(self._state.get_value(), 1e-12)


class MinMaxObserverLayer(BaseObserver):
    def __init__(self, layer=None, quant_bits=8):
        super().__init__(quant_bits)
        self.register_buffer("_min", jnp.zeros((), jnp.float32))
        self.register_buffer("_max", jnp.zeros((), jnp.float32))

    def _observe(self, x):
        self._min.set_value(jnp.minimum(self._min.get_value(), jnp.min(x).astype(jnp.float32)))
        self._max.set_value(jnp.maximum(self._max.get_value(), jnp.max(x).astype(jnp.float32)))

    def scales(self):
        return jnp.maximum(jnp.abs(self._min.get_value()), jnp.abs(self._max.get_value()))

    def quant_params(self) -> QuantParams:
        # The range [min, max] (always containing 0, so 0 is exact) onto [-2^(b-1), 2^(b-1) - 1].
        lo, hi = float(self._min.get_value()), float(self._max.get_value())
        levels = 2 ** self._bits - 1
        step = max(hi - lo, 1e-8) / levels
        zero_point = int(np.clip(np.round(-lo / step) - 2 ** (self._bits - 1), -2 ** (self._bits - 1), qmax(self._bits)))
        return QuantParams(jnp.asarray(step, jnp.float32), jnp.asarray(zero_point, jnp.int32), None, self._bits)

    def zero_points(self):
        return self.quant_params().zero_point


class _HistogramObserverLayer(BaseObserver):
    """A histogram of |x| over [0, running max]; the range grows by re-binning the old counts."""

    def __init__(self, layer=None, quant_bits=8, bins=2048):
        super().__init__(quant_bits)
        if int(bins) < 2 * qmax(quant_bits) + 2:
            raise ValueError(f"bins={bins!r} must be at least {2 * qmax(quant_bits) + 2} for {quant_bits}-bit")
        self._bins = int(bins)
        self.register_buffer("_hist", jnp.zeros((self._bins,), jnp.float32))
        self.register_buffer("_hist_max", jnp.zeros((), jnp.float32))

    def _observe(self, x):
        a = jnp.abs(x).astype(jnp.float32).reshape(-1)
        old_max, hist = self._hist_max.get_value(), self._hist.get_value()
        new_max = jnp.maximum(old_max, jnp.max(a))
        width = jnp.maximum(new_max, 1e-12) / self._bins
        centers = (jnp.arange(self._bins, dtype=jnp.float32) + 0.5) * old_max / self._bins
        moved = jnp.clip(jnp.floor(centers / width), 0, self._bins - 1).astype(jnp.int32)
        rebinned = jnp.zeros_like(hist).at[moved].add(hist)
        idx = jnp.clip(jnp.floor(a / width), 0, self._bins - 1).astype(jnp.int32)
        self._hist.set_value(rebinned + jnp.bincount(idx, length=self._bins).astype(jnp.float32))
        self._hist_max.set_value(new_max)

    def _edges(self):
        hist = np.asarray(self._hist.get_value(), np.float64)
        return hist, float(self._hist_max.get_value()) / self._bins


class PercentileObserverLayer(_HistogramObserverLayer):
    def __init__(self, layer=None, quant_bits=8, percentile=0.9999, bins=2048):
        super().__init__(layer, quant_bits, bins)
        if not 0.0 < percentile <= 1.0:
            raise ValueError(f"percentile={percentile!r} must lie in (0, 1]")
        self._percentile = float(percentile)

    def scales(self):
        hist, width = self._edges()
        cdf = np.cumsum(hist) / max(hist.sum(), 1.0)
        i = int(np.searchsorted(cdf, self._percentile))
        return jnp.asarray((min(i, self._bins - 1) + 1) * width, jnp.float32)


class KLObserverLayer(_HistogramObserverLayer):
    def scales(self):
        hist, width = self._edges()
        levels = qmax(self._bits) + 1
        if hist.sum() == 0:
            return jnp.asarray(0.0, jnp.float32)
        best, best_i = np.inf, self._bins
        for i in range(levels, self._bins + 1):
            p = hist[:i].copy()
            p[-1] += hist[i:].sum()                      # clipped outliers land in the last bin
            chunks = np.array_split(hist[:i], levels)    # i bins merged into `levels` quantized bins
            q = np.concatenate([np.where(c > 0, c.sum() / max((c > 0).sum(), 1), 0.0) for c in chunks])
            mask = p > 0
            p, q = p / p.sum(), q / max(q.sum(), 1e-12)
            kl = float(np.sum(p[mask] * np.log(p[mask] / np.maximum(q[mask], 1e-12))))
            if kl < best:
                best, best_i = kl, i
        return jnp.asarray(best_i * width, jnp.float32)


class GroupWiseWeightObserverLayer(BaseObserver):
    def __init__(self, layer=None, quant_bits=4, group_size=128):
        super().__init__(quant_bits)
        if layer is None or getattr(layer, "weight", None) is None or layer.weight.ndim != 2:
            raise ValueError("GroupWiseWeightObserver observes a Linear layer's [in, out] weight")
        rows, cols = layer.weight.shape
        if group_size <= 0 or rows % group_size:
            raise ValueError(f"group_size={group_size!r} must divide the weight's {rows} input rows")
        self._group = int(group_size)
        self.register_buffer("_max", jnp.zeros((rows // group_size, cols), jnp.float32))

    def _observe(self, x):
        groups = jnp.abs(x).reshape(self._max.shape[0], self._group, -1).max(axis=1)
        self._max.set_value(jnp.maximum(self._max.get_value(), groups.astype(jnp.float32)))

    def quant_axis(self):
        return 1

    def scales(self):
        return self._max.get_value()


class AbsmaxObserver(QuanterFactory):
    """Per-tensor absolute maximum (Paddle's AbsmaxObserver).

    Example:
      >>> from pdx.quantization import QuantConfig
      >>> QuantConfig(activation=AbsmaxObserver(), weight=PerChannelAbsmaxObserver()).global_config.activation
      AbsmaxObserver(quant_bits=8)
    """

    _layer_class = AbsmaxObserverLayer

    def __init__(self, quant_bits=8):
        super().__init__(quant_bits=quant_bits)


class PerChannelAbsmaxObserver(QuanterFactory):
    """Absolute maximum per output channel of a weight (quant_axis from the layer type when None)."""

    _layer_class = PerChannelAbsmaxObserverLayer

    def __init__(self, quant_bits=8, quant_axis=None):
        super().__init__(quant_bits=quant_bits, quant_axis=quant_axis)


class MovingAverageAbsmaxObserver(QuanterFactory):
    """Moving average of each batch's absolute maximum (Paddle's moving_average_abs_max)."""

    _layer_class = MovingAverageAbsmaxObserverLayer

    def __init__(self, quant_bits=8, moving_rate=0.9):
        super().__init__(quant_bits=quant_bits, moving_rate=moving_rate)


class MinMaxObserver(QuanterFactory):
    """Asymmetric: the observed [min, max] (widened to contain 0) mapped with a zero point."""

    _layer_class = MinMaxObserverLayer

    def __init__(self, quant_bits=8):
        super().__init__(quant_bits=quant_bits)


class PercentileObserver(QuanterFactory):
    """The `percentile` quantile of |x| (outliers beyond it are clipped), from a `bins`-bin histogram."""

    _layer_class = PercentileObserverLayer

    def __init__(self, quant_bits=8, percentile=0.9999, bins=2048):
        super().__init__(quant_bits=quant_bits, percentile=percentile, bins=bins)


class KLObserver(QuanterFactory):
    """The clipping threshold whose quantized histogram is closest in KL divergence (entropy calibration)."""

    _layer_class = KLObserverLayer

    def __init__(self, quant_bits=8, bins=2048):
        super().__init__(quant_bits=quant_bits, bins=bins)


class GroupWiseWeightObserver(QuanterFactory):
    """One absolute maximum per `group_size` input rows and output column (Paddle's GroupWiseWeightObserver)."""

    _layer_class = GroupWiseWeightObserverLayer

    def __init__(self, quant_bits=4, group_size=128):
        super().__init__(quant_bits=quant_bits, group_size=group_size)
