"""pdx.quantization: post-training and quantization-aware training to int8 (Paddle's paddle.quantization).

    QuantConfig                        quanters per layer: global, by type, by name, by object
    PTQ, QAT                           quantize(model) -> calibrate / train -> convert(model)
    observers, quanters                AbsmaxObserver, PerChannelAbsmaxObserver, ..., FakeQuanterWithAbsMaxObserver
    BaseObserver, BaseQuanter          bases for custom ones
    weight_only_quantize               int8 / int4 group-wise weights for LLM Linear layers
    UnstructuredPruner, GMPUnstructuredPruner   magnitude pruning with masks kept through training
    ChannelPruner, channel_groups, sensitivity   structured pruning that removes channels
    Distiller, DistillationLoss, soft_label_loss, feature_loss   teacher -> student training
"""

from pdx.quantization import observers, quanters
from pdx.quantization._base import BaseObserver, BaseQuanter, QuanterFactory, fake_quant, quanter
from pdx.quantization._channel_prune import ChannelGroup, ChannelPruner, channel_groups, sensitivity
from pdx.quantization._config import QuantConfig, SingleLayerConfig
from pdx.quantization._distill import DistillationLoss, Distiller, feature_loss, soft_label_loss
from pdx.quantization._layers import (
    QuantedConv,
    QuantedEmbedding,
    QuantedLinear,
    QuantizedConv,
    QuantizedEmbedding,
    QuantizedLinear,
)
from pdx.quantization._prune import GMPUnstructuredPruner, UnstructuredPruner
from pdx.quantization._quantize import PTQ, QAT, Quantization
from pdx.quantization._weight_only import (
    WeightOnlyLinear,
    weight_dequantize,
    weight_only_linear,
    weight_only_quantize,
    weight_quantize,
)

__all__ = [
    "PTQ",
    "QAT",
    "BaseObserver",
    "BaseQuanter",
    "ChannelGroup",
    "ChannelPruner",
    "DistillationLoss",
    "Distiller",
    "GMPUnstructuredPruner",
    "QuantConfig",
    "QuantedConv",
    "QuantedEmbedding",
    "QuantedLinear",
    "QuanterFactory",
    "Quantization",
    "QuantizedConv",
    "QuantizedEmbedding",
    "QuantizedLinear",
    "SingleLayerConfig",
    "UnstructuredPruner",
    "WeightOnlyLinear",
    "channel_groups",
    "fake_quant",
    "feature_loss",
    "observers",
    "quanter",
    "quanters",
    "sensitivity",
    "soft_label_loss",
    "weight_dequantize",
    "weight_only_linear",
    "weight_only_quantize",
    "weight_quantize",
]
