"""Neighbor sampling for minibatch GraphSAGE: fixed-shape blocks from a CSC graph, on the host.

`NeighborSampler` stores the graph as CSC (the in-neighbors of node n are
`row[colptr[n]:colptr[n + 1]]`), draws up to `fanouts[h]` in-neighbors per
node at hop h from the seeds with `pdx.geometric.sample_neighbors` (without
replacement) and renumbers each hop's nodes with `pdx.geometric.reindex_graph`
(the previous hop's nodes first, so a block's destination nodes are the first
rows of its source nodes). Every array is padded to a size fixed by
`batch_size` and the fan-outs alone, so a jitted train step sees one shape
for every batch and compiles once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from pdx.geometric import reindex_graph, sample_neighbors

__all__ = ["Block", "NeighborSampler", "SampledBatch"]


class Block(NamedTuple):
    """One layer's bipartite graph: source nodes (the layer's input rows) -> destination nodes.

    Destination node i is source node i; its sampled in-neighbors are
    `neighbors[i, :]` (source-node positions), real where `mask[i, :]`.
    """

    neighbors: np.ndarray  # (num_dst, fanout) int32
    mask: np.ndarray       # (num_dst, fanout) bool

    @property
    def num_dst(self) -> int:
        return self.neighbors.shape[0]

    @property
    def fanout(self) -> int:
        return self.neighbors.shape[1]

    def edges(self):
        """(src_index, dst_index, edge_mask), each (num_dst * fanout,): the block as an edge list."""
        num_dst, fanout = self.neighbors.shape
        dst = jnp.repeat(jnp.arange(num_dst, dtype=jnp.int32), fanout)
        return jnp.reshape(self.neighbors, (-1,)), dst, jnp.reshape(self.mask, (-1,))


class SampledBatch(NamedTuple):
    """A sampled minibatch: gather `features[input_nodes]`, run the blocks, read the seeds' rows.

    Padded entries of `input_nodes` and `seeds` hold node 0 and are never a
    real neighbor; `seed_mask` marks the real seeds (all but the tail of a
    short last batch).
    """

    input_nodes: np.ndarray      # (N_0,) int32 graph ids of the first block's source nodes
    blocks: tuple[Block, ...]    # one per layer, input side first
    seeds: np.ndarray            # (batch_size,) int32 graph ids
    seed_mask: np.ndarray        # (batch_size,) bool


def _error(message: str) -> ValueError:
    return ValueError(f"pdx.models.graph.NeighborSampler: {message}")


class NeighborSampler:
    """Sample fixed fan-out neighborhoods of seed nodes (GraphSAGE minibatches), on the host.

    Args:
      src_index, dst_index: the edges `src -> dst` (int arrays, shape (E,));
        a node's neighbors are the sources of its in-edges.
      num_nodes: number of nodes of the graph.
      fanouts: neighbors sampled per node at each hop, seeds outward:
        `fanouts[0]` for the seeds (the last layer's block), `fanouts[1]`
        for their neighbors, ... One per GraphSAGE layer.
      batch_size: keyword-only seeds per batch; every batch is padded to it.
      seed: keyword-only seed of the neighbor draws and of the shuffling.

    Example:
      >>> import numpy as np
      >>> from pdx.models.graph import NeighborSampler
      >>> s = NeighborSampler(np.array([1, 2, 0]), np.array([0, 0, 1]), 3, [2], batch_size=2)
      >>> b = s.sample(np.array([0]))
      >>> b.blocks[0].neighbors.shape, b.input_nodes.shape, b.seed_mask.tolist()
      ((2, 2), (3,), [True, False])
    """

    def __init__(self, src_index, dst_index, num_nodes: int, fanouts: Sequence[int], *, batch_size: int,
                 seed: int = 0):
        src, dst = np.asarray(src_index), np.asarray(dst_index)
        if src.ndim != 1 or src.shape != dst.shape or not (np.issubdtype(src.dtype, np.integer)
                                                          and np.issubdtype(dst.dtype, np.integer)):
            raise _error(f"`src_index` and `dst_index` must be 1-D int arrays of one length; "
                         f"got {src.shape} {src.dtype} and {dst.shape} {dst.dtype}")
        if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)) or num_nodes < 1:
            raise _error(f"`num_nodes` must be a positive int; got num_nodes={num_nodes!r}")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
            raise _error(f"edge ids must lie in [0, num_nodes={num_nodes}); got ids in "
                         f"[{min(src.min(), dst.min())}, {max(src.max(), dst.max())}]")
        fanouts = tuple(fanouts)
        if not fanouts or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in fanouts):
            raise _error(f"`fanouts` must be a non-empty list of positive ints (one per layer); got {list(fanouts)}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise _error(f"`batch_size` must be a positive int; got batch_size={batch_size!r}")
        self.num_nodes = int(num_nodes)
        self.fanouts = tuple(int(k) for k in fanouts)
        self.batch_size = int(batch_size)
        order = np.argsort(dst, kind="stable")
        self.row = src[order].astype(np.int32)
        self.colptr = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=self.num_nodes))]).astype(np.int32)
        self._key = jax.random.key(seed)
        self._shuffle = np.random.default_rng(seed)
        # Padded node count per hop: each node brings at most `k` new ones, never more than the graph has.
        sizes = [self.batch_size]
        for k in self.fanouts:
            sizes.append(min(sizes[-1] * (1 + k), max(self.num_nodes, sizes[-1])))
        self.sizes = tuple(sizes)  # seeds first

    def sample(self, seeds) -> SampledBatch:
        """Sample the blocks for up to `batch_size` distinct seed nodes."""
        seeds = np.asarray(seeds)
        if seeds.ndim != 1 or not np.issubdtype(seeds.dtype, np.integer) or not 0 < seeds.size <= self.batch_size:
            raise _error(f"`seeds` must be a 1-D int array of 1..batch_size={self.batch_size} node ids; "
                         f"got shape {seeds.shape}, dtype {seeds.dtype}")
        if seeds.min() < 0 or seeds.max() >= self.num_nodes or np.unique(seeds).size != seeds.size:
            raise _error(f"`seeds` must be distinct node ids in [0, {self.num_nodes}); got {seeds.tolist()[:16]}")
        nodes = seeds.astype(np.int32)
        blocks = []
        for hop, k in enumerate(self.fanouts):
            self._key, key = jax.random.split(self._key)
            nb, count = sample_neighbors(self.row, self.colptr, nodes, k, key=key)
            src, dst, out_nodes = (np.asarray(a) for a in reindex_graph(nodes, np.asarray(nb), np.asarray(count)))
            count = np.asarray(count)
            # reindex_graph lists each node's neighbors contiguously, in node order: column = rank within node.
            col = np.arange(dst.shape[0]) - np.repeat(np.cumsum(count) - count, count)
            grid = np.zeros((self.sizes[hop], k), np.int32)
            mask = np.zeros((self.sizes[hop], k), bool)
            grid[dst, col] = src
            mask[dst, col] = True
            blocks.append(Block(grid, mask))
            nodes = out_nodes
        input_nodes = np.zeros((self.sizes[-1],), np.int32)
        input_nodes[:nodes.shape[0]] = nodes
        padded = np.zeros((self.batch_size,), np.int32)
        padded[:seeds.size] = seeds
        return SampledBatch(input_nodes, tuple(reversed(blocks)), padded, np.arange(self.batch_size) < seeds.size)

    def batches(self, nodes, *, shuffle: bool = True) -> Iterator[SampledBatch]:
        """One epoch over `nodes` in batches of `batch_size` (the last one padded)."""
        nodes = np.asarray(nodes)
        if shuffle:
            nodes = self._shuffle.permutation(nodes)
        for i in range(0, nodes.shape[0], self.batch_size):
            yield self.sample(nodes[i:i + self.batch_size])
