"""hsigmoid_loss and adaptive_log_softmax_with_loss vs paddle; gaussian_nll_loss and dice_loss too."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn.functional as F
from loss_testutil import compare_cases


def test_hsigmoid_loss_matches_paddle(oracle, rng):
    cases = []
    n, d = 6, 5
    for classes in (2, 5, 8, 9):
        x = rng.standard_normal((n, d)).astype(np.float32)
        y = rng.integers(0, classes, n)
        w = rng.standard_normal((classes - 1, d)).astype(np.float32)
        b = rng.standard_normal((classes - 1, 1)).astype(np.float32)
        cases.append((f"default tree, {classes} classes",
                      lambda a, l, w_, b_, k=classes: F.hsigmoid_loss(a, l, k, w_, b_),
                      lambda a, l, w_, b_, k=classes: oracle.F.hsigmoid_loss(a, l, k, w_, b_), [x, y, w, b], [0, 2, 3]))
        cases.append((f"default tree, [N, 1] labels, no bias, {classes} classes",
                      lambda a, l, w_, k=classes: F.hsigmoid_loss(a, l, k, w_),
                      lambda a, l, w_, k=classes: oracle.F.hsigmoid_loss(a, l, k, w_), [x, y[:, None], w], [0, 2]))
    table = np.array([[0, 1, 3, -1], [0, 2, -1, -1], [0, 1, 4, 5], [0, 2, 5, -1], [1, -1, -1, -1], [2, 3, 4, 5]])
    code = rng.integers(0, 2, table.shape)
    w = rng.standard_normal((6, d)).astype(np.float32)
    b = rng.standard_normal((6, 1)).astype(np.float32)
    cases.append(("custom tree", lambda a, l, w_, b_, t, c: F.hsigmoid_loss(a, l, 6, w_, b_, t, c),
                  lambda a, l, w_, b_, t, c: oracle.F.hsigmoid_loss(a, l, 6, w_, b_, t, c),
                  [x, y % 6, w, b, table, code], [0, 2, 3]))
    compare_cases(oracle, rng, cases)


def test_adaptive_log_softmax_matches_paddle(oracle, rng):
    n, d, cutoffs = 7, 8, [3, 6, 10]
    head = rng.standard_normal((d, 5)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    tails = [[rng.standard_normal((d, 4)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)],
             [rng.standard_normal((d, 2)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)]]
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = np.array([9, 0, 4, 2, 6, 3, 7])

    def ours(a, l, h, hb, p0, o0, p1, o1):
        return F.adaptive_log_softmax_with_loss(a, l, h, [[p0, o0], [p1, o1]], cutoffs, hb)

    def theirs(a, l, h, hb, p0, o0, p1, o1):
        return oracle.F.adaptive_log_softmax_with_loss(a, l, h, [[p0, o0], [p1, o1]], cutoffs, hb)

    arrays = [x, y, head, bias, *tails[0], *tails[1]]
    compare_cases(oracle, rng, [
        ("output", lambda *a: ours(*a)[0], lambda *a: theirs(*a)[0], arrays, [0, 2, 3, 4, 5, 6, 7]),
        ("loss", lambda *a: ours(*a)[1], lambda *a: theirs(*a)[1], arrays, [0, 2]),
    ])
    out, loss = F.adaptive_log_softmax_with_loss(x[0], y[0], head, tails, cutoffs)  # unbatched
    ref_out, ref_loss = oracle.F.adaptive_log_softmax_with_loss(
        oracle.t(x[0]), oracle.t(y[0]), oracle.t(head), [[oracle.t(t) for t in p] for p in tails], cutoffs)
    oracle.close(out, ref_out)
    oracle.close(loss, ref_loss)


def test_gaussian_nll_and_dice_match_paddle(oracle, rng):
    cases = []
    x, y = (rng.standard_normal((4, 3)).astype(np.float32) for _ in range(2))
    for reduction in ("mean", "sum", "none"):
        for full in (False, True):
            for var in (rng.uniform(0.1, 2, (4, 3)), rng.uniform(0.1, 2, (4,)), rng.uniform(0.1, 2, (4, 1))):
                var = var.astype(np.float32)
                var.flat[0] = 1e-8  # clamped to epsilon
                kw = dict(full=full, reduction=reduction)
                cases.append((f"gaussian_nll {kw} var{var.shape}",
                              lambda a, b, v, kw=kw: F.gaussian_nll_loss(a, b, v, **kw),
                              lambda a, b, v, kw=kw: oracle.F.gaussian_nll_loss(a, b, v, **kw), [x, y, var], [0, 1]))
    for shape in ((4, 5), (2, 3, 4, 5)):
        e = np.exp(rng.standard_normal(shape))
        probs = (e / e.sum(-1, keepdims=True)).astype(np.float32)
        label = rng.integers(0, 5, shape[:-1] + (1,))
        cases.append((f"dice {shape}", lambda a, b: F.dice_loss(a, b), lambda a, b: oracle.F.dice_loss(a, b),
                      [probs, label], [0]))
    compare_cases(oracle, rng, cases)


def test_gaussian_nll_variance_gradient_flows_through_the_clamp(rng):
    x, y = (rng.standard_normal(6).astype(np.float32) for _ in range(2))
    var = rng.uniform(0.1, 2, 6).astype(np.float32)
    var[0] = 1e-9
    g = jax.grad(lambda v: F.gaussian_nll_loss(x, y, v, reduction="sum"))(jnp.asarray(var))
    clamped = np.maximum(var, 1e-6)
    np.testing.assert_allclose(g, 0.5 / clamped - 0.5 * (x - y) ** 2 / clamped ** 2, rtol=1e-4)


def test_tree_and_dense_loss_errors():
    x = jnp.zeros((3, 4))
    with pytest.raises(ValueError, match="hsigmoid_loss: num_classes must be an int >= 2"):
        F.hsigmoid_loss(x, jnp.zeros(3, jnp.int32), 1, jnp.zeros((1, 4)))
    with pytest.raises(TypeError, match="hsigmoid_loss: `label` must be an integer tensor"):
        F.hsigmoid_loss(x, jnp.zeros(3), 4, jnp.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"hsigmoid_loss: weight must be \[num_nodes, D=4\]"):
        F.hsigmoid_loss(x, jnp.zeros(3, jnp.int32), 4, jnp.zeros((3, 5)))
    with pytest.raises(ValueError, match="path_table and path_code must be given together"):
        F.hsigmoid_loss(x, jnp.zeros(3, jnp.int32), 4, jnp.zeros((3, 4)), path_table=jnp.zeros((3, 2), jnp.int32))
    head, tails = jnp.zeros((4, 3)), [[jnp.zeros((4, 2)), jnp.zeros((2, 4))]]
    with pytest.raises(ValueError, match=r"label values must be in \[0, n_classes - 1 = 5\]"):
        F.adaptive_log_softmax_with_loss(x, jnp.array([0, 1, 6]), head, tails, [2, 6])
    with pytest.raises(ValueError, match="label must be 0-D or 1-D"):
        F.adaptive_log_softmax_with_loss(x, jnp.zeros((3, 1), jnp.int32), head, tails, [2, 6])
    with pytest.raises(ValueError, match="cutoffs must be unique, positive and increasing"):
        F.adaptive_log_softmax_with_loss(x, jnp.zeros(3, jnp.int32), head, tails, [6, 2])
    with pytest.raises(ValueError, match=r"head_weight must be \[in_features, cutoffs\[0\] \+ n_clusters\]"):
        F.adaptive_log_softmax_with_loss(x, jnp.zeros(3, jnp.int32), jnp.zeros((4, 4)), tails, [2, 6])
    with pytest.raises(ValueError, match="gaussian_nll_loss: reduction='avg'"):
        F.gaussian_nll_loss(x, x, x, reduction="avg")
    with pytest.raises(ValueError, match="gaussian_nll_loss: variance.shape=\\(2,\\)"):
        F.gaussian_nll_loss(x, x, jnp.ones(2))
    with pytest.raises(ValueError, match="variance has negative entries"):
        F.gaussian_nll_loss(x, x, -jnp.ones((3, 4)))
    with pytest.raises(TypeError, match="dice_loss: label must be an integer tensor"):
        F.dice_loss(x, jnp.zeros((3, 1)))
    with pytest.raises(ValueError, match=r"dice_loss: label must be input.shape with size 1 last"):
        F.dice_loss(x, jnp.zeros((3, 2), jnp.int32))
