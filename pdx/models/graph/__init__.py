"""pdx.models.graph: graph neural networks for node classification, and neighbor sampling.

    GCNConv, GATConv, SAGEConv       message-passing layers over an edge list (pdx.geometric underneath)
    GCN, GAT, GraphSAGE, PRESETS     node classifiers (zoo names "gcn", "gat", "graphsage")
    NeighborSampler, SampledBatch, Block    fixed-shape sampled minibatches for GraphSAGE
"""

from pdx.models._zoo import register
from pdx.models.graph._conv import GATConv, GCNConv, SAGEConv
from pdx.models.graph._model import GAT, GCN, PRESETS, GraphSAGE
from pdx.models.graph._sampler import Block, NeighborSampler, SampledBatch

__all__ = [
    "PRESETS",
    "Block",
    "GAT",
    "GATConv",
    "GCN",
    "GCNConv",
    "GraphSAGE",
    "NeighborSampler",
    "SAGEConv",
    "SampledBatch",
]


def _preset(cls, name):
    def build(**overrides):
        return cls(**{**PRESETS[name], **overrides})

    return build


_DESCRIPTIONS = {
    "gcn": (GCN, "2-layer graph convolutional network (Kipf & Welling), Cora-sized"),
    "gat": (GAT, "2-layer graph attention network, 8 heads x 8 hidden, Cora-sized"),
    "graphsage": (GraphSAGE, "2-layer GraphSAGE, mean aggregator; trains on NeighborSampler minibatches"),
}
for _name, (_cls, _text) in _DESCRIPTIONS.items():
    register(_name, _preset(_cls, _name), family="graph", task="node-classification",
             config=PRESETS[_name], description=_text,
             inputs=(f"x:2708,{PRESETS[_name]['in_features']}:float32", "src_index:None:int32", "dst_index:None:int32"))
del _name, _cls, _text
