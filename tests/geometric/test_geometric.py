"""pdx.geometric against the installed paddle.geometric on random graphs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import geometric as G

REDUCES = ("sum", "mean", "max", "min")
MESSAGES = ("add", "sub", "mul", "div")


def _graph(rng, n=7, e=12):
    # node n-1 is isolated (never a destination), so empty reductions are exercised
    src = rng.integers(0, n, e)
    dst = rng.integers(0, n - 2, e)
    return src.astype(np.int64), dst.astype(np.int64)


def test_segment_ops_match_paddle(paddle, rng):
    data = rng.normal(size=(9, 3)).astype(np.float32)
    ids = np.sort(np.array([0, 0, 2, 2, 2, 4, 5, 5, 7]))  # segments 1, 3, 6 are empty
    for name in ("segment_sum", "segment_mean", "segment_max", "segment_min"):
        want = getattr(paddle.geometric, name)(paddle.to_tensor(data), paddle.to_tensor(ids)).numpy()
        got = getattr(G, name)(data, ids)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)
        jitted = jax.jit(lambda d, i, f=getattr(G, name): f(d, i, num_segments=8))(data, ids)
        np.testing.assert_allclose(jitted, want, rtol=1e-6, atol=1e-6, err_msg=name)
    with pytest.raises(ValueError, match="num_segments"):
        jax.jit(G.segment_sum)(data, ids)
    with pytest.raises(ValueError, match="segment_ids"):
        G.segment_sum(data, ids[:4])


def test_send_ops_match_paddle(paddle, rng):
    src, dst = _graph(rng)
    x = rng.normal(size=(7, 3)).astype(np.float32)
    y_edge = (rng.uniform(0.5, 2.0, size=(12, 1)) * rng.choice([-1, 1], size=(12, 1))).astype(np.float32)
    y_node = rng.uniform(0.5, 2.0, size=(7, 3)).astype(np.float32)
    P = lambda a: paddle.to_tensor(a)  # noqa: E731
    for reduce_op in REDUCES:
        for out_size in (None, 9):
            want = paddle.geometric.send_u_recv(P(x), P(src), P(dst), reduce_op, out_size=out_size).numpy()
            got = G.send_u_recv(x, src, dst, reduce_op, out_size=out_size)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"send_u_recv {reduce_op}")
        for message_op in MESSAGES:
            want = paddle.geometric.send_ue_recv(P(x), P(y_edge), P(src), P(dst), message_op, reduce_op).numpy()
            got = G.send_ue_recv(x, y_edge, src, dst, message_op, reduce_op)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"send_ue_recv {message_op} {reduce_op}")
    # 1-D edge features broadcast against [N, F] node features
    want = paddle.geometric.send_ue_recv(P(x), P(y_edge[:, 0]), P(src), P(dst), "mul", "sum").numpy()
    np.testing.assert_allclose(G.send_ue_recv(x, y_edge[:, 0], src, dst, "mul", "sum"), want, rtol=1e-5, atol=1e-6)
    for message_op in MESSAGES:
        want = paddle.geometric.send_uv(P(x), P(y_node), P(src), P(dst), message_op).numpy()
        np.testing.assert_allclose(G.send_uv(x, y_node, src, dst, message_op), want, rtol=1e-5, atol=1e-6)
    # under jit with a static out_size
    jitted = jax.jit(lambda x, s, d: G.send_u_recv(x, s, d, "max", out_size=7))(x, src, dst)
    np.testing.assert_allclose(jitted, paddle.geometric.send_u_recv(P(x), P(src), P(dst), "max").numpy(), rtol=1e-6)


def test_send_u_recv_gradients_match_paddle(paddle, rng):
    src, dst = _graph(rng)
    x = rng.normal(size=(7, 3)).astype(np.float32)
    w = rng.normal(size=(7, 3)).astype(np.float32)
    for reduce_op in ("sum", "mean"):
        xp = paddle.to_tensor(x, stop_gradient=False)
        out = paddle.geometric.send_u_recv(xp, paddle.to_tensor(src), paddle.to_tensor(dst), reduce_op)
        (out * paddle.to_tensor(w)).sum().backward()
        g = pdx.grad(lambda x: (G.send_u_recv(x, src, dst, reduce_op) * w).sum())(jnp.asarray(x))
        np.testing.assert_allclose(g, xp.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=reduce_op)


def test_bad_arguments_name_the_argument(rng):
    x = np.ones((4, 2), np.float32)
    s, d = np.array([0, 1]), np.array([1, 2])
    with pytest.raises(ValueError, match="reduce_op"):
        G.send_u_recv(x, s, d, "prod")
    with pytest.raises(ValueError, match="message_op"):
        G.send_uv(x, x, s, d, "pow")
    with pytest.raises(ValueError, match="out_size"):
        G.send_u_recv(x, s, d, out_size=2)
    with pytest.raises(ValueError, match="dst_index"):
        G.send_u_recv(x, s, d[:1])
    with pytest.raises(ValueError, match="out_size"):
        jax.jit(lambda x, n: G.send_u_recv(x, s, d, out_size=n))(x, 4)
    with pytest.raises(ValueError, match="eagerly"):
        jax.jit(G.reindex_graph)(np.array([0]), np.array([1]), np.array([1]))


def test_reindex_matches_paddle(paddle, rng):
    x = np.array([0, 5, 2], np.int64)
    nb = [rng.integers(0, 12, 8).astype(np.int64), rng.integers(0, 12, 5).astype(np.int64)]
    ct = [np.array([3, 0, 5], np.int32), np.array([1, 3, 1], np.int32)]
    P = lambda a: paddle.to_tensor(a)  # noqa: E731
    want = paddle.geometric.reindex_graph(P(x), P(nb[0]), P(ct[0]))
    for g, w in zip(G.reindex_graph(x, nb[0], ct[0]), want):
        np.testing.assert_array_equal(g, w.numpy())
    want = paddle.geometric.reindex_heter_graph(P(x), [P(n) for n in nb], [P(c) for c in ct])
    for g, w in zip(G.reindex_heter_graph(x, nb, ct), want):
        np.testing.assert_array_equal(g, w.numpy())
    with pytest.raises(ValueError, match="count"):
        G.reindex_graph(x, nb[0], np.array([1, 1, 1]))


def test_sampling_properties(paddle, rng):
    n = 10
    row, colptr = [], [0]
    for node in range(n):
        deg = int(rng.integers(0, 6))
        row.extend(rng.choice(n, deg, replace=False).tolist())
        colptr.append(len(row))
    row, colptr = np.array(row, np.int64), np.array(colptr, np.int64)
    nodes = np.arange(n, dtype=np.int64)
    eids = np.arange(len(row), dtype=np.int64) + 100
    weight = rng.uniform(0.1, 1.0, len(row)).astype(np.float32)
    P = lambda a: paddle.to_tensor(a)  # noqa: E731
    deg = np.diff(colptr)
    for k in (1, 3):
        _, want_count = paddle.geometric.sample_neighbors(P(row), P(colptr), P(nodes), sample_size=k)
        for weighted in (False, True):
            if weighted:
                nb, cnt, e = G.weighted_sample_neighbors(row, colptr, weight, nodes, k, eids=eids, return_eids=True,
                                                         key=jax.random.key(k))
            else:
                nb, cnt, e = G.sample_neighbors(row, colptr, nodes, k, eids=eids, return_eids=True, key=jax.random.key(k))
            np.testing.assert_array_equal(cnt, want_count.numpy())
            np.testing.assert_array_equal(cnt, np.minimum(deg, k))
            assert cnt.dtype == jnp.int32
            offs = np.concatenate([[0], np.cumsum(cnt)])
            for node in range(n):
                picked = np.asarray(nb[offs[node]:offs[node + 1]])
                picked_e = np.asarray(e[offs[node]:offs[node + 1]]) - 100
                assert len(set(picked_e.tolist())) == len(picked_e), "sampled without replacement"
                assert all(colptr[node] <= i < colptr[node + 1] for i in picked_e)
                np.testing.assert_array_equal(row[picked_e], picked)
    # weights steer the sample: a zero-weight edge is never picked
    w = np.array([1.0, 0.0, 1.0], np.float32)
    for seed in range(5):
        nb, _ = G.weighted_sample_neighbors(np.array([4, 5, 6]), np.array([0, 3]), w, np.array([0]), 2,
                                            key=jax.random.key(seed))
        assert sorted(np.asarray(nb).tolist()) == [4, 6]
    all_nb, all_cnt = G.sample_neighbors(row, colptr, nodes, key=jax.random.key(0))
    np.testing.assert_array_equal(all_cnt, deg)
    np.testing.assert_array_equal(all_nb, row)
