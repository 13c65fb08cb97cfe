"""Graph reindexing and neighbor sampling (eager: their output sizes live in the data).

Both run on the host with numpy, as Paddle's CPU kernels do; calling them
under jit raises a ValueError that says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pdx._random import next_key
from pdx._args import op_error

__all__ = ["reindex_graph", "reindex_heter_graph", "sample_neighbors", "weighted_sample_neighbors"]


def _host_ints(value, name: str, op: str, *, ndim: int = 1) -> np.ndarray:
    if isinstance(value, jax.core.Tracer):
        raise op_error(op, f"`{name}` is traced: {op} has data-dependent output sizes and runs eagerly only "
                           "(call it outside jit, e.g. in the data pipeline)")
    arr = np.asarray(value)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"pdx.{op}: `{name}` must be an int32/int64 tensor; got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise op_error(op, f"`{name}` must be {ndim}-D; got shape {arr.shape}")
    return arr


def _reindex(x, neighbors_list, count_list, op: str):
    xs = _host_ints(x, "x", op)
    nodes = list(xs.tolist())
    position = {v: i for i, v in enumerate(nodes)}
    if len(position) != len(nodes):
        raise op_error(op, f"`x` must hold unique node ids; got {xs.tolist()}")
    srcs, dsts = [], []
    for neighbors, count in zip(neighbors_list, count_list):
        nb = _host_ints(neighbors, "neighbors", op)
        ct = _host_ints(count, "count", op)
        if ct.shape[0] != xs.shape[0] or ct.sum() != nb.shape[0] or (ct < 0).any():
            raise op_error(op, f"`count` must give one non-negative neighbor count per node of x, summing to "
                               f"len(neighbors)={nb.shape[0]}; got count={ct.tolist()} for {xs.shape[0]} nodes")
        for v in nb.tolist():
            if v not in position:
                position[v] = len(nodes)
                nodes.append(v)
        srcs.append(np.asarray([position[v] for v in nb.tolist()], dtype=np.int64))
        dsts.append(np.repeat(np.arange(xs.shape[0], dtype=np.int64), ct))
    dtype = jnp.asarray(xs[:0]).dtype
    # device_put of host arrays: jnp.asarray compiles a copy for every new length.
    cat = (lambda parts: np.concatenate(parts).astype(dtype) if parts else np.zeros((0,), dtype))
    return (jax.device_put(cat(srcs)), jax.device_put(cat(dsts)), jax.device_put(np.asarray(nodes, dtype)))


def reindex_graph(x, neighbors, count, value_buffer=None, index_buffer=None, name=None):
    """Renumber the nodes of a sampled subgraph from 0 (eager only).

    Input nodes `x` keep ids `0..len(x)-1`; new neighbor ids follow in order of
    first appearance. `value_buffer` / `index_buffer` (Paddle's GPU hash-table
    buffers) are accepted and unused.

    Returns:
      `(reindex_src, reindex_dst, out_nodes)`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> src, dst, nodes = pdx.geometric.reindex_graph(
        ...     jnp.array([0, 1, 2]), jnp.array([8, 9, 0, 4, 7, 6, 7]), jnp.array([2, 3, 2]))
        >>> src.tolist(), dst.tolist(), nodes.tolist()
        ([3, 4, 0, 5, 6, 7, 6], [0, 0, 1, 1, 1, 2, 2], [0, 1, 2, 8, 9, 4, 7, 6])
    """
    return _reindex(x, [neighbors], [count], "geometric.reindex_graph")


def reindex_heter_graph(x, neighbors, count, value_buffer=None, index_buffer=None, name=None):
    """`reindex_graph` over several edge types sharing one node numbering (eager only).

    Args:
      x: the input nodes.
      neighbors: a list of neighbor tensors, one per edge type.
      count: a list of count tensors, one per edge type.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> src, dst, nodes = pdx.geometric.reindex_heter_graph(
        ...     jnp.array([0, 1, 2]), [jnp.array([8, 9, 0, 4, 7, 6, 7]), jnp.array([0, 2, 3, 5, 1])],
        ...     [jnp.array([2, 3, 2]), jnp.array([1, 3, 1])])
        >>> nodes.tolist()
        [0, 1, 2, 8, 9, 4, 7, 6, 3, 5]
    """
    op = "geometric.reindex_heter_graph"
    if not isinstance(neighbors, Sequence) or not isinstance(count, Sequence) or len(neighbors) != len(count):
        raise op_error(op, "`neighbors` and `count` must be lists of the same length (one tensor per edge type); "
                           f"got {type(neighbors).__name__} and {type(count).__name__}")
    return _reindex(x, list(neighbors), list(count), op)


def _sample(row, colptr, weights, input_nodes, sample_size, eids, return_eids, key, op):
    row = _host_ints(row, "row", op)
    colptr = _host_ints(colptr, "colptr", op)
    nodes = _host_ints(input_nodes, "input_nodes", op)
    if not isinstance(sample_size, (int, np.integer)) or (sample_size < 1 and sample_size != -1):
        raise op_error(op, f"`sample_size` must be a positive int or -1 (all neighbors); got {sample_size!r}")
    if return_eids and eids is None:
        raise op_error(op, "`eids` must be given when return_eids=True")
    if nodes.size and (nodes.min() < 0 or nodes.max() >= colptr.shape[0] - 1):
        raise op_error(op, f"`input_nodes` must lie in [0, {colptr.shape[0] - 1}) (the graph's nodes); got {nodes.tolist()}")
    if weights is not None:
        if isinstance(weights, jax.core.Tracer):
            raise op_error(op, "`edge_weight` is traced: sampling runs eagerly only")
        weights = np.asarray(weights, np.float64)
        if weights.shape != row.shape:
            raise op_error(op, f"`edge_weight` must have one weight per edge, shape {row.shape}; got {weights.shape}")
    eid_arr = None if eids is None else _host_ints(eids, "eids", op)
    key = next_key(key, op=op)
    # One random score per edge; the k best scores of a node's edges are its sample.
    # With weights, log(w) + Gumbel noise samples without replacement proportional to w.
    u = np.asarray(jax.random.uniform(key, (row.shape[0],), minval=1e-12, maxval=1.0), np.float64)
    score = -np.log(-np.log(u))
    if weights is not None:
        with np.errstate(divide="ignore"):
            score = score + np.log(weights)
    picked, counts = [], []
    for n in nodes.tolist():
        lo, hi = int(colptr[n]), int(colptr[n + 1])
        if sample_size == -1 or hi - lo <= sample_size:
            sel = np.arange(lo, hi)
        else:
            sel = lo + np.sort(np.argsort(-score[lo:hi], kind="stable")[:sample_size])
        picked.append(sel)
        counts.append(sel.shape[0])
    picked = np.concatenate(picked) if picked else np.zeros((0,), np.int64)
    # Cast on the host and device_put: jnp.asarray compiles a copy for every new length.
    out = (jax.device_put(row[picked].astype(jnp.asarray(row[:0]).dtype)), jax.device_put(np.asarray(counts, np.int32)))
    if return_eids:
        out = out + (jax.device_put(eid_arr[picked].astype(jnp.asarray(eid_arr[:0]).dtype)),)
    return out


def sample_neighbors(row, colptr, input_nodes, sample_size=-1, eids=None, return_eids=False,
                     perm_buffer=None, name=None, *, key=None):
    """Sample up to `sample_size` in-neighbors of each input node of a CSC graph (eager only).

    Args:
      row, colptr: the graph in CSC form (neighbors of node n are
        `row[colptr[n]:colptr[n+1]]`).
      input_nodes: the nodes to sample for.
      sample_size: neighbors per node, without replacement; -1 takes all.
      eids, return_eids: edge ids, returned for the sampled edges when asked.
      perm_buffer: Paddle's GPU buffer; accepted and unused.
      key: keyword-only JAX PRNG key (default: split from the global generator, `pdx.seed`).

    Returns:
      `(out_neighbors, out_count)` or `(out_neighbors, out_count, out_eids)`;
      `out_count` is int32.

    Example:
        >>> import pdx, jax, jax.numpy as jnp
        >>> row = jnp.array([3, 7, 0, 9, 1]); colptr = jnp.array([0, 2, 4, 5, 5])
        >>> nb, cnt = pdx.geometric.sample_neighbors(row, colptr, jnp.array([0, 3]), 1, key=jax.random.key(0))
        >>> cnt.tolist()
        [1, 0]
    """
    return _sample(row, colptr, None, input_nodes, sample_size, eids, return_eids, key,
                   "geometric.sample_neighbors")


def weighted_sample_neighbors(row, colptr, edge_weight, input_nodes, sample_size=-1, eids=None,
                              return_eids=False, name=None, *, key=None):
    """Like `sample_neighbors`, picking edges with probability proportional to `edge_weight`.

    Sampling is without replacement (Gumbel top-k over log-weights); eager only.

    Example:
        >>> import pdx, jax, jax.numpy as jnp
        >>> row = jnp.array([3, 7, 0, 9, 1]); colptr = jnp.array([0, 2, 4, 5, 5])
        >>> w = jnp.array([1., 0., 1., 1., 1.])
        >>> nb, cnt = pdx.geometric.weighted_sample_neighbors(row, colptr, w, jnp.array([0]), 1, key=jax.random.key(0))
        >>> nb.tolist()
        [3]
    """
    return _sample(row, colptr, edge_weight, input_nodes, sample_size, eids, return_eids, key,
                   "geometric.weighted_sample_neighbors")
