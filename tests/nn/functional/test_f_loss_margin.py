"""Margin and metric-learning losses vs paddle (margin_cross_entropy vs numpy: paddle has no CPU kernel)."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn.functional as F
from loss_testutil import compare_cases

N, C = 5, 4
REDUCTIONS = ("mean", "sum", "none")


def _targets(rng):
    label = rng.integers(0, C, (N, C))
    label[0, 2], label[1, 0], label[3, 1] = -1, -1, -1
    label[2, :2] = 3  # a repeated target counts twice, as in paddle
    return label.astype(np.int64)


def test_margin_losses_match_paddle(oracle, rng):
    PF = oracle.F
    cases = []
    w = rng.random(C).astype(np.float32) + 0.5
    for reduction in REDUCTIONS:
        x, y = rng.standard_normal((N, C)).astype(np.float32), rng.integers(0, C, N)
        for p, margin, weight in ((1, 1.0, None), (2, 0.7, w)):
            kw = dict(p=p, margin=margin, reduction=reduction)
            wo, wr = (None, None) if weight is None else (jnp.asarray(weight), oracle.t(weight))
            cases.append((f"multi_margin {kw} weight={weight is not None}",
                          lambda a, b, kw=kw, wo=wo: F.multi_margin_loss(a, b, weight=wo, **kw),
                          lambda a, b, kw=kw, wr=wr: PF.multi_margin_loss(a, b, weight=wr, **kw), [x, y], [0]))
        cases.append((f"multi_margin [N, 1] {reduction}",
                      lambda a, b, r=reduction: F.multi_margin_loss(a, b, reduction=r),
                      lambda a, b, r=reduction: PF.multi_margin_loss(a, b, reduction=r), [x, y[:, None]], [0]))
        cases.append((f"multi_label_margin {reduction}",
                      lambda a, b, r=reduction: F.multi_label_margin_loss(a, b, reduction=r),
                      lambda a, b, r=reduction: PF.multi_label_margin_loss(a, b, reduction=r), [x, _targets(rng)], [0]))
        a, p, n = (rng.standard_normal((N, 3)).astype(np.float32) for _ in range(3))
        for swap in (False, True):
            kw = dict(swap=swap, margin=1.5, reduction=reduction)
            cases.append((f"triplet_with_distance {kw}",
                          lambda u, v, w_, kw=kw: F.triplet_margin_with_distance_loss(u, v, w_, **kw),
                          lambda u, v, w_, kw=kw: PF.triplet_margin_with_distance_loss(u, v, w_, **kw),
                          [a, p, n], [0, 1, 2]))
    a, p, n = (rng.standard_normal((N, 3)).astype(np.float32) for _ in range(3))
    cases.append(("triplet_with_distance l1",
                  lambda u, v, w_: F.triplet_margin_with_distance_loss(
                      u, v, w_, distance_function=lambda s, t: jnp.sum(jnp.abs(s - t), -1), margin=2.0),
                  lambda u, v, w_: PF.triplet_margin_with_distance_loss(
                      u, v, w_, distance_function=lambda s, t: (s - t).abs().sum(-1), margin=2.0),
                  [a, p, n], [0, 1, 2]))
    for labels in (np.array([0, 1, 0, 2, 1]), np.array([3.0, 1.0, 2.0, 0.0, 5.0], np.float32)):
        cases.append((f"npair {labels.dtype}", lambda u, v, y: F.npair_loss(u, v, y, l2_reg=0.01),
                      lambda u, v, y: PF.npair_loss(u, v, y, l2_reg=0.01), [a, p, labels], [0, 1]))
    compare_cases(oracle, rng, cases)


def _margin_ce_reference(cos, label, m1, m2, m3, s):
    z = cos.astype(np.float64).copy()
    rows = np.arange(len(label))
    z[rows, label] = np.cos(m1 * np.arccos(z[rows, label]) + m2) - m3
    z = s * z
    logp = z - z.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    return -logp[rows, label][:, None], np.exp(logp)


def test_margin_cross_entropy_matches_numpy(rng):
    cos = rng.uniform(-0.9, 0.9, (N, 7)).astype(np.float32)
    label = rng.integers(0, 7, N)
    for m1, m2, m3, s in ((1.0, 0.5, 0.0, 64.0), (1.35, 0.0, 0.0, 30.0), (1.0, 0.0, 0.35, 20.0)):
        ref_loss, ref_softmax = _margin_ce_reference(cos, label, m1, m2, m3, s)
        kw = dict(margin1=m1, margin2=m2, margin3=m3, scale=s)
        loss, softmax = F.margin_cross_entropy(cos, label, return_softmax=True, reduction=None, **kw)
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(softmax, ref_softmax, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(F.margin_cross_entropy(cos, label[:, None], reduction="sum", **kw),
                                   ref_loss.sum(), rtol=1e-4)
    # Gradient against central differences of the float64 reference.
    import jax

    kw = dict(margin1=1.0, margin2=0.3, margin3=0.1, scale=8.0)
    grad = np.asarray(jax.grad(lambda c: F.margin_cross_entropy(c, label, **kw))(jnp.asarray(cos, jnp.float32)))
    eps, fd = 1e-4, np.zeros(cos.shape)
    for i in range(N):
        for j in range(7):
            d = np.zeros(cos.shape)
            d[i, j] = eps
            fd[i, j] = (_margin_ce_reference(cos + d, label, 1.0, 0.3, 0.1, 8.0)[0].mean()
                        - _margin_ce_reference(cos - d, label, 1.0, 0.3, 0.1, 8.0)[0].mean()) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-3, atol=1e-3)


def test_margin_loss_errors():
    x = jnp.zeros((3, 4))
    for fn, args in [(F.multi_margin_loss, (x, jnp.zeros(3, jnp.int32))),
                     (F.multi_label_margin_loss, (x, jnp.zeros((3, 4), jnp.int32))),
                     (F.triplet_margin_with_distance_loss, (x, x, x)),
                     (F.margin_cross_entropy, (x, jnp.zeros(3, jnp.int32)))]:
        with pytest.raises(ValueError, match=rf"{fn.__name__}: reduction='avg' is not supported"):
            fn(*args, reduction="avg")
    with pytest.raises(TypeError, match="multi_margin_loss: `label` must be an integer tensor"):
        F.multi_margin_loss(x, jnp.zeros(3))
    with pytest.raises(ValueError, match=r"multi_margin_loss: label must be \[N\] or \[N, 1\]"):
        F.multi_margin_loss(x, jnp.zeros(4, jnp.int32))
    with pytest.raises(ValueError, match="multi_margin_loss: weight must have one entry per class"):
        F.multi_margin_loss(x, jnp.zeros(3, jnp.int32), weight=jnp.ones(3))
    with pytest.raises(ValueError, match=r"multi_label_margin_loss: label values must be in \[-1, C - 1 = 3\]"):
        F.multi_label_margin_loss(x, jnp.full((3, 4), 4))
    with pytest.raises(ValueError, match=r"multi_label_margin_loss: label must be \[N, C\]"):
        F.multi_label_margin_loss(x, jnp.zeros((3, 2), jnp.int32))
    with pytest.raises(ValueError, match="triplet_margin_with_distance_loss: margin must be >= 0"):
        F.triplet_margin_with_distance_loss(x, x, x, margin=-1.0)
    with pytest.raises(ValueError, match="returned negative distances"):
        F.triplet_margin_with_distance_loss(x, x, x, distance_function=lambda a, b: -jnp.ones(3))
    with pytest.raises(ValueError, match="margin_cross_entropy: group="):
        F.margin_cross_entropy(x, jnp.zeros(3, jnp.int32), group=object())
    with pytest.raises(ValueError, match="npair_loss: labels must hold N=3 values"):
        F.npair_loss(x, x, jnp.zeros(4))
