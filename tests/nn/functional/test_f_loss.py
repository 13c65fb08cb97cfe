"""pdx.nn.functional losses vs paddle.nn.functional."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn.functional as F

N, C = 6, 5

# (label kind, kwargs): "hard" = [N] int, "hard1" = [N, 1] int, "soft" = [N, C] distributions.
CE_CASES = [
    ("hard", {}), ("hard1", {}), ("hard", {"reduction": "sum"}), ("hard", {"reduction": "none"}),
    ("hard1", {"reduction": "none"}), ("hard", {"weight": True}), ("hard", {"weight": True, "reduction": "none"}),
    ("hard", {"ignore_index": 2}), ("hard", {"ignore_index": 2, "weight": True}), ("hard_ignored", {}),
    ("hard_ignored", {"weight": True}), ("soft", {"soft_label": True}), ("soft", {"soft_label": True, "weight": True}),
    ("soft", {"soft_label": True, "reduction": "none"}), ("hard", {"label_smoothing": 0.1}),
    ("hard", {"label_smoothing": 0.2, "weight": True, "reduction": "none"}), ("probs", {"use_softmax": False}),
]


def _ce_inputs(rng, kind):
    logits = rng.standard_normal((N, C)).astype(np.float32)
    if kind == "soft":
        e = np.exp(rng.standard_normal((N, C)))
        return logits, (e / e.sum(-1, keepdims=True)).astype(np.float32)
    label = rng.integers(0, C, N).astype(np.int64)
    if kind == "hard_ignored":
        label[[1, 4]] = -100
    if kind == "hard1":
        label = label[:, None]
    if kind == "probs":
        e = np.exp(logits)
        logits = (e / e.sum(-1, keepdims=True)).astype(np.float32)
    return logits, label


@pytest.mark.parametrize("kind,kwargs", CE_CASES, ids=[f"{k}-{v}" for k, v in CE_CASES])
def test_cross_entropy_forward(oracle, rng, kind, kwargs):
    logits, label = _ce_inputs(rng, kind)
    kwargs = dict(kwargs)
    w = rng.random(C).astype(np.float32) + 0.5 if kwargs.pop("weight", False) else None
    ours = F.cross_entropy(jnp.asarray(logits), jnp.asarray(label), None if w is None else jnp.asarray(w), **kwargs)
    ref = oracle.F.cross_entropy(oracle.t(logits), oracle.t(label), None if w is None else oracle.t(w), **kwargs)
    oracle.close(ours, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind,kwargs", [("hard", {}), ("hard_ignored", {"weight": True}),
                                         ("hard", {"ignore_index": 2}),
                                         ("soft", {"soft_label": True}), ("hard", {"label_smoothing": 0.1})],
                         ids=str)
def test_cross_entropy_gradients(oracle, rng, kind, kwargs):
    logits, label = _ce_inputs(rng, kind)
    kwargs = dict(kwargs)
    w = rng.random(C).astype(np.float32) + 0.5 if kwargs.pop("weight", False) else None
    wo = None if w is None else jnp.asarray(w)
    wr = None if w is None else oracle.t(w)
    oracle.grads(lambda x: F.cross_entropy(x, jnp.asarray(label), wo, **kwargs),
                 lambda x: oracle.F.cross_entropy(x, oracle.t(label), wr, **kwargs), [logits], [0], rng)


def test_cross_entropy_class_axis_and_spatial_labels(oracle, rng):
    x = rng.standard_normal((2, C, 3, 4)).astype(np.float32)
    y = rng.integers(0, C, (2, 3, 4)).astype(np.int64)
    for reduction in ("mean", "none"):
        oracle.close(F.cross_entropy(jnp.asarray(x), jnp.asarray(y), axis=1, reduction=reduction),
                     oracle.F.cross_entropy(oracle.t(x), oracle.t(y), axis=1, reduction=reduction), atol=1e-6)


def test_softmax_with_cross_entropy(oracle, rng):
    logits, label = _ce_inputs(rng, "hard1")
    oracle.close(F.softmax_with_cross_entropy(jnp.asarray(logits), jnp.asarray(label)),
                 oracle.F.softmax_with_cross_entropy(oracle.t(logits), oracle.t(label)), atol=1e-6)
    loss, sm = F.softmax_with_cross_entropy(jnp.asarray(logits), jnp.asarray(label), return_softmax=True)
    ref_loss, ref_sm = oracle.F.softmax_with_cross_entropy(oracle.t(logits), oracle.t(label), return_softmax=True)
    oracle.close(loss, ref_loss, atol=1e-6)
    oracle.close(sm, ref_sm, atol=1e-6)
    soft = _ce_inputs(rng, "soft")[1]
    oracle.close(F.softmax_with_cross_entropy(jnp.asarray(logits), jnp.asarray(soft), soft_label=True),
                 oracle.F.softmax_with_cross_entropy(oracle.t(logits), oracle.t(soft), soft_label=True), atol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 1},
                                    {"weight": True}, {"weight": True, "ignore_index": 0, "reduction": "none"}],
                         ids=str)
def test_nll_loss(oracle, rng, kwargs):
    x = np.log(np.random.default_rng(1).dirichlet(np.ones(C), (N, 3))).transpose(0, 2, 1).astype(np.float32)
    y = rng.integers(0, C, (N, 3)).astype(np.int64)
    kwargs = dict(kwargs)
    w = rng.random(C).astype(np.float32) + 0.5 if kwargs.pop("weight", False) else None
    wo, wr = (None, None) if w is None else (jnp.asarray(w), oracle.t(w))
    oracle.close(F.nll_loss(jnp.asarray(x[:, :, 0]), jnp.asarray(y[:, 0]), wo, **kwargs),
                 oracle.F.nll_loss(oracle.t(x[:, :, 0]), oracle.t(y[:, 0]), wr, **kwargs), atol=1e-6)
    if "ignore_index" not in kwargs:  # paddle's K-dim nll_loss kernel hangs with ignore_index set
        oracle.close(F.nll_loss(jnp.asarray(x), jnp.asarray(y), wo, **kwargs),
                     oracle.F.nll_loss(oracle.t(x), oracle.t(y), wr, **kwargs), atol=1e-6)


# name, pdx/paddle call with (a, b) float inputs of shape (3, 5, 7), input transform
PAIR_LOSSES = [
    ("mse_loss", {}), ("mse_loss", {"reduction": "none"}), ("l1_loss", {"reduction": "sum"}),
    ("smooth_l1_loss", {}), ("smooth_l1_loss", {"delta": 0.5, "reduction": "none"}),
    ("smooth_l1_loss", {"delta": 0.5, "is_huber": False}), ("square_error_cost", {}),
    ("binary_cross_entropy", {}), ("binary_cross_entropy", {"reduction": "none"}),
    ("binary_cross_entropy_with_logits", {}), ("binary_cross_entropy_with_logits", {"reduction": "sum"}),
    ("kl_div", {}), ("kl_div", {"reduction": "batchmean"}), ("kl_div", {"reduction": "none", "log_target": True}),
    ("soft_margin_loss", {}), ("hinge_embedding_loss", {"margin": 0.5}), ("log_loss", {}),
    ("sigmoid_focal_loss", {}), ("sigmoid_focal_loss", {"alpha": 0.5, "gamma": 1.0, "reduction": "mean"}),
    ("poisson_nll_loss", {}), ("poisson_nll_loss", {"log_input": False, "full": True}),
    ("multi_label_soft_margin_loss", {}), ("pairwise_distance", {}), ("pairwise_distance", {"p": 1.0, "keepdim": True}),
]


def _pair_inputs(rng, name, shape=(3, 5, 7)):
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    if name in ("binary_cross_entropy", "log_loss"):
        a = (1 / (1 + np.exp(-a))).astype(np.float32)
        b = (rng.random(shape) > 0.5).astype(np.float32)
    elif name in ("binary_cross_entropy_with_logits", "sigmoid_focal_loss", "multi_label_soft_margin_loss"):
        b = (rng.random(shape) > 0.5).astype(np.float32)
    elif name in ("soft_margin_loss", "hinge_embedding_loss"):
        b = np.where(rng.random(shape) > 0.5, 1.0, -1.0).astype(np.float32)
    elif name == "kl_div":
        a = np.log(rng.random(shape) + 0.1).astype(np.float32)
        b = (rng.random(shape) + 0.05).astype(np.float32)
    elif name == "poisson_nll_loss":
        a = (rng.random(shape) + 0.1).astype(np.float32)
        b = rng.integers(0, 4, shape).astype(np.float32)
    return a, b


@pytest.mark.parametrize("name,kwargs", PAIR_LOSSES, ids=[f"{n}-{k}" for n, k in PAIR_LOSSES])
def test_elementwise_losses(oracle, rng, name, kwargs):
    a, b = _pair_inputs(rng, name, (6, 1) if name == "log_loss" else (3, 5, 7))
    oracle.close(getattr(F, name)(jnp.asarray(a), jnp.asarray(b), **kwargs),
                 getattr(oracle.F, name)(oracle.t(a), oracle.t(b), **kwargs), rtol=1e-5, atol=1e-5)


def test_weighted_binary_losses_and_gradients(oracle, rng):
    a, b = _pair_inputs(rng, "binary_cross_entropy_with_logits", (4, 6))
    w = rng.random((4, 6)).astype(np.float32)
    pw = (rng.random(6) * 3).astype(np.float32)
    oracle.close(F.binary_cross_entropy_with_logits(jnp.asarray(a), jnp.asarray(b), jnp.asarray(w),
                                                    pos_weight=jnp.asarray(pw)),
                 oracle.F.binary_cross_entropy_with_logits(oracle.t(a), oracle.t(b), oracle.t(w),
                                                           pos_weight=oracle.t(pw)),
                 atol=1e-6)
    p = (1 / (1 + np.exp(-a))).astype(np.float32)
    oracle.close(F.binary_cross_entropy(jnp.asarray(p), jnp.asarray(b), jnp.asarray(w), reduction="sum"),
                 oracle.F.binary_cross_entropy(oracle.t(p), oracle.t(b), oracle.t(w), reduction="sum"), atol=1e-5)
    oracle.grads(lambda x: F.binary_cross_entropy_with_logits(x, jnp.asarray(b), pos_weight=jnp.asarray(pw)),
                 lambda x: oracle.F.binary_cross_entropy_with_logits(x, oracle.t(b), pos_weight=oracle.t(pw)),
                 [a], [0], rng)
    oracle.grads(lambda x: F.smooth_l1_loss(x, jnp.asarray(p), delta=0.3),
                 lambda x: oracle.F.smooth_l1_loss(x, oracle.t(p), delta=0.3), [a], [0], rng)


def test_ranking_and_embedding_losses(oracle, rng):
    a = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal((6, 4)).astype(np.float32)
    c = rng.standard_normal((6, 4)).astype(np.float32)
    y = np.where(rng.random(6) > 0.5, 1, -1).astype(np.int64)
    yf = y.astype(np.float32)
    oracle.close(F.margin_ranking_loss(jnp.asarray(a[:, 0]), jnp.asarray(b[:, 0]), jnp.asarray(yf), margin=0.3),
                 oracle.F.margin_ranking_loss(oracle.t(a[:, 0]), oracle.t(b[:, 0]), oracle.t(yf), margin=0.3),
                 atol=1e-6)
    oracle.close(F.cosine_embedding_loss(jnp.asarray(a), jnp.asarray(b), jnp.asarray(y), margin=0.2),
                 oracle.F.cosine_embedding_loss(oracle.t(a), oracle.t(b), oracle.t(y), margin=0.2), atol=1e-6)
    for kw in ({}, {"p": 1, "swap": True, "reduction": "none"}):
        oracle.close(F.triplet_margin_loss(jnp.asarray(a), jnp.asarray(b), jnp.asarray(c), **kw),
                     oracle.F.triplet_margin_loss(oracle.t(a), oracle.t(b), oracle.t(c), **kw), atol=1e-5)


def test_loss_errors():
    x = jnp.zeros((4, 5))
    with pytest.raises(ValueError, match=r"cross_entropy: label.shape=\(4, 2\) does not fit input.shape=\(4, 5\)"):
        F.cross_entropy(x, jnp.zeros((4, 2), jnp.int32))
    with pytest.raises(ValueError, match=r"cross_entropy: label.shape=\(3,\) must equal input.shape"):
        F.cross_entropy(x, jnp.zeros((3,), jnp.int32))
    with pytest.raises(TypeError, match="hard labels must be integers"):
        F.cross_entropy(x, jnp.zeros((4,)))
    with pytest.raises(ValueError, match="soft labels need label.shape == input.shape"):
        F.cross_entropy(x, jnp.zeros((4, 4)), soft_label=True)
    with pytest.raises(ValueError, match="cross_entropy: reduction='avg'"):
        F.cross_entropy(x, jnp.zeros((4,), jnp.int32), reduction="avg")
    with pytest.raises(ValueError, match=r"weight.shape=\(3,\) must have one entry per class \(5\)"):
        F.cross_entropy(x, jnp.zeros((4,), jnp.int32), weight=jnp.ones(3))
    with pytest.raises(ValueError, match="nll_loss: label.shape"):
        F.nll_loss(x, jnp.zeros((4, 2), jnp.int32))
    with pytest.raises(ValueError, match="mse_loss: input.shape=.* do not broadcast"):
        F.mse_loss(jnp.zeros((2, 3)), jnp.zeros((4,)))
    with pytest.raises(ValueError, match="kl_div: reduction='max'"):
        F.kl_div(x, x, reduction="max")
