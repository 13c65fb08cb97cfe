"""PTQ and QAT: swap layers for their quantized forms, then convert them to integer layers."""

from __future__ import annotations

import copy

from pdx._sublayers import set_child as _set_child
from pdx._sublayers import walk as _walk
from pdx.nn import Layer
from pdx.quantization._config import QuantConfig
from pdx.quantization._layers import converted_type

__all__ = ["PTQ", "QAT", "Quantization"]


class Quantization:
    """Shared quantize/convert of PTQ and QAT (Paddle's `paddle.quantization.quantize.Quantization`)."""

    _stage = "quantize"

    def __init__(self, config: QuantConfig):
        if not isinstance(config, QuantConfig):
            raise TypeError(f"config={config!r} must be a pdx.quantization.QuantConfig")
        self._config = config

    def quantize(self, model: Layer, inplace: bool = False) -> Layer:
        """A copy of `model` (or `model` itself with inplace=True) whose quantizable layers carry quanters."""
        if not isinstance(model, Layer):
            raise TypeError(f"model must be a pdx.nn.Layer; got {type(model).__name__}")
        model = model if inplace else copy.deepcopy(model)
        mapping, leaves, swapped = self._config.qat_layer_mappings, tuple(self._config.customized_leaves), []

        def visit(parent, name, full, child):
            config = self._config.config_for(full, child)
            if config is not None:
                target = next(mapping[t] for t in type(child).__mro__ if t in mapping)
                _set_child(parent, name, target(child, config))
                swapped.append(full)
                return False
            return not isinstance(child, leaves)

        _walk(model, "", visit)
        if not swapped:
            raise ValueError(f"{type(self).__name__}.quantize found no layer to quantize in {type(model).__name__}: "
                             f"give QuantConfig a global activation=/weight= or add_type_config/add_name_config "
                             f"for its layers ({self._config._unsupported('the others')})")
        model.train() if self._stage == "qat" else None
        return model

    def convert(self, model: Layer, inplace: bool = False, remain_weight: bool = False) -> Layer:
        """Replace every quantized layer by its integer form (int8 weights; int8 x int8 -> int32 ops).

        Raises:
          RuntimeError: an activation quanter has seen no data (calibrate or train first).
        """
        model = model if inplace else copy.deepcopy(model)
        converted = []

        def visit(parent, name, full, child):
            target = converted_type(child)
            if target is None:
                return True
            if not remain_weight:
                _set_child(parent, name, target(child, full))
            converted.append(full)
            return False

        _walk(model, "", visit)
        if not converted:
            raise ValueError(f"convert found no quantized layer in {type(model).__name__}: pass the model "
                             f"returned by {type(self).__name__}.quantize")
        return model.eval()


class PTQ(Quantization):
    """Post-training quantization: quantize (observers) -> run calibration batches -> convert.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> from pdx.quantization import PTQ, QuantConfig
      >>> from pdx.quantization.observers import AbsmaxObserver, PerChannelAbsmaxObserver
      >>> ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=PerChannelAbsmaxObserver()))
      >>> model = ptq.quantize(pdx.nn.Sequential(pdx.nn.Linear(4, 3)))
      >>> _ = model(jnp.ones((2, 4)))           # calibration
      >>> int_model = ptq.convert(model)
      >>> int_model[0].weight.get_value().dtype
      dtype('int8')
    """

    _stage = "ptq"


class QAT(Quantization):
    """Quantization-aware training: quantize (fake quanters) -> train -> convert.

    The weights stay the float layer's own parameters (trained through a
    straight-through estimator); quanters' thresholds update in training mode.
    """

    _stage = "qat"
