"""pdx.incubate's ops and optimizer wrappers against paddle.incubate."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import incubate as I


def _np(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def test_incubate_ops_match_paddle(paddle, rng):
    import paddle.incubate as PI

    T = paddle.to_tensor
    x = rng.normal(size=(2, 3, 4, 4)).astype(np.float32)
    mask = np.where(rng.random((2, 1, 4, 4)) < 0.3, -1e4, 0.0).astype(np.float32)
    np.testing.assert_allclose(I.softmax_mask_fuse(x, mask), _np(PI.softmax_mask_fuse(T(x), T(mask))), rtol=1e-5,
                               atol=1e-6)
    # paddle's upper-triangle kernel is GPU-only: its composition (softmax with j > i masked)
    causal = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    np.testing.assert_allclose(I.softmax_mask_fuse_upper_triangle(x),
                               _np(paddle.nn.functional.softmax(T(x) + T(causal), -1)), rtol=1e-5, atol=1e-6)
    for reduction in ("sum", "mean", "none", 0, 1, 2):
        np.testing.assert_allclose(I.identity_loss(x, reduction), _np(PI.identity_loss(T(x), reduction)), rtol=1e-5)

    # segment ops are pdx.geometric's
    assert I.segment_sum is pdx.geometric.segment_sum and I.segment_max is pdx.geometric.segment_max
    data, ids = rng.normal(size=(6, 3)).astype(np.float32), np.array([0, 0, 1, 3, 3, 3])
    np.testing.assert_allclose(I.segment_mean(data, ids), _np(PI.segment_mean(T(data), T(ids))), rtol=1e-6)

    feats = rng.normal(size=(5, 3)).astype(np.float32)
    src, dst = np.array([0, 1, 2, 3, 4, 0]), np.array([1, 2, 1, 0, 0, 3])
    for pool in ("sum", "mean", "max", "min"):
        np.testing.assert_allclose(I.graph_send_recv(feats, src, dst, pool),
                                   _np(PI.graph_send_recv(T(feats), T(src), T(dst), pool)), rtol=1e-6, err_msg=pool)

    row = np.array([3, 7, 0, 9, 1, 4, 2, 9, 3, 9, 1, 9, 7], np.int64)
    colptr = np.array([0, 2, 4, 5, 6, 7, 9, 11, 11, 13, 13], np.int64)
    nodes, eids = np.array([0, 8, 1, 2], np.int64), np.arange(13, dtype=np.int64)
    # sample sizes covering every neighbor are deterministic
    got = I.graph_sample_neighbors(row, colptr, nodes, eids=eids, sample_size=5, return_eids=True)
    want = PI.graph_sample_neighbors(T(row), T(colptr), T(nodes), eids=T(eids), sample_size=5, return_eids=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).ravel(), _np(w).ravel())
    neighbors, count = _np(want[0]), _np(want[1])
    for g, w in zip(I.graph_reindex(nodes, neighbors, count), PI.graph_reindex(T(nodes), T(neighbors), T(count))):
        np.testing.assert_array_equal(g, _np(w))
    got = I.graph_khop_sampler(row, colptr, nodes, [5], eids, return_eids=True)
    want = PI.graph_khop_sampler(T(row), T(colptr), T(nodes), [5], T(eids.reshape(-1, 1)), True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).ravel(), _np(w).ravel())


def test_khop_sampler_two_hops_is_the_breadth_first_subgraph():
    # (paddle's CPU kernel does not finish on more than one hop; the full 2-hop subgraph by hand)
    row = np.array([1, 2, 3, 0, 4, 0], np.int64)          # in-neighbors: 0 <- {1, 2}, 1 <- {3}, 2 <- {0, 4}, 3 <- {0}
    colptr = np.array([0, 2, 3, 5, 6, 6], np.int64)
    src, dst, nodes, idx = I.graph_khop_sampler(row, colptr, np.array([0]), [-1, -1])
    assert nodes.tolist() == [0, 1, 2, 3, 4] and idx.tolist() == [0]
    edges = sorted(zip(nodes[np.asarray(src).ravel()].tolist(), nodes[np.asarray(dst).ravel()].tolist()))
    assert edges == [(0, 2), (1, 0), (2, 0), (3, 1), (4, 2)]
    with pytest.raises(ValueError, match="sample_sizes"):
        I.graph_khop_sampler(row, colptr, np.array([0]), [0])


def _paddle_steps(paddle, wrap, weights, batches, *, average: bool):
    """Train a paddle Linear with Adam under `wrap` (LookAhead: it steps; ModelAverage: after Adam)."""
    net = paddle.nn.Linear(3, 2)
    net.weight.set_value(paddle.to_tensor(weights[0]))
    net.bias.set_value(paddle.to_tensor(weights[1]))
    inner = paddle.optimizer.Adam(0.1, parameters=net.parameters())
    opt = wrap(inner, net)
    out = []
    with warnings.catch_warnings():  # paddle's LookAhead uses its own deprecated append_op path
        warnings.simplefilter("ignore", DeprecationWarning)
        for xb in batches:
            (net(paddle.to_tensor(xb)) ** 2).mean().backward()
            if average:
                inner.step()
            opt.step()
            inner.clear_grad()
            out.append([_np(net.weight).copy(), _np(net.bias).copy()])
    return net, opt, out


def test_lookahead_matches_paddle_eagerly_and_as_a_train_state(paddle, rng):
    import paddle.incubate as PI

    weights = [rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=2).astype(np.float32)]
    batches = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(7)]

    def _lookahead(inner, net):
        return PI.LookAhead(inner, alpha=0.3, k=3)

    _, _, want = _paddle_steps(paddle, _lookahead, weights, batches, average=False)

    net = pdx.nn.Linear(3, 2)
    net.set_state_dict({"weight": weights[0], "bias": weights[1]})
    opt = I.LookAhead(pdx.optimizer.Adam(0.1, parameters=net), alpha=0.3, k=3)
    state = pdx.train.TrainState.create(net, opt)
    loss = lambda m, xb: jnp.mean(m(xb) ** 2)
    for xb, (w, b) in zip(batches, want):
        _, grads = pdx.value_and_grad(loss)(net, jnp.asarray(xb))
        opt.step(grads)
        np.testing.assert_allclose(net.weight[...], w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(net.bias[...], b, rtol=1e-5, atol=1e-6)
    # the pure transformation (TrainState) takes the same path
    step = jax.jit(lambda s, g: s.apply_gradients(g))
    pure = jax.grad(lambda p, xb: jnp.mean((xb @ p["weight"] + p["bias"]) ** 2))
    for xb in batches:
        state = step(state, pure(state.params, jnp.asarray(xb)))
    np.testing.assert_allclose(state.params["weight"], want[-1][0], rtol=1e-5, atol=1e-6)
    assert int(opt.state_dict()["lookahead/step"]) == 7
    with pytest.raises(ValueError, match="alpha"):
        I.LookAhead(opt.inner_optimizer, alpha=1.5)


def _loss(model, xb):
    return jnp.mean(model(xb) ** 2)


def test_model_average_matches_paddle(paddle, rng):
    import paddle.incubate as PI

    weights = [rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=2).astype(np.float32)]
    batches = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(9)]

    def _average(inner, net):
        return PI.ModelAverage(0.5, parameters=net.parameters(), min_average_window=2, max_average_window=3)

    pd_net, pd_avg, trained = _paddle_steps(paddle, _average, weights, batches, average=True)
    with pd_avg.apply():
        want = [_np(pd_net.weight).copy(), _np(pd_net.bias).copy()]

    net = pdx.nn.Linear(3, 2)
    net.set_state_dict({"weight": weights[0], "bias": weights[1]})
    opt = pdx.optimizer.Adam(0.1, parameters=net)
    avg = I.ModelAverage(0.5, parameters=net.parameters(), min_average_window=2, max_average_window=3)
    for xb in batches:
        _, grads = pdx.value_and_grad(_loss)(net, jnp.asarray(xb))
        opt.step(grads)
        avg.step()
    np.testing.assert_allclose(net.weight[...], trained[-1][0], rtol=1e-4, atol=1e-5)
    before = np.asarray(net.weight[...])
    with avg.apply():
        np.testing.assert_allclose(net.weight[...], want[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(net.bias[...], want[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(net.weight[...], before)  # restored
    with avg.apply(need_restore=False):
        pass
    np.testing.assert_allclose(net.weight[...], want[0], rtol=1e-5, atol=1e-5)
    avg.restore()
    np.testing.assert_array_equal(net.weight[...], before)
    with pytest.raises(ValueError, match="average_window_rate"):
        I.ModelAverage(0, parameters=net.parameters())


def test_inference_decorator_compiles_layers_and_forward_methods(paddle, rng):
    w, x = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(2, 4)).astype(np.float32)
    want = _np(paddle.matmul(paddle.to_tensor(x), paddle.to_tensor(w)))

    class Net(pdx.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fn = pdx.nn.Linear(4, 3, bias_attr=False)

        @I.jit.inference()
        def forward(self, v):
            return self.fn(v)

    net = Net()
    net.fn.set_state_dict({"weight": w})
    np.testing.assert_allclose(net(x), want, rtol=1e-5, atol=1e-6)
    layer = pdx.nn.Linear(4, 3, bias_attr=False)
    layer.set_state_dict({"weight": w})
    np.testing.assert_allclose(I.inference(layer)(x), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="precision_mode"):
        I.inference(layer, precision_mode="float16")


@pytest.mark.parametrize("package", ["pdx.incubate", "pdx.incubate.nn", "pdx.incubate.nn.functional",
                                     "pdx.incubate.optimizer", "pdx.incubate.jit", "pdx.hub"])
def test_public_names_import_and_have_docstrings(package):
    import importlib

    module = importlib.import_module(package)
    assert module.__doc__ and len(module.__all__) == len(set(module.__all__))
    undocumented = [n for n in module.__all__ if callable(getattr(module, n)) and not (getattr(module, n).__doc__ or "").strip()]
    assert not undocumented, f"{package}: public names without a docstring: {undocumented}"
    assert getattr(pdx, package.split(".")[1]) is importlib.import_module(".".join(package.split(".")[:2]))


def test_incubate_autograd_matches_paddle(paddle, rng):
    """Paddle's functional autodiff: vjp / jvp / Jacobian / Hessian, single and several inputs, batched."""
    import paddle.incubate.autograd as PA

    from pdx.incubate import autograd as A

    T = paddle.to_tensor
    x, y, v = (rng.standard_normal((3, 3)).astype(np.float32) for _ in range(3))

    def close(ours, theirs):
        ours = ours if isinstance(ours, (list, tuple)) else [ours]
        theirs = theirs if isinstance(theirs, (list, tuple)) else [theirs]
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(np.asarray(a), _np(b), rtol=1e-5, atol=1e-5)

    two, ptwo = (lambda a, b: (a @ b, a * b)), (lambda a, b: (paddle.matmul(a, b), a * b))
    square, psquare = (lambda a: a @ a), (lambda a: paddle.matmul(a, a))
    close(A.vjp(square, x)[1], PA.vjp(psquare, T(x))[1])
    close(A.vjp(two, [x, y], [v, v])[1], PA.vjp(ptwo, [T(x), T(y)], [T(v), T(v)])[1])
    close(A.jvp(two, [x, y])[1], PA.jvp(ptwo, [T(x), T(y)])[1])
    close(A.jvp(square, x, v)[1], PA.jvp(psquare, T(x), T(v))[1])
    for batched in (False, True):
        ours, theirs = A.Jacobian(two, [x, y], is_batched=batched), PA.Jacobian(ptwo, [T(x), T(y)], is_batched=batched)
        assert list(ours.shape) == list(theirs.shape)
        close(ours[:], theirs[:])
        close(ours[0, :], theirs[0, :])
    close(A.Hessian(lambda a, b: (a * b * a).sum(), [x, y])[:],
          PA.Hessian(lambda a, b: (a * b * a).sum(), [T(x), T(y)])[:])
    close(A.Hessian(lambda a: (a ** 3).sum(1, keepdims=True), x, is_batched=True)[:],
          PA.Hessian(lambda a: (a ** 3).sum(1, keepdim=True), T(x), is_batched=True)[:])
    with pytest.raises(ValueError, match="`v` must match"):
        A.vjp(square, x, np.ones((2, 2), np.float32))
    A.enable_prim()
    assert A.prim_enabled() is True
    A.disable_prim()
    assert A.prim_enabled() is False
