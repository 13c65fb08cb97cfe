"""Graph convolutions over an edge list: GCNConv, GATConv, SAGEConv.

Every layer takes node features `x` (N, F) and the edges as two int arrays
`src_index`, `dst_index` (E,) — edge `src -> dst` carries a message from
`src` to `dst` — and reduces messages with `pdx.geometric` (`send_u_recv`,
`send_ue_recv`, `send_uv`, `segment_*`). Shapes are static, so a layer runs
eagerly, under `pdx.jit` and under `jax.grad` alike.

`edge_mask` (E,) bool marks the real edges of a padded edge list (the
masked-out ones must still hold valid node ids); masked edges contribute
nothing, so a batch padded to a fixed shape compiles once. Duplicate edges
count once each (the graph is a multigraph: a doubled edge has weight 2).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import pdx.nn.functional as F
from pdx import nn
from pdx.geometric import segment_max, segment_sum, send_u_recv, send_ue_recv, send_uv
from pdx.nn import initializer as init

__all__ = ["GATConv", "GCNConv", "SAGEConv"]

SAGE_AGGREGATORS = ("mean", "max", "sum")


def _error(layer: str, message: str) -> ValueError:
    return ValueError(f"pdx.models.graph.{layer}: {message}")


def _positive_int(value, *, layer: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise _error(layer, f"`{name}` must be a positive int; got {name}={value!r}")
    return int(value)


def check_edges(x, src_index, dst_index, edge_mask, *, layer: str, num_src: int | None = None,
                num_dst: int | None = None):
    """Validate the edge arrays; returns (x, src, dst, mask or None) as jax arrays.

    Concrete (eager) indices are range-checked against `num_src` / `num_dst`
    rows (default: x.shape[0]); traced ones are taken as given.
    """
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise _error(layer, f"`x` must be node features of shape (num_nodes, features); got x.shape={x.shape}")
    src, dst = jnp.asarray(src_index), jnp.asarray(dst_index)
    for name, idx in (("src_index", src), ("dst_index", dst)):
        if idx.ndim != 1 or not jnp.issubdtype(idx.dtype, jnp.integer):
            raise _error(layer, f"`{name}` must be a 1-D int array (one node id per edge); "
                                f"got shape {idx.shape}, dtype {idx.dtype}")
    if src.shape != dst.shape:
        raise _error(layer, f"`src_index` and `dst_index` must have one entry per edge; "
                            f"got {src.shape} and {dst.shape}")
    mask = None
    if edge_mask is not None:
        mask = jnp.asarray(edge_mask)
        if mask.shape != src.shape or mask.dtype != jnp.bool_:
            raise _error(layer, f"`edge_mask` must be a bool array of shape {src.shape} (one flag per edge); "
                                f"got shape {mask.shape}, dtype {mask.dtype}")
    limits = (("src_index", src, num_src or x.shape[0]), ("dst_index", dst, num_dst or x.shape[0]))
    for name, idx, rows in limits:
        if not isinstance(idx, jax.core.Tracer) and idx.shape[0]:
            host = np.asarray(idx)  # numpy: a concrete array closed over by a trace stays concrete
            lo, hi = int(host.min()), int(host.max())
            if lo < 0 or hi >= rows:
                raise _error(layer, f"`{name}` holds node ids in [{lo}, {hi}] but there are {rows} nodes; "
                                    "ids must lie in [0, num_nodes) (padded edges too: mask them with edge_mask)")
    return x, src, dst, mask


def _sink(dst, mask, num_dst: int):
    """Segment ids that send masked edges to an extra row `num_dst` (dropped after the reduction)."""
    if mask is None:
        return dst, num_dst
    return jnp.where(mask, dst, num_dst), num_dst + 1


class GCNConv(nn.Layer):
    """Graph convolution of Kipf & Welling: `D^-1/2 (A + I) D^-1/2 X W + b`.

    `A[i, j]` is the (summed) weight of the edges `j -> i` and `D` the diagonal
    of row sums of `A + I` (in-degrees plus one). Every node gets exactly one
    self-loop of weight 1 on top of the edges it has (a node with a self-loop
    edge in the input gets 2 on the diagonal); isolated nodes keep `x W + b`.

    Args:
      in_features: input feature size.
      out_features: output feature size.
      add_self_loops: keyword-only; add `I` (default True).
      normalize: keyword-only; the symmetric normalization (default True); False
        sums `A (+ I) X W`.
      bias: keyword-only; add a bias (default True).
      rngs: keyword-only seed (None: the global generator, `pdx.seed`).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.graph import GCNConv
      >>> conv = GCNConv(4, 2)
      >>> conv(jnp.ones((3, 4)), jnp.array([0, 1]), jnp.array([1, 2])).shape
      (3, 2)
    """

    def __init__(self, in_features, out_features, *, add_self_loops=True, normalize=True, bias=True, rngs=None):
        super().__init__()
        self.in_features = _positive_int(in_features, layer="GCNConv", name="in_features")
        self.out_features = _positive_int(out_features, layer="GCNConv", name="out_features")
        self.add_self_loops = bool(add_self_loops)
        self.normalize = bool(normalize)
        self.linear = nn.Linear(self.in_features, self.out_features, bias_attr=False, rngs=rngs)
        self.bias = self.create_parameter([self.out_features], is_bias=True, rngs=rngs) if bias else None

    def forward(self, x, src_index, dst_index, *, edge_weight=None, edge_mask=None):
        """x (N, in) -> (N, out); `edge_weight` (E,) scales each edge of `A` (default 1)."""
        x, src, dst, mask = check_edges(x, src_index, dst_index, edge_mask, layer="GCNConv")
        n = x.shape[0]
        w = jnp.ones(src.shape, x.dtype) if edge_weight is None else jnp.asarray(edge_weight, x.dtype)
        if w.shape != src.shape:
            raise _error("GCNConv", f"`edge_weight` must have one weight per edge, shape {src.shape}; got {w.shape}")
        if mask is not None:
            w = jnp.where(mask, w, 0)
        h = self.linear(x)                                          # (N, out)
        loop = 1.0 if self.add_self_loops else 0.0
        if self.normalize:
            deg = segment_sum(w, dst, num_segments=n) + loop        # (N,) in-degree of A + I
            inv_sqrt = jnp.where(deg > 0, jax.lax.rsqrt(jnp.maximum(deg, 1e-12)), 0.0)
            coef = inv_sqrt[src] * w * inv_sqrt[dst]
            self_coef = loop * inv_sqrt * inv_sqrt
        else:
            coef, self_coef = w, jnp.full((n,), loop, x.dtype)
        out = send_ue_recv(h, coef[:, None], src, dst, message_op="mul", reduce_op="sum", out_size=n)
        out = out + h * self_coef[:, None]
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, normalize={self.normalize}"


class GATConv(nn.Layer):
    """Graph attention (Velickovic et al.): each node attends over its in-neighbors and itself.

    Per head `k`: `h = x W_k`, edge score `e_ij = LeakyReLU(a_src . h_j + a_dst . h_i)`
    for edge `j -> i`, `alpha_ij = softmax_j(e_ij)` over the edges into `i`
    (computed stably with a segment max and a segment sum), then
    `out_i = sum_j alpha_ij h_j`. Heads are concatenated (`concat=True`,
    output `num_heads * out_features`) or averaged. Self-loops already in the
    input are ignored and exactly one is added per node (`add_self_loops`),
    so every node attends to itself once; duplicate edges each get a score.

    Args:
      in_features: input feature size.
      out_features: feature size per head.
      num_heads: number of attention heads.
      concat: keyword-only; concatenate heads (True) or average them.
      negative_slope: keyword-only; LeakyReLU slope of the scores (0.2).
      attn_dropout: keyword-only; dropout on the attention weights in training.
      add_self_loops: keyword-only (default True).
      bias: keyword-only (default True).
      rngs: keyword-only seed (parameters and the dropout stream).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.graph import GATConv
      >>> conv = GATConv(4, 3, num_heads=2)
      >>> conv(jnp.ones((3, 4)), jnp.array([0, 1]), jnp.array([1, 2])).shape
      (3, 6)
    """

    def __init__(self, in_features, out_features, num_heads=1, *, concat=True, negative_slope=0.2,
                 attn_dropout=0.0, add_self_loops=True, bias=True, rngs=None):
        super().__init__()
        self.in_features = _positive_int(in_features, layer="GATConv", name="in_features")
        self.out_features = _positive_int(out_features, layer="GATConv", name="out_features")
        self.num_heads = _positive_int(num_heads, layer="GATConv", name="num_heads")
        self.concat = bool(concat)
        self.negative_slope = float(negative_slope)
        self.add_self_loops = bool(add_self_loops)
        heads, width = self.num_heads, self.out_features
        self.linear = nn.Linear(self.in_features, heads * width, bias_attr=False, rngs=rngs)
        self.att_src = self.create_parameter([heads, width], default_initializer=init.XavierUniform(), rngs=rngs)
        self.att_dst = self.create_parameter([heads, width], default_initializer=init.XavierUniform(), rngs=rngs)
        size = heads * width if self.concat else width
        self.bias = self.create_parameter([size], is_bias=True, rngs=rngs) if bias else None
        self.attn_dropout = nn.Dropout(attn_dropout, rngs=rngs)

    def forward(self, x, src_index, dst_index, *, edge_mask=None):
        """x (N, in) -> (N, heads * out) with concat, else (N, out)."""
        x, src, dst, mask = check_edges(x, src_index, dst_index, edge_mask, layer="GATConv")
        n, heads, width = x.shape[0], self.num_heads, self.out_features
        h = self.linear(x).reshape(n, heads, width)                  # (N, H, C)
        score_src = jnp.sum(h * self.att_src, axis=-1)               # (N, H)
        score_dst = jnp.sum(h * self.att_dst, axis=-1)
        if self.add_self_loops:
            keep = src != dst if mask is None else mask & (src != dst)
            loops = jnp.arange(n, dtype=src.dtype)
            src, dst = jnp.concatenate([src, loops]), jnp.concatenate([dst, loops])
            mask = jnp.concatenate([keep, jnp.ones((n,), bool)])
        seg, rows = _sink(dst, mask, n)
        e = F.leaky_relu(send_uv(score_src, score_dst, src, dst, message_op="add"), self.negative_slope)  # (E, H)
        # Softmax is shift-invariant: the max only keeps exp() in range, no gradient needs to pass it.
        top = jax.lax.stop_gradient(segment_max(e, seg, num_segments=rows))
        p = jnp.exp(e - top[seg])
        alpha = p / segment_sum(p, seg, num_segments=rows)[seg]
        alpha = self.attn_dropout(alpha)
        out = send_ue_recv(h, alpha[:, :, None], src, seg, message_op="mul", reduce_op="sum", out_size=rows)[:n]
        out = out.reshape(n, heads * width) if self.concat else out.mean(axis=1)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, num_heads={self.num_heads}, concat={self.concat}"


class SAGEConv(nn.Layer):
    """GraphSAGE convolution: `out_i = W_neigh aggr_{j -> i} x_j + b + W_root x_i`.

    Works on a whole graph (`x` holds every node) or on a sampled bipartite
    block: the first `num_dst` rows of `x` are the destination nodes, and
    `dst_index` counts from 0 over them (the layout `NeighborSampler` emits).
    A node with no (unmasked) in-edges aggregates to 0.

    Args:
      in_features: input feature size.
      out_features: output feature size.
      aggr: keyword-only "mean" | "max" | "sum" over the in-neighbors.
      root_weight: keyword-only; add `W_root x_i` (default True).
      bias: keyword-only (default True).
      rngs: keyword-only seed.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.graph import SAGEConv
      >>> conv = SAGEConv(4, 2, aggr="max")
      >>> conv(jnp.ones((5, 4)), jnp.array([3, 4]), jnp.array([0, 1]), num_dst=2).shape
      (2, 2)
    """

    def __init__(self, in_features, out_features, *, aggr="mean", root_weight=True, bias=True, rngs=None):
        super().__init__()
        self.in_features = _positive_int(in_features, layer="SAGEConv", name="in_features")
        self.out_features = _positive_int(out_features, layer="SAGEConv", name="out_features")
        if aggr not in SAGE_AGGREGATORS:
            raise _error("SAGEConv", f"`aggr` must be one of {SAGE_AGGREGATORS}; got aggr={aggr!r}")
        self.aggr = aggr
        self.root_weight = bool(root_weight)
        self.lin_neigh = nn.Linear(self.in_features, self.out_features, bias_attr=None if bias else False, rngs=rngs)
        self.lin_root = (nn.Linear(self.in_features, self.out_features, bias_attr=False, rngs=rngs)
                         if root_weight else None)

    def forward(self, x, src_index, dst_index, *, num_dst=None, edge_mask=None):
        """x (N_src, in) -> (num_dst, out); `num_dst` (a Python int) defaults to N_src."""
        n_src = jnp.shape(x)[0]
        if num_dst is None:
            num_dst = n_src
        elif isinstance(num_dst, bool) or not isinstance(num_dst, (int, np.integer)) or not 0 < num_dst <= n_src:
            raise _error("SAGEConv", f"`num_dst` must be a Python int in [1, {n_src}] (the destination nodes are "
                                     f"the first num_dst rows of x); got num_dst={num_dst!r}")
        num_dst = int(num_dst)
        x, src, dst, mask = check_edges(x, src_index, dst_index, edge_mask, layer="SAGEConv", num_dst=num_dst)
        seg, rows = _sink(dst, mask, num_dst)
        agg = send_u_recv(x, src, seg, reduce_op=self.aggr, out_size=rows)[:num_dst]
        out = self.lin_neigh(agg)
        if self.lin_root is not None:
            out = out + self.lin_root(x[:num_dst])
        return out

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, aggr={self.aggr}"
