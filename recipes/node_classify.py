"""Node classification with GCN, GAT and GraphSAGE (neighbor-sampled minibatches), beside an MLP.

Two datasets, generated locally with networkx:

- a stochastic block model: `blocks` communities of `block_size` nodes, edge
  probability `p_in` inside a community and `p_out` across. The label is the
  community; node features are a weak, noisy one-hot of it (`signal` against
  unit Gaussian noise in `feature_dim` dims), so features alone classify
  poorly (the MLP row) and the graph has to carry the answer.
- Zachary's karate club: 34 members, the label is the club each joined after
  the split, features are one-hot node ids, `karate_labeled` members per club
  are labeled.

GCN and GAT train full-batch; GraphSAGE trains on `NeighborSampler` minibatches
(fixed fan-outs, padded fixed-shape blocks: one compiled step). Every model is
evaluated on the whole graph on the held-out nodes. The SBM GCN is exported
(`pdx.export`, the graph fixed inside the program) and its output checked
against the eager model.

    python recipes/node_classify.py                 # well under a minute on a 2-core CPU
    python recipes/node_classify.py --p-out 0.01    # a harder graph
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

import pdx
import pdx.nn.functional as F
from pdx import nn
from pdx.jit import InputSpec
from pdx.models.graph import GAT, GCN, GraphSAGE, NeighborSampler


@dataclasses.dataclass(frozen=True)
class NodeClassifyConfig:
    blocks: int = 5                # SBM communities (= classes)
    block_size: int = 300          # nodes per community
    p_in: float = 0.04             # edge probability inside a community
    p_out: float = 0.005           # edge probability across communities
    feature_dim: int = 32          # node feature size
    signal: float = 0.7            # one-hot strength of the label in the features (noise std is 1)
    train_fraction: float = 0.2    # labeled SBM nodes; the rest are the test set
    karate_labeled: int = 3        # labeled karate members per club; the other members are the test set
    hidden: int = 16               # hidden size of GCN and the MLP
    gat_hidden: int = 8            # GAT hidden size per head
    gat_heads: int = 8             # GAT heads
    epochs: int = 150              # full-batch steps for GCN, GAT and the MLP
    sage_hidden: int = 64          # GraphSAGE hidden size
    sage_epochs: int = 30          # GraphSAGE epochs over the labeled nodes
    fanouts: tuple = (10, 10)      # GraphSAGE neighbors per node, seeds outward
    batch_size: int = 64           # GraphSAGE seed nodes per minibatch
    learning_rate: float = 0.01
    weight_decay: float = 5e-4
    seed: int = 0
    export: bool = True            # export the SBM GCN and compare it with the eager model


class Graph(NamedTuple):
    x: np.ndarray         # (N, F) float32 node features
    src: np.ndarray       # (E,) int32, both directions of every undirected edge
    dst: np.ndarray       # (E,) int32
    y: np.ndarray         # (N,) int32 labels
    train: np.ndarray     # (N,) bool labeled nodes
    num_classes: int


def sbm(cfg: NodeClassifyConfig) -> Graph:
    import networkx as nx

    probs = np.full((cfg.blocks, cfg.blocks), cfg.p_out)
    np.fill_diagonal(probs, cfg.p_in)
    g = nx.stochastic_block_model([cfg.block_size] * cfg.blocks, probs.tolist(), seed=cfg.seed)
    y = np.array([g.nodes[v]["block"] for v in g.nodes], np.int32)
    rng = np.random.default_rng(cfg.seed)
    x = rng.normal(size=(len(y), cfg.feature_dim)).astype(np.float32)
    x[np.arange(len(y)), y] += cfg.signal
    train = rng.permutation(len(y)) < int(cfg.train_fraction * len(y))
    return Graph(x, *_both_ways(g), y, train, cfg.blocks)


def karate(cfg: NodeClassifyConfig) -> Graph:
    import networkx as nx

    g = nx.karate_club_graph()
    y = np.array([g.nodes[v]["club"] != "Mr. Hi" for v in g.nodes], np.int32)
    rng = np.random.default_rng(cfg.seed)
    train = np.zeros(len(y), bool)
    for c in (0, 1):
        train[rng.permutation(np.flatnonzero(y == c))[:cfg.karate_labeled]] = True
    return Graph(np.eye(len(y), dtype=np.float32), *_both_ways(g), y, train, 2)


def _both_ways(g):
    edges = np.array(list(g.edges), np.int32).reshape(-1, 2)
    return np.concatenate([edges[:, 0], edges[:, 1]]), np.concatenate([edges[:, 1], edges[:, 0]])


class MLP(nn.Layer):
    """The features-only baseline: the graph arguments are ignored."""

    def __init__(self, in_features, hidden, num_classes, *, dropout=0.5):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, num_classes)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, src_index=None, dst_index=None):
        return self.fc2(self.dropout(F.relu(self.fc1(self.dropout(x)))))


def _masked_loss(logits, labels, weight):
    per = F.cross_entropy(logits, labels, reduction="none").reshape(-1)
    return jnp.sum(per * weight) / jnp.sum(weight)


def train_full_batch(model, data: Graph, cfg: NodeClassifyConfig):
    opt = pdx.optimizer.Adam(learning_rate=cfg.learning_rate, parameters=model.parameters(),
                             weight_decay=cfg.weight_decay)

    @pdx.jit
    def step(m, o, x, src, dst, y, weight):
        loss, grads = pdx.value_and_grad(lambda m: _masked_loss(m(x, src, dst), y, weight))(m)
        o.step(grads)
        return loss

    weight = data.train.astype(np.float32)
    model.train()
    for _ in range(cfg.epochs):
        step(model, opt, data.x, data.src, data.dst, data.y, weight)
    return model.eval()


def train_sampled(model: GraphSAGE, data: Graph, cfg: NodeClassifyConfig):
    """GraphSAGE on sampled minibatches of the labeled nodes; returns (model, compiled step count)."""
    sampler = NeighborSampler(data.src, data.dst, len(data.y), cfg.fanouts, batch_size=cfg.batch_size,
                              seed=cfg.seed)
    opt = pdx.optimizer.Adam(learning_rate=cfg.learning_rate, parameters=model.parameters(),
                             weight_decay=cfg.weight_decay)

    def loss_fn(m, x, y, batch):
        logits = m.forward_blocks(x[batch.input_nodes], batch.blocks)
        return _masked_loss(logits, y[batch.seeds], batch.seed_mask.astype(jnp.float32))

    @pdx.jit
    def step(m, o, x, y, batch):
        loss, grads = pdx.value_and_grad(loss_fn)(m, x, y, batch)
        o.step(grads)
        return loss

    x, y = jnp.asarray(data.x), jnp.asarray(data.y)   # on device once; batches gather from them
    model.train()
    for _ in range(cfg.sage_epochs):
        for batch in sampler.batches(np.flatnonzero(data.train)):
            step(model, opt, x, y, batch)
    return model.eval(), step.cache_size()


def accuracy(model, data: Graph) -> float:
    logits = np.asarray(pdx.jit(lambda m, x, s, d: m(x, s, d))(model.eval(), data.x, data.src, data.dst))
    test = ~data.train
    return float(np.mean(logits.argmax(-1)[test] == data.y[test]))


def export_check(model, data: Graph) -> float:
    """Export the GCN with the graph baked in; max |exported - eager| on every node."""
    src, dst = jnp.asarray(data.src), jnp.asarray(data.dst)

    def gcn_fixed_graph(x):
        return model(x, src, dst)

    eager = np.asarray(model.eval()(data.x, data.src, data.dst))
    with tempfile.TemporaryDirectory() as workdir:
        path = pdx.export.export(gcn_fixed_graph, f"{workdir}/gcn", [InputSpec(list(data.x.shape), "float32", "x")],
                                 differentiable=False)
        exported = np.asarray(pdx.export.load(path)(data.x))
    return float(np.max(np.abs(exported - eager)))


def main(cfg: NodeClassifyConfig) -> dict:
    datasets = {"sbm": sbm(cfg), "karate": karate(cfg)}
    results: dict = {}
    for name, data in datasets.items():
        f, c = data.x.shape[1], data.num_classes
        row = {}
        builders = {
            "MLP (features only)": lambda: MLP(f, cfg.hidden, c),
            "GCN": lambda: GCN(f, cfg.hidden, c),
            "GAT": lambda: GAT(f, cfg.gat_hidden, c, num_heads=cfg.gat_heads),
        }
        for model_name, build in builders.items():
            pdx.seed(cfg.seed)
            start = time.perf_counter()
            model = train_full_batch(build(), data, cfg)
            row[model_name] = dict(accuracy=accuracy(model, data), seconds=time.perf_counter() - start)
            if model_name == "GCN" and name == "sbm" and cfg.export:
                row[model_name]["export_max_abs_diff"] = export_check(model, data)
        pdx.seed(cfg.seed)
        start = time.perf_counter()
        model, compiles = train_sampled(GraphSAGE(f, cfg.sage_hidden, c, num_layers=len(cfg.fanouts)), data, cfg)
        row["GraphSAGE (sampled)"] = dict(accuracy=accuracy(model, data), seconds=time.perf_counter() - start,
                                          compiles=compiles)
        results[name] = row

    g = datasets["sbm"]
    print(f"\nSBM: {len(g.y)} nodes, {len(g.src) // 2} edges, {g.num_classes} blocks, p_in={cfg.p_in}, "
          f"p_out={cfg.p_out}, feature signal {cfg.signal}; {int(g.train.sum())} labeled, "
          f"{int((~g.train).sum())} test. Karate: {int(datasets['karate'].train.sum())} labeled, "
          f"{int((~datasets['karate'].train).sum())} test.")
    print("| model | SBM test accuracy | karate test accuracy | SBM train seconds |\n|---|---:|---:|---:|")
    for model_name in results["sbm"]:
        s, k = results["sbm"][model_name], results["karate"][model_name]
        print(f"| {model_name} | {s['accuracy']:.4f} | {k['accuracy']:.4f} | {s['seconds']:.1f} |")
    gcn = results["sbm"]["GCN"]
    if "export_max_abs_diff" in gcn:
        print(f"exported GCN (XLA) vs eager, max |diff| over all nodes: {gcn['export_max_abs_diff']:.2e}")
    print(f"GraphSAGE train step compiled {results['sbm']['GraphSAGE (sampled)']['compiles']} time(s) on the SBM")
    return results


if __name__ == "__main__":
    from _config_cli import parse_config  # recipes/ is sys.path[0] when a recipe runs

    main(parse_config(NodeClassifyConfig, __doc__))
