"""pdx.incubate.nn.functional: Paddle's fused ops as jnp compositions that XLA fuses.

Same names and arguments as `paddle.incubate.nn.functional`; random ops take a
keyword-only `key=`. The int8 / fp8 quantization kernels, paged-KV decoding and
the MoE dispatch kernels are not provided (see README.md of pdx.incubate).
"""

from pdx.incubate.nn.functional._fused import blha_get_max_len
from pdx.incubate.nn.functional._fused import fast_ln
from pdx.incubate.nn.functional._fused import fast_rms_norm
from pdx.incubate.nn.functional._fused import fused_bias_act
from pdx.incubate.nn.functional._fused import fused_bias_dropout_residual_layer_norm
from pdx.incubate.nn.functional._fused import fused_dropout_add
from pdx.incubate.nn.functional._fused import fused_feedforward
from pdx.incubate.nn.functional._fused import fused_layer_norm
from pdx.incubate.nn.functional._fused import fused_linear
from pdx.incubate.nn.functional._fused import fused_linear_activation
from pdx.incubate.nn.functional._fused import fused_matmul_bias
from pdx.incubate.nn.functional._fused import fused_multi_head_attention
from pdx.incubate.nn.functional._fused import fused_rms_norm
from pdx.incubate.nn.functional._fused import fused_rms_norm_ext
from pdx.incubate.nn.functional._fused import fused_rotary_position_embedding
from pdx.incubate.nn.functional._fused import masked_multihead_attention
from pdx.incubate.nn.functional._fused import swiglu
from pdx.incubate.nn.functional._fused import variable_length_memory_efficient_attention

__all__ = [
    "blha_get_max_len",
    "fast_ln",
    "fast_rms_norm",
    "fused_bias_act",
    "fused_bias_dropout_residual_layer_norm",
    "fused_dropout_add",
    "fused_feedforward",
    "fused_layer_norm",
    "fused_linear",
    "fused_linear_activation",
    "fused_matmul_bias",
    "fused_multi_head_attention",
    "fused_rms_norm",
    "fused_rms_norm_ext",
    "fused_rotary_position_embedding",
    "masked_multihead_attention",
    "swiglu",
    "variable_length_memory_efficient_attention",
]
