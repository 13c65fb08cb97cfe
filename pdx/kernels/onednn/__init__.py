"""pdx.kernels.onednn: the optional CPU backend — oneDNN convolutions, matmuls, attention, paged attention, LayerNorm.

One shared library of XLA FFI handlers (`csrc/`), built outside tracing
(`_build.py`: on first import of `pdx.kernels`, or ahead of time with
`pdx kernels build`), and the JAX primitives that call it: convolutions and
matmuls (`_conv_matmul.py`), attention (`_attention.py`), paged attention
(`_paged_attention.py`), LayerNorm (`_norm.py`), and the inference calls of
exported programs with kept weights (`_inference.py`) and the fusions that use them in rewritten
inference programs (`_rewrite_rules.py`). Importing the package registers each as the "onednn"
implementation of a backend-neutral dispatch op in `pdx.kernels`
(`register_impl`, once, when `pdx.kernels` imports this package); the layers
reach them through those ops and name no backend.
Without a compiler or the oneDNN wheels everything runs on XLA (one warning
says why). See README.md.

Example:
  >>> from pdx.kernels import onednn
  >>> isinstance(onednn.available(), bool)
  True
"""

from pdx.kernels._rewrite import register_rewrite
from pdx.kernels.onednn import _attention, _norm, _paged_attention  # noqa: F401  (importing them registers their "onednn")
from pdx.kernels.onednn import _rewrite_rules
from pdx.kernels.onednn._build import ABI
from pdx.kernels.onednn._build import TARGETS
from pdx.kernels.onednn._build import available
from pdx.kernels.onednn._build import bf16_capable
from pdx.kernels.onednn._build import build
from pdx.kernels.onednn._build import prepare
from pdx.kernels.onednn._build import unavailable_reason
from pdx.kernels.onednn._conv_matmul import CONV2D_NHWC
from pdx.kernels.onednn._conv_matmul import FORWARD
from pdx.kernels.onednn._conv_matmul import MATMUL
from pdx.kernels.onednn._conv_matmul import MATMUL_PRIMITIVE
from pdx.kernels.onednn._conv_matmul import conv2d_nhwc
from pdx.kernels.onednn._conv_matmul import conv2d_nhwc_reference
from pdx.kernels.onednn._conv_matmul import fits
from pdx.kernels.onednn._conv_matmul import matmul
from pdx.kernels.onednn._conv_matmul import matmul_reference
from pdx.kernels.onednn._inference import forget_weights
from pdx.kernels.onednn._inference import kept_conv
from pdx.kernels.onednn._inference import kept_matmul
from pdx.kernels.onednn._inference import max_pool_nhwc
from pdx.kernels.onednn._inference import max_pool_nhwc_reference
from pdx.kernels.onednn._inference import new_weights_token

# Kept weights and fused BatchNorm / residual / ReLU in rewritten inference programs (pdx.kernels.rewrite_program).
register_rewrite(_rewrite_rules.RULE)

__all__ = [
    "ABI",
    "CONV2D_NHWC",
    "FORWARD",
    "MATMUL",
    "MATMUL_PRIMITIVE",
    "TARGETS",
    "available",
    "bf16_capable",
    "build",
    "conv2d_nhwc",
    "conv2d_nhwc_reference",
    "fits",
    "forget_weights",
    "kept_conv",
    "kept_matmul",
    "matmul",
    "matmul_reference",
    "max_pool_nhwc",
    "max_pool_nhwc_reference",
    "new_weights_token",
    "prepare",
    "unavailable_reason",
]
