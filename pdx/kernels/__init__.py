"""pdx.kernels: Pallas kernels for the hot ops, their pure-JAX references, and the dispatch.

Each op has a Pallas kernel (GPU, Triton lowering; interpret mode elsewhere)
and a `*_reference` in pure JAX that defines its semantics. `impl="auto"`
picks the kernel on a GPU when the shapes fit it and the reference elsewhere;
`set_impl` / `use_impl` override the choice globally. See README.md.
"""

from pdx.kernels._cross_entropy import CrossEntropyBlockSizes
from pdx.kernels._cross_entropy import linear_softmax_cross_entropy
from pdx.kernels._cross_entropy import linear_softmax_cross_entropy_reference
from pdx.kernels._cross_entropy import softmax_cross_entropy
from pdx.kernels._cross_entropy import softmax_cross_entropy_reference
from pdx.kernels._dispatch import IMPLS
from pdx.kernels._dispatch import get_impl
from pdx.kernels._dispatch import set_impl
from pdx.kernels._dispatch import use_impl
from pdx.kernels._flash_attention import AttentionBlockSizes
from pdx.kernels._flash_attention import flash_attention
from pdx.kernels._flash_attention import flash_attention_reference
from pdx.kernels._norms import NormBlockSizes
from pdx.kernels._norms import layer_norm
from pdx.kernels._norms import layer_norm_reference
from pdx.kernels._norms import rms_norm
from pdx.kernels._norms import rms_norm_reference
from pdx.kernels._norms import rms_norm_with_rstd

__all__ = [
    "IMPLS",
    "AttentionBlockSizes",
    "CrossEntropyBlockSizes",
    "NormBlockSizes",
    "flash_attention",
    "flash_attention_reference",
    "get_impl",
    "layer_norm",
    "layer_norm_reference",
    "linear_softmax_cross_entropy",
    "linear_softmax_cross_entropy_reference",
    "rms_norm",
    "rms_norm_reference",
    "rms_norm_with_rstd",
    "set_impl",
    "softmax_cross_entropy",
    "softmax_cross_entropy_reference",
    "use_impl",
]
