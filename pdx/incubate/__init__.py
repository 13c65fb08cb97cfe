"""pdx.incubate: Paddle's `paddle.incubate` — optimizer wrappers, fused ops and layers, older graph op names.

`LookAhead` / `ModelAverage` wrap pdx optimizers (their math is the optax
transforms in `pdx.incubate.optimizer`); `pdx.incubate.nn` holds the fused
layers and ops as plain compositions XLA fuses; the segment and graph ops are
`pdx.geometric`'s under their incubate names; `pdx.incubate.autograd` is Paddle's
functional `jvp` / `vjp` / `Jacobian` / `Hessian` over JAX's transforms.
"""

from pdx.geometric import segment_max, segment_mean, segment_min, segment_sum
from pdx.incubate import autograd, jit, nn, optimizer
from pdx.incubate._inference import inference
from pdx.incubate._ops import graph_khop_sampler
from pdx.incubate._ops import graph_reindex
from pdx.incubate._ops import graph_sample_neighbors
from pdx.incubate._ops import graph_send_recv
from pdx.incubate._ops import identity_loss
from pdx.incubate._ops import softmax_mask_fuse
from pdx.incubate._ops import softmax_mask_fuse_upper_triangle
from pdx.incubate._optimizer import LookAhead, ModelAverage

__all__ = [
    "LookAhead",
    "ModelAverage",
    "autograd",
    "graph_khop_sampler",
    "graph_reindex",
    "graph_sample_neighbors",
    "graph_send_recv",
    "identity_loss",
    "inference",
    "jit",
    "nn",
    "optimizer",
    "segment_max",
    "segment_mean",
    "segment_min",
    "segment_sum",
    "softmax_mask_fuse",
    "softmax_mask_fuse_upper_triangle",
]
