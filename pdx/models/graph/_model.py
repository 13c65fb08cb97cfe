"""Node-classification networks: GCN, GAT and GraphSAGE (stacks of graph convolutions).

Each model maps node features (N, F) and an edge list to per-node logits
(N, num_classes): dropout before every convolution, an activation between
them. GraphSAGE also runs on the fixed-shape blocks of `NeighborSampler`
(`forward_blocks`), so minibatch training compiles one step.
"""

from __future__ import annotations

import pdx.nn.functional as F
from pdx import nn
from pdx.models.graph._conv import GATConv, GCNConv, SAGEConv, _error, _positive_int

__all__ = ["GAT", "GCN", "PRESETS", "GraphSAGE"]


PRESETS = {
    "gcn": dict(in_features=1433, hidden_features=16, num_classes=7, num_layers=2, dropout=0.5),
    "gat": dict(in_features=1433, hidden_features=8, num_classes=7, num_layers=2, dropout=0.6,
                num_heads=8, out_heads=1, attn_dropout=0.6),
    "graphsage": dict(in_features=1433, hidden_features=128, num_classes=7, num_layers=2, dropout=0.5,
                      aggr="mean"),
}


def _check_common(layer, num_layers, dropout):
    num_layers = _positive_int(num_layers, layer=layer, name="num_layers")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise _error(layer, f"`dropout` must be a float in [0, 1); got dropout={dropout!r}")
    return num_layers, float(dropout)


class GCN(nn.Layer):
    """A stack of `GCNConv`s with ReLU and dropout (Kipf & Welling's node classifier).

    Args:
      in_features, hidden_features, num_classes: layer sizes.
      num_layers: keyword-only number of convolutions (2).
      dropout: keyword-only dropout before every convolution (0.5).
      rngs: keyword-only seed.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.graph import GCN
      >>> GCN(4, 8, 3)(jnp.ones((5, 4)), jnp.array([0, 1]), jnp.array([1, 2])).shape
      (5, 3)
    """

    def __init__(self, in_features, hidden_features, num_classes, *, num_layers=2, dropout=0.5, rngs=None):
        super().__init__()
        num_layers, dropout = _check_common("GCN", num_layers, dropout)
        sizes = [in_features] + [hidden_features] * (num_layers - 1) + [num_classes]
        self.convs = nn.LayerList([GCNConv(a, b, rngs=rngs) for a, b in zip(sizes[:-1], sizes[1:])])
        self.dropout = nn.Dropout(dropout, rngs=rngs)

    def forward(self, x, src_index, dst_index, *, edge_weight=None, edge_mask=None):
        """x (N, in_features) -> logits (N, num_classes)."""
        last = len(self.convs) - 1
        for i, conv in enumerate(self.convs):
            x = conv(self.dropout(x), src_index, dst_index, edge_weight=edge_weight, edge_mask=edge_mask)
            if i < last:
                x = F.relu(x)
        return x


class GAT(nn.Layer):
    """A stack of `GATConv`s: concatenated heads with ELU inside, averaged heads at the output.

    Args:
      in_features: input feature size.
      hidden_features: feature size per head of the hidden layers.
      num_classes: output classes.
      num_layers: keyword-only number of convolutions (2).
      num_heads: keyword-only heads of the hidden layers (8).
      out_heads: keyword-only heads of the output layer, averaged (1).
      dropout: keyword-only feature dropout before every convolution (0.6).
      attn_dropout: keyword-only dropout on attention weights (0.6).
      rngs: keyword-only seed.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.graph import GAT
      >>> GAT(4, 8, 3, num_heads=2)(jnp.ones((5, 4)), jnp.array([0, 1]), jnp.array([1, 2])).shape
      (5, 3)
    """

    def __init__(self, in_features, hidden_features, num_classes, *, num_layers=2, num_heads=8, out_heads=1,
                 dropout=0.6, attn_dropout=0.6, rngs=None):
        super().__init__()
        num_layers, dropout = _check_common("GAT", num_layers, dropout)
        num_heads = _positive_int(num_heads, layer="GAT", name="num_heads")
        convs, size = [], in_features
        for _ in range(num_layers - 1):
            convs.append(GATConv(size, hidden_features, num_heads, attn_dropout=attn_dropout, rngs=rngs))
            size = hidden_features * num_heads
        convs.append(GATConv(size, num_classes, out_heads, concat=False, attn_dropout=attn_dropout, rngs=rngs))
        self.convs = nn.LayerList(convs)
        self.dropout = nn.Dropout(dropout, rngs=rngs)

    def forward(self, x, src_index, dst_index, *, edge_mask=None):
        """x (N, in_features) -> logits (N, num_classes)."""
        last = len(self.convs) - 1
        for i, conv in enumerate(self.convs):
            x = conv(self.dropout(x), src_index, dst_index, edge_mask=edge_mask)
            if i < last:
                x = F.elu(x)
        return x


class GraphSAGE(nn.Layer):
    """A stack of `SAGEConv`s with ReLU and dropout; full-graph or on sampled blocks.

    Args:
      in_features, hidden_features, num_classes: layer sizes.
      num_layers: keyword-only number of convolutions (2); a sampler for it
        needs one fan-out per layer.
      aggr: keyword-only "mean" | "max" | "sum".
      dropout: keyword-only dropout before every convolution (0.5).
      rngs: keyword-only seed.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.graph import GraphSAGE
      >>> GraphSAGE(4, 8, 3)(jnp.ones((5, 4)), jnp.array([0, 1]), jnp.array([1, 2])).shape
      (5, 3)
    """

    def __init__(self, in_features, hidden_features, num_classes, *, num_layers=2, aggr="mean", dropout=0.5,
                 rngs=None):
        super().__init__()
        num_layers, dropout = _check_common("GraphSAGE", num_layers, dropout)
        sizes = [in_features] + [hidden_features] * (num_layers - 1) + [num_classes]
        self.convs = nn.LayerList([SAGEConv(a, b, aggr=aggr, rngs=rngs) for a, b in zip(sizes[:-1], sizes[1:])])
        self.dropout = nn.Dropout(dropout, rngs=rngs)

    def forward(self, x, src_index, dst_index, *, edge_mask=None):
        """Whole graph: x (N, in_features) -> logits (N, num_classes)."""
        last = len(self.convs) - 1
        for i, conv in enumerate(self.convs):
            x = conv(self.dropout(x), src_index, dst_index, edge_mask=edge_mask)
            if i < last:
                x = F.relu(x)
        return x

    def forward_blocks(self, x, blocks):
        """Sampled minibatch: x (N_0, in_features) are the features of `batch.input_nodes`.

        Args:
          x: features of the first block's source nodes.
          blocks: `SampledBatch.blocks`, one `Block` per layer, input side first.

        Returns:
          logits (B, num_classes) for the batch's seed nodes (padded rows included).
        """
        if len(blocks) != len(self.convs):
            raise _error("GraphSAGE", f"got {len(blocks)} blocks for {len(self.convs)} layers; sample one "
                                      "fan-out per layer (NeighborSampler(..., fanouts=[k] * num_layers))")
        last = len(self.convs) - 1
        for i, (conv, block) in enumerate(zip(self.convs, blocks)):
            src, dst, mask = block.edges()
            x = conv(self.dropout(x), src, dst, num_dst=block.num_dst, edge_mask=mask)
            if i < last:
                x = F.relu(x)
        return x
