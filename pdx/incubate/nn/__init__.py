"""pdx.incubate.nn: Paddle's fused layers with Paddle's parameter names, as plain compositions XLA fuses."""

from pdx.incubate.nn import functional
from pdx.incubate.nn._layers import FusedBiasDropoutResidualLayerNorm
from pdx.incubate.nn._layers import FusedDropoutAdd
from pdx.incubate.nn._layers import FusedFeedForward
from pdx.incubate.nn._layers import FusedLinear
from pdx.incubate.nn._layers import FusedMultiHeadAttention
from pdx.incubate.nn._layers import FusedTransformerEncoderLayer

__all__ = [
    "FusedBiasDropoutResidualLayerNorm",
    "FusedDropoutAdd",
    "FusedFeedForward",
    "FusedLinear",
    "FusedMultiHeadAttention",
    "FusedTransformerEncoderLayer",
    "functional",
]
