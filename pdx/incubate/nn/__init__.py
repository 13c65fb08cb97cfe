"""pdx.incubate.nn: Paddle's fused layers with Paddle's parameter names, as plain compositions XLA fuses."""

from pdx.incubate.nn import functional
from pdx.incubate.nn._layers import (FusedBiasDropoutResidualLayerNorm, FusedDropoutAdd, FusedFeedForward, FusedLinear,
                                     FusedMultiHeadAttention, FusedTransformerEncoderLayer)

__all__ = [
    "FusedBiasDropoutResidualLayerNorm",
    "FusedDropoutAdd",
    "FusedFeedForward",
    "FusedLinear",
    "FusedMultiHeadAttention",
    "FusedTransformerEncoderLayer",
    "functional",
]
