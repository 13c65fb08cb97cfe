"""pdx.kernels: Pallas and oneDNN kernels for the hot ops, their pure-JAX references, and the dispatch.

Each op has a Pallas kernel (GPU, Triton lowering; interpret mode elsewhere)
or a oneDNN one (the optional CPU backend `pdx.kernels.onednn`, XLA custom
calls into a library built outside tracing) and a `*_reference` in
pure JAX that defines its semantics. `impl="auto"`
picks the kernel on a GPU when the shapes fit it and the reference elsewhere;
`set_impl` / `use_impl` override the choice globally. Each op is an `Op`, an
immutable mapping from implementation name to callable (`OPS`); an
implementation that cannot take a call raises `Unsupported` and the next one
runs. See README.md.
"""

import types

from pdx.kernels._cross_entropy import LINEAR_SOFTMAX_CROSS_ENTROPY, SOFTMAX_CROSS_ENTROPY
from pdx.kernels._cross_entropy import CrossEntropyBlockSizes
from pdx.kernels._cross_entropy import linear_softmax_cross_entropy
from pdx.kernels._cross_entropy import linear_softmax_cross_entropy_reference
from pdx.kernels._cross_entropy import softmax_cross_entropy
from pdx.kernels._cross_entropy import softmax_cross_entropy_reference
from pdx.kernels._dispatch import AUTO_ORDER
from pdx.kernels._dispatch import Delegate
from pdx.kernels._dispatch import IMPLS
from pdx.kernels._dispatch import Op
from pdx.kernels._dispatch import Unsupported
from pdx.kernels._dispatch import get_impl
from pdx.kernels._dispatch import register_impl
from pdx.kernels._dispatch import set_impl
from pdx.kernels._dispatch import use_impl
from pdx.kernels._flash_attention import AttentionBlockSizes
from pdx.kernels._flash_attention import flash_attention
from pdx.kernels._flash_attention import FLASH_ATTENTION
from pdx.kernels._flash_attention import flash_attention_reference
from pdx.kernels._flash_attention import flash_attention_unfit
from pdx.kernels._norms import LAYER_NORM
from pdx.kernels._paged_attention import PAGED_ATTENTION
from pdx.kernels._paged_attention import PAGED_ATTENTION_WITH_NEW
from pdx.kernels._paged_attention import paged_attention
from pdx.kernels._paged_attention import paged_attention_reference
from pdx.kernels._paged_attention import paged_attention_with_new
from pdx.kernels._paged_attention import write_kv_pages
from pdx.kernels import onednn
from pdx.kernels.onednn import CONV2D_NHWC
from pdx.kernels.onednn import MATMUL
from pdx.kernels.onednn import conv2d_nhwc
from pdx.kernels.onednn import conv2d_nhwc_reference
from pdx.kernels.onednn import matmul
from pdx.kernels.onednn import matmul_reference
from pdx.kernels._norms import NORM_MAX_FEATURES
from pdx.kernels._norms import RMS_NORM
from pdx.kernels._norms import NormBlockSizes
from pdx.kernels._norms import layer_norm
from pdx.kernels._norms import layer_norm_reference
from pdx.kernels._norms import rms_norm
from pdx.kernels._norms import rms_norm_reference
from pdx.kernels._norms import rms_norm_with_rstd
from pdx.kernels._rewrite import REWRITE_CONV_MODES
from pdx.kernels._rewrite import REWRITE_PRECISIONS
from pdx.kernels._rewrite import RewriteRule
from pdx.kernels._rewrite import register_rewrite
from pdx.kernels._rewrite import rewrite_program

# Importing the CPU backend (above) registered its "onednn" implementations into the ops;
# its library is built here, never inside a trace (onednn/_build.py).
onednn.prepare()

# Every op's registry, by name.
OPS = types.MappingProxyType({op.name: op for op in (CONV2D_NHWC, FLASH_ATTENTION, LAYER_NORM,
                                                     LINEAR_SOFTMAX_CROSS_ENTROPY, MATMUL, PAGED_ATTENTION,
                                                     PAGED_ATTENTION_WITH_NEW, RMS_NORM, SOFTMAX_CROSS_ENTROPY)})
del types

__all__ = [
    "AUTO_ORDER",
    "IMPLS",
    "NORM_MAX_FEATURES",
    "OPS",
    "REWRITE_CONV_MODES",
    "REWRITE_PRECISIONS",
    "RewriteRule",
    "AttentionBlockSizes",
    "CrossEntropyBlockSizes",
    "Delegate",
    "NormBlockSizes",
    "Op",
    "Unsupported",
    "conv2d_nhwc",
    "conv2d_nhwc_reference",
    "flash_attention",
    "flash_attention_reference",
    "flash_attention_unfit",
    "get_impl",
    "matmul",
    "matmul_reference",
    "onednn",
    "paged_attention",
    "paged_attention_reference",
    "paged_attention_with_new",
    "layer_norm",
    "layer_norm_reference",
    "linear_softmax_cross_entropy",
    "linear_softmax_cross_entropy_reference",
    "rms_norm",
    "rms_norm_reference",
    "register_impl",
    "register_rewrite",
    "rewrite_program",
    "rms_norm_with_rstd",
    "set_impl",
    "softmax_cross_entropy",
    "softmax_cross_entropy_reference",
    "use_impl",
    "write_kv_pages",
]
