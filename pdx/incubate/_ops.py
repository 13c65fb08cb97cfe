"""paddle.incubate's ops: fused softmax-with-mask, identity_loss and the graph ops' older names.

The graph and segment ops are `pdx.geometric`'s under Paddle's incubate names
and argument orders (`graph_send_recv(..., pool_type=)`,
`graph_sample_neighbors(row, colptr, input_nodes, eids, perm_buffer, sample_size, ...)`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx import _random, geometric
from pdx._args import as_array

__all__ = ["graph_khop_sampler", "graph_reindex", "graph_sample_neighbors", "graph_send_recv", "identity_loss",
           "softmax_mask_fuse", "softmax_mask_fuse_upper_triangle"]


def _error(op: str, message: str) -> ValueError:
    return ValueError(f"pdx.incubate.{op}: {message}")


def softmax_mask_fuse(x, mask, name=None):
    """softmax(x + mask) over the last axis (x [batch, heads, q, k], mask [batch, 1, q, k]).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> pdx.incubate.softmax_mask_fuse(jnp.zeros((1, 1, 1, 2)), jnp.array([[[[0.0, -1e4]]]])).tolist()
      [[[[1.0, 0.0]]]]
    """
    x = as_array(x, name="x", op="incubate.softmax_mask_fuse")
    mask = as_array(mask, name="mask", op="incubate.softmax_mask_fuse")
    if x.ndim != 4 or mask.ndim != 4:
        raise _error("softmax_mask_fuse", f"x and mask must be 4-D ([batch, heads, q, k] and [batch, 1, q, k]); got "
                                          f"x.shape={tuple(x.shape)}, mask.shape={tuple(mask.shape)}")
    return jax.nn.softmax((x + mask.astype(x.dtype)).astype(jnp.float32), axis=-1).astype(x.dtype)


def softmax_mask_fuse_upper_triangle(x):
    """Causal softmax: softmax over the last axis with key j > query i masked out (x [batch, heads, q, k]).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> pdx.incubate.softmax_mask_fuse_upper_triangle(jnp.zeros((1, 1, 2, 2)))[0, 0].tolist()
      [[1.0, 0.0], [0.5, 0.5]]
    """
    x = as_array(x, name="x", op="incubate.softmax_mask_fuse_upper_triangle")
    if x.ndim != 4:
        raise _error("softmax_mask_fuse_upper_triangle", f"x must be [batch, heads, q, k]; got x.shape={tuple(x.shape)}")
    q, k = x.shape[-2:]
    keep = jnp.arange(k)[None, :] <= jnp.arange(q)[:, None]
    logits = jnp.where(keep, x.astype(jnp.float32), -jnp.inf)
    return jax.nn.softmax(logits, axis=-1).astype(x.dtype)


_REDUCTIONS = {0: "sum", 1: "mean", 2: "none", "sum": "sum", "mean": "mean", "none": "none"}


def identity_loss(x, reduction="none"):
    """Mark `x` as the loss (Paddle's IPU helper): its sum, mean, or x itself.

    Args:
      x: the loss values.
      reduction: 'sum' / 0, 'mean' / 1 or 'none' / 2.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> float(pdx.incubate.identity_loss(jnp.array([1.0, 3.0]), "mean"))
      2.0
    """
    key = reduction.lower() if isinstance(reduction, str) else reduction
    if isinstance(key, bool) or key not in _REDUCTIONS:
        raise _error("identity_loss", f"reduction must be 'sum' (0), 'mean' (1) or 'none' (2); got reduction={reduction!r}")
    x = as_array(x, name="x", op="incubate.identity_loss")
    mode = _REDUCTIONS[key]
    return jnp.sum(x) if mode == "sum" else jnp.mean(x) if mode == "mean" else x


def graph_send_recv(x, src_index, dst_index, pool_type="sum", out_size=None, name=None):
    """`pdx.geometric.send_u_recv` under its older name: gather x[src], reduce onto dst with `pool_type`.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> x = jnp.array([[1.0], [2.0], [3.0]])
      >>> pdx.incubate.graph_send_recv(x, jnp.array([0, 1]), jnp.array([1, 1]), "sum").tolist()
      [[0.0], [3.0], [0.0]]
    """
    if not isinstance(pool_type, str):
        raise _error("graph_send_recv", f"pool_type must be 'sum', 'mean', 'max' or 'min'; got pool_type={pool_type!r}")
    return geometric.send_u_recv(x, src_index, dst_index, reduce_op=pool_type.lower(), out_size=out_size)


def graph_sample_neighbors(row, colptr, input_nodes, eids=None, perm_buffer=None, sample_size=-1, return_eids=False,
                           flag_perm_buffer=False, name=None, *, key=None):
    """`pdx.geometric.sample_neighbors` with Paddle's incubate argument order (eager only).

    Returns:
      (out_neighbors, out_count) or (out_neighbors, out_count, out_eids) with return_eids=True.

    Example:
      >>> import jax, jax.numpy as jnp, pdx
      >>> row = jnp.array([3, 7, 0, 9, 1]); colptr = jnp.array([0, 2, 4, 5, 5])
      >>> nb, cnt = pdx.incubate.graph_sample_neighbors(row, colptr, jnp.array([0, 2]), key=jax.random.key(0))
      >>> cnt.tolist()
      [2, 1]
    """
    return geometric.sample_neighbors(row, colptr, input_nodes, sample_size=sample_size, eids=eids,
                                      return_eids=return_eids, key=key)


def graph_reindex(x, neighbors, count, value_buffer=None, index_buffer=None, flag_buffer_hashtable=False, name=None):
    """`pdx.geometric.reindex_graph` under its older name: (reindex_src, reindex_dst, out_nodes) (eager only).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> src, dst, nodes = pdx.incubate.graph_reindex(jnp.array([0, 1]), jnp.array([8, 1, 0]), jnp.array([2, 1]))
      >>> nodes.tolist()
      [0, 1, 8]
    """
    return geometric.reindex_graph(x, neighbors, count)


def _host_ints(value, name: str):
    if isinstance(value, jax.core.Tracer):
        raise _error("graph_khop_sampler", f"`{name}` is traced: sampling has data-dependent sizes and runs eagerly")
    arr = np.asarray(value)
    if not np.issubdtype(arr.dtype, np.integer):
        raise _error("graph_khop_sampler", f"`{name}` must be an int32/int64 tensor; got dtype {arr.dtype}")
    return arr.reshape(-1)


def graph_khop_sampler(row, colptr, input_nodes, sample_sizes, sorted_eids=None, return_eids=False, name=None, *,
                       key=None):
    """Sample a k-hop subgraph around `input_nodes` of a CSC graph and reindex it (eager only).

    Hop i samples up to `sample_sizes[i]` in-neighbors (-1: all) of the nodes first reached in
    hop i - 1 (hop 0: the input nodes). Nodes are numbered in order of first appearance: the input
    nodes first, then each hop's new neighbors.

    Args:
      row, colptr: the graph in CSC form; input_nodes: the seed nodes.
      sample_sizes: one int per hop.
      sorted_eids: edge ids (required with return_eids=True).
      key: keyword-only JAX PRNG key (default: the global generator, `pdx.seed`).

    Returns:
      (edge_src [E, 1], edge_dst [E, 1], sample_index, reindex_nodes[, edge_eids [E, 1]]): the
      sampled edges in the new numbering, the original id of every new index, and the new index
      of each input node.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> row = jnp.array([3, 7, 0, 9, 1, 4, 2, 9, 3, 9, 1, 9, 7])
      >>> colptr = jnp.array([0, 2, 4, 5, 6, 7, 9, 11, 11, 13, 13])
      >>> src, dst, nodes, idx = pdx.incubate.graph_khop_sampler(row, colptr, jnp.array([0, 8, 1, 2]), [-1])
      >>> nodes.tolist()
      [0, 8, 1, 2, 3, 7, 9]
    """
    op = "graph_khop_sampler"
    if not isinstance(sample_sizes, (list, tuple)) or not sample_sizes or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) and (s > 0 or s == -1) for s in sample_sizes):
        raise _error(op, f"sample_sizes must be a non-empty list of positive ints (or -1 for all); got {sample_sizes!r}")
    if return_eids and sorted_eids is None:
        raise _error(op, "`sorted_eids` must be given when return_eids=True")
    seeds = _host_ints(input_nodes, "input_nodes")
    dtype = np.asarray(row).dtype
    keys = jax.random.split(_random.next_key(key, op="incubate.graph_khop_sampler"), len(sample_sizes))
    index = {}
    order = []
    for n in seeds.tolist():
        if n not in index:
            index[n] = len(order)
            order.append(n)
    frontier = list(order)
    src, dst, eids = [], [], []
    for size, k in zip(sample_sizes, keys):
        if not frontier:
            break
        out = geometric.sample_neighbors(row, colptr, np.asarray(frontier, dtype), sample_size=int(size),
                                         eids=sorted_eids, return_eids=return_eids, key=k)
        neighbors, counts = np.asarray(out[0]).tolist(), np.asarray(out[1]).tolist()
        new = []
        for node, c, start in zip(frontier, counts, np.cumsum([0] + counts[:-1]).tolist()):
            for nb in neighbors[start:start + c]:
                if nb not in index:
                    index[nb] = len(order)
                    order.append(nb)
                    new.append(nb)
                src.append(index[nb])
                dst.append(index[node])
        if return_eids:
            eids.extend(np.asarray(out[2]).tolist())
        frontier = new
    column = lambda v: jax.device_put(np.asarray(v, dtype).reshape(-1, 1))
    result = (column(src), column(dst), jax.device_put(np.asarray(order, dtype)),
              jax.device_put(np.asarray([index[n] for n in seeds.tolist()], dtype)))
    return result + (column(eids),) if return_eids else result
