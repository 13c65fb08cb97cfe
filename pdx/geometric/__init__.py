"""pdx.geometric: Paddle's graph learning ops (message passing, segment reductions, sampling).

`send_u_recv` / `send_ue_recv` / `send_uv` and `segment_*` are jnp gathers
plus `jax.ops.segment_*` reductions: they run eagerly, under `pdx.jit` and
under `jax.grad`. Under jit their output sizes must be static: `out_size`
an int, `segment_*(..., num_segments=int)`. `reindex_*` and
`sample_*neighbors` have data-dependent output sizes and run eagerly only.
"""

from pdx.geometric._graph import reindex_graph, reindex_heter_graph, sample_neighbors, weighted_sample_neighbors
from pdx.geometric._message_passing import send_u_recv, send_ue_recv, send_uv
from pdx.geometric._segment import segment_max, segment_mean, segment_min, segment_sum

__all__ = [
    "reindex_graph",
    "reindex_heter_graph",
    "sample_neighbors",
    "segment_max",
    "segment_mean",
    "segment_min",
    "segment_sum",
    "send_u_recv",
    "send_ue_recv",
    "send_uv",
    "weighted_sample_neighbors",
]
