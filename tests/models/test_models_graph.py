"""pdx.models.graph against dense-adjacency numpy references, and the neighbor sampler against the graph.

The test graph has duplicate edges (counted twice: a multigraph), a self-loop
edge and an isolated node, so each layer's documented semantics for them is
checked: GCN uses A + I as given (the self-loop edge adds to I), GAT drops
input self-loops and adds one per node, SAGE aggregates over in-edges with
multiplicity and gives 0 to nodes without in-edges.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.models.graph as graph
from pdx.models import _zoo
from pdx.models.graph import (
    GAT,
    GCN,
    GATConv,
    GCNConv,
    GraphSAGE,
    NeighborSampler,
    SAGEConv,
)

N, F_IN = 9, 5
# node 8 is isolated; 0->1 appears twice; 3->3 is a self-loop; node 6 has no in-edges
SRC = np.array([0, 0, 1, 2, 3, 4, 5, 7, 0, 3, 2, 5, 1], np.int32)
DST = np.array([1, 1, 2, 0, 3, 5, 4, 2, 4, 0, 7, 7, 3], np.int32)


def _adjacency(src, dst, n_dst, n_src, weight=None):
    """A[i, j] = summed weight of edges j -> i."""
    a = np.zeros((n_dst, n_src))
    np.add.at(a, (dst, src), 1.0 if weight is None else weight)
    return a


def _np(p):
    return np.asarray(p[...], np.float64)


def _features(rng, n=N, f=F_IN):
    return rng.normal(size=(n, f)).astype(np.float32)


def _gcn_reference(conv, x, src, dst, weight=None):
    a = _adjacency(src, dst, len(x), len(x), weight) + np.eye(len(x))
    d = a.sum(1) ** -0.5
    return (d[:, None] * a * d[None, :]) @ (x @ _np(conv.linear.weight)) + _np(conv.bias)


def _gat_reference(conv, x, src, dst):
    heads, width = conv.num_heads, conv.out_features
    keep = src != dst
    m = _adjacency(src[keep], dst[keep], len(x), len(x)) + np.eye(len(x))   # edge multiplicities incl. one self-loop
    h = (x @ _np(conv.linear.weight)).reshape(len(x), heads, width)
    outs = []
    for k in range(heads):
        s_src = h[:, k] @ _np(conv.att_src)[k]
        s_dst = h[:, k] @ _np(conv.att_dst)[k]
        e = s_dst[:, None] + s_src[None, :]
        e = np.where(e > 0, e, 0.2 * e)
        e = np.where(m > 0, e, -np.inf)
        w = m * np.exp(e - e.max(1, keepdims=True))
        outs.append((w / w.sum(1, keepdims=True)) @ h[:, k])
    out = np.stack(outs, 1)
    out = out.reshape(len(x), -1) if conv.concat else out.mean(1)
    return out + _np(conv.bias)


def _sage_reference(conv, x, src, dst, num_dst):
    a = _adjacency(src, dst, num_dst, len(x))
    if conv.aggr == "sum":
        agg = a @ x
    elif conv.aggr == "mean":
        agg = (a @ x) / np.maximum(a.sum(1, keepdims=True), 1)
    else:
        agg = np.stack([x[a[i] > 0].max(0) if (a[i] > 0).any() else np.zeros(x.shape[1]) for i in range(num_dst)])
    out = agg @ _np(conv.lin_neigh.weight) + _np(conv.lin_neigh.bias)
    return out + x[:num_dst] @ _np(conv.lin_root.weight)


def test_public_names_and_zoo(tmp_path):
    for name in graph.__all__:
        assert getattr(graph, name) is not None
    rows = {r["name"]: r for r in _zoo.list("graph")}
    assert set(rows) == {"gcn", "gat", "graphsage"}
    # Cora-sized GCN: 1433*16 + 16 + 16*7 + 7 parameters
    assert rows["gcn"]["params"] == 1433 * 16 + 16 + 16 * 7 + 7
    x, src, dst = jnp.asarray(np.random.default_rng(0).normal(size=(N, 6)), jnp.float32), SRC, DST
    for name in rows:
        model = _zoo.create(name, in_features=6, num_classes=3).eval()
        out = np.asarray(model(x, src, dst))
        assert out.shape == (N, 3)
        _zoo.save_pretrained(model, tmp_path / name, name=name, in_features=6, num_classes=3)
        loaded = _zoo.from_pretrained(tmp_path / name).eval()
        np.testing.assert_allclose(loaded(x, src, dst), out, atol=1e-6, err_msg=name)


def test_gcn_conv_matches_dense_reference(rng):
    x = _features(rng)
    conv = GCNConv(F_IN, 4)
    conv.bias.set_value(jnp.asarray(rng.normal(size=4), jnp.float32))
    np.testing.assert_allclose(conv(x, SRC, DST), _gcn_reference(conv, x, SRC, DST), atol=1e-5)
    # isolated node 8: only its self-loop, so x W + b
    np.testing.assert_allclose(conv(x, SRC, DST)[8], x[8] @ _np(conv.linear.weight) + _np(conv.bias), atol=1e-5)
    w = rng.uniform(0.5, 2.0, size=SRC.shape).astype(np.float32)
    np.testing.assert_allclose(conv(x, SRC, DST, edge_weight=w), _gcn_reference(conv, x, SRC, DST, w), atol=1e-5)
    # a masked edge is an absent edge; padding that repeats edges changes nothing once masked
    mask = np.arange(len(SRC)) % 3 != 0
    padded_src, padded_dst = np.concatenate([SRC, SRC[:4]]), np.concatenate([DST, DST[:4]])
    padded_mask = np.concatenate([mask, np.zeros(4, bool)])
    np.testing.assert_allclose(conv(x, padded_src, padded_dst, edge_mask=padded_mask),
                               _gcn_reference(conv, x, SRC[mask], DST[mask]), atol=1e-5)
    raw = GCNConv(F_IN, 4, normalize=False, add_self_loops=False, bias=False)
    np.testing.assert_allclose(raw(x, SRC, DST), _adjacency(SRC, DST, N, N) @ x @ _np(raw.linear.weight), atol=1e-5)
    # under pdx.jit: the same numbers
    jitted = pdx.jit(lambda m, a, s, d: m(a, s, d))
    np.testing.assert_allclose(jitted(conv, x, SRC, DST), _gcn_reference(conv, x, SRC, DST), atol=1e-5)


def test_gat_conv_matches_dense_masked_softmax(rng):
    x = _features(rng)
    for concat in (True, False):
        conv = GATConv(F_IN, 3, num_heads=2, concat=concat).eval()
        conv.bias.set_value(jnp.asarray(rng.normal(size=conv.bias.shape), jnp.float32))
        got = np.asarray(conv(x, SRC, DST))
        np.testing.assert_allclose(got, _gat_reference(conv, x, SRC, DST), atol=1e-5)
    # masked edges are absent edges
    mask = np.arange(len(SRC)) % 4 != 1
    np.testing.assert_allclose(conv(x, SRC, DST, edge_mask=mask), _gat_reference(conv, x, SRC[mask], DST[mask]),
                               atol=1e-5)
    # large scores: the segment-max shift keeps the softmax finite
    big = conv(100 * x, SRC, DST)
    assert np.isfinite(np.asarray(big)).all()
    # attention dropout is active in training only
    train_conv = GATConv(F_IN, 3, num_heads=2, attn_dropout=0.5)
    assert not np.allclose(train_conv(x, SRC, DST), train_conv.eval()(x, SRC, DST))
    # gradients through the segment softmax equal those of a dense masked softmax (jax.grad of jnp code)
    conv = GATConv(F_IN, 3, num_heads=2).eval()
    keep = SRC != DST
    count = jnp.asarray(_adjacency(SRC[keep], DST[keep], N, N) + np.eye(N), jnp.float32)

    def dense(params):
        h = (x @ params["linear.weight"]).reshape(N, 2, 3)
        s_src = jnp.einsum("nhc,hc->hn", h, params["att_src"])
        s_dst = jnp.einsum("nhc,hc->hn", h, params["att_dst"])
        e = jax.nn.leaky_relu(s_dst[:, :, None] + s_src[:, None, :], 0.2)       # (H, N_dst, N_src)
        e = jnp.where(count > 0, e, -jnp.inf)
        w = count * jnp.exp(e - e.max(-1, keepdims=True))
        out = jnp.einsum("hij,jhc->ihc", w / w.sum(-1, keepdims=True), h).reshape(N, 6) + params["bias"]
        return jnp.sum(jnp.sin(out))

    params = {k: v[...] for k, v in conv.named_parameters()}
    want = jax.grad(dense)(params)
    got = pdx.grad(lambda m: jnp.sum(jnp.sin(m(x, SRC, DST))))(conv)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=1e-5, err_msg=name)


def test_sage_conv_matches_dense_reference(rng):
    x = _features(rng)
    for aggr in ("mean", "max", "sum"):
        conv = SAGEConv(F_IN, 4, aggr=aggr)
        conv.lin_neigh.bias.set_value(jnp.asarray(rng.normal(size=4), jnp.float32))
        np.testing.assert_allclose(conv(x, SRC, DST), _sage_reference(conv, x, SRC, DST, N), atol=1e-5,
                                   err_msg=aggr)
        # bipartite block: the first 4 nodes are destinations
        keep = DST < 4
        got = conv(x, SRC[keep], DST[keep], num_dst=4)
        np.testing.assert_allclose(got, _sage_reference(conv, x, SRC[keep], DST[keep], 4), atol=1e-5, err_msg=aggr)
        mask = np.arange(len(SRC)) % 2 == 0
        np.testing.assert_allclose(conv(x, SRC, DST, edge_mask=mask),
                                   _sage_reference(conv, x, SRC[mask], DST[mask], N), atol=1e-5, err_msg=aggr)


def test_models_stack_convs(rng):
    x = _features(rng)
    gcn = GCN(F_IN, 6, 3).eval()
    h = np.maximum(_gcn_reference(gcn.convs[0], x, SRC, DST), 0)
    np.testing.assert_allclose(gcn(x, SRC, DST), _gcn_reference(gcn.convs[1], h, SRC, DST), atol=1e-5)
    sage = GraphSAGE(F_IN, 6, 3, aggr="max").eval()
    h = np.maximum(_sage_reference(sage.convs[0], x, SRC, DST, N), 0)
    np.testing.assert_allclose(sage(x, SRC, DST), _sage_reference(sage.convs[1], h, SRC, DST, N), atol=1e-5)
    gat = GAT(F_IN, 4, 3, num_heads=2, out_heads=2).eval()
    h = _gat_reference(gat.convs[0], x, SRC, DST)
    h = np.where(h > 0, h, np.expm1(h))
    np.testing.assert_allclose(gat(x, SRC, DST), _gat_reference(gat.convs[1], h, SRC, DST), atol=1e-5)


def test_bad_inputs_name_the_argument():
    x = jnp.ones((N, F_IN))
    with pytest.raises(ValueError, match="dst_index.*9 nodes"):
        GCNConv(F_IN, 2)(x, SRC, np.where(DST == 7, 9, DST))
    with pytest.raises(ValueError, match="edge_mask"):
        GATConv(F_IN, 2)(x, SRC, DST, edge_mask=np.ones(3, bool))
    with pytest.raises(ValueError, match="aggr"):
        SAGEConv(F_IN, 2, aggr="lstm")
    with pytest.raises(ValueError, match="num_dst"):
        SAGEConv(F_IN, 2)(x, SRC, DST, num_dst=20)
    with pytest.raises(ValueError, match="fanouts"):
        NeighborSampler(SRC, DST, N, [], batch_size=2)
    with pytest.raises(ValueError, match="seeds"):
        NeighborSampler(SRC, DST, N, [2], batch_size=2).sample(np.array([1, 1]))
    b = NeighborSampler(SRC, DST, N, [2, 2], batch_size=2).sample(np.array([0]))
    with pytest.raises(ValueError, match="2 blocks for 3 layers"):
        GraphSAGE(F_IN, 4, 2, num_layers=3).forward_blocks(x[b.input_nodes], b.blocks)


def _random_graph(rng, n=60, e=400):
    src = rng.integers(0, n, e).astype(np.int32)
    dst = rng.integers(0, n, e).astype(np.int32)
    dst[:5] = src[:5]                       # self-loops
    src = np.concatenate([src, src[:20]])   # duplicate edges
    dst = np.concatenate([dst, dst[:20]])
    return src, dst


def test_sampler_returns_real_neighbors_within_fanout(rng):
    n = 60
    src, dst = _random_graph(rng, n)
    in_edges = [list(src[dst == v]) for v in range(n)]
    fanouts, batch = (3, 2), 8
    sampler = NeighborSampler(src, dst, n, fanouts, batch_size=batch, seed=1)
    seeds_seen = []
    for b in sampler.batches(np.arange(n - 3)):     # 57 seeds: the last batch holds 1 and is padded
        assert [blk.neighbors.shape for blk in b.blocks] == [(32, 2), (8, 3)]
        assert b.input_nodes.shape == (60,) and b.seeds.shape == (batch,)
        real = list(b.seeds[b.seed_mask])
        seeds_seen += real
        assert list(b.input_nodes[:len(real)]) == real
        for block, k in zip(reversed(b.blocks), fanouts):     # seeds outward
            nxt = list(real)
            for i in range(block.num_dst):
                picked = list(b.input_nodes[block.neighbors[i][block.mask[i]]])
                if i >= len(real):
                    assert not picked                         # padded rows sample nothing
                    continue
                pool = in_edges[real[i]]
                assert len(picked) == min(len(pool), k)        # fan-out respected, without replacement
                for v in set(picked):                          # only real in-neighbors, at most their multiplicity
                    assert picked.count(v) <= pool.count(v)
                nxt += [v for v in dict.fromkeys(picked) if v not in nxt]
            # reindexing: the next hop's nodes are these nodes, then new neighbors in order of appearance
            assert list(b.input_nodes[:len(nxt)]) == nxt
            real = nxt
    assert sorted(seeds_seen) == list(range(n - 3))
    # over many draws every in-neighbor of a busy node is picked at some point (the draw is random)
    busy = int(np.argmax([len(set(p)) for p in in_edges]))
    picked = set()
    for _ in range(40):
        b = sampler.sample(np.array([busy]))
        blk = b.blocks[-1]
        picked |= set(b.input_nodes[blk.neighbors[0][blk.mask[0]]].tolist())
    assert picked == set(in_edges[busy])


def test_sampled_sage_matches_full_graph_and_compiles_once(rng):
    n = 60
    src, dst = _random_graph(rng, n)
    x = jnp.asarray(_features(rng, n, F_IN))
    labels = jnp.asarray(rng.integers(0, 3, n), jnp.int32)
    pdx.seed(0)  # the initial weights do not depend on which tests ran before in this process
    model = GraphSAGE(F_IN, 8, 3, aggr="mean").eval()
    full = np.asarray(model(x, src, dst))
    # a fan-out above every in-degree samples whole neighborhoods: the same outputs as the full graph
    max_deg = int(np.bincount(dst, minlength=n).max())
    whole = NeighborSampler(src, dst, n, [max_deg, max_deg], batch_size=16)
    for b in whole.batches(np.arange(n), shuffle=False):
        got = np.asarray(model.forward_blocks(x[b.input_nodes], b.blocks))
        np.testing.assert_allclose(got[b.seed_mask], full[b.seeds[b.seed_mask]], atol=1e-5)

    model.train()
    opt = pdx.optimizer.Adam(learning_rate=1e-2, parameters=model.parameters())

    def loss_fn(m, feats, y, batch):
        logits = m.forward_blocks(feats[batch.input_nodes], batch.blocks)
        per = pdx.nn.functional.cross_entropy(logits, y[batch.seeds], reduction="none").reshape(-1)
        return jnp.sum(per * batch.seed_mask) / jnp.sum(batch.seed_mask)

    @pdx.jit
    def step(m, o, feats, y, batch):
        loss, grads = pdx.value_and_grad(loss_fn)(m, feats, y, batch)
        o.step(grads)
        return loss

    sampler = NeighborSampler(src, dst, n, [4, 3], batch_size=16, seed=3)
    losses = []
    for _ in range(8):
        for b in sampler.batches(np.arange(n)):      # 60 seeds: batches of 16, 16, 16, 12 (padded)
            losses.append(float(step(model, opt, x, labels, b)))
    assert step.cache_size() == 1
    # the first epoch against the last two (sampling and dropout make single batches noisy)
    assert np.isfinite(losses).all() and np.mean(losses[-8:]) < np.mean(losses[:4]) - 0.1, losses
