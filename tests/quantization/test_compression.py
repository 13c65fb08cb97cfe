"""Pruning (unstructured, gradual schedule, masks kept through training) and distillation."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn
from pdx.quantization import (
    DistillationLoss,
    Distiller,
    GMPUnstructuredPruner,
    UnstructuredPruner,
    feature_loss,
    soft_label_loss,
)


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    return jnp.asarray(x[:1400]), d.target[:1400].astype(np.int32), jnp.asarray(x[1400:]), d.target[1400:]


def _mlp(hidden):
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def _fit(model, params, loss_fn, x, y, steps, lr=3e-3, after_step=None):
    opt = pdx.optimizer.Adam(learning_rate=lr, parameters=model.parameters() if params is None else params)

    @pdx.jit
    def step(model, opt, xb, yb):
        loss, grads = pdx.value_and_grad(loss_fn)(model, xb, yb)
        opt.step(grads)
        return loss

    rng = np.random.RandomState(0)
    for _ in range(steps):
        idx = rng.randint(0, len(x), 64)
        step(model, opt, x[idx], y[idx])
        if after_step:
            after_step()
    return model


def _acc(model, x, y):
    return float(np.mean(np.argmax(np.asarray(model(x)), -1) == y))


def test_gmp_pruning_reaches_the_ratio_keeps_masks_and_accuracy(digits):
    xtr, ytr, xte, yte = digits
    pdx.seed(0)
    model = _fit(_mlp(64), None, lambda m, a, b: F.cross_entropy(m(a), b), xtr, ytr, 300)
    dense = _acc(model, xte, yte)
    configs = {"stable_iterations": 10, "pruning_iterations": 100, "tunning_iterations": 100, "pruning_steps": 5,
               "initial_ratio": 0.2}
    pruner = GMPUnstructuredPruner(model, ratio=0.8, configs=configs)
    # The cubic schedule (PaddleSlim's GMP): 0 while stable, ratio + (r0 - ratio)(1 - t)^3 in steps, then ratio.
    assert pruner.ratio_at(5) == 0.0
    np.testing.assert_allclose(pruner.ratio_at(10 + 40), 0.8 + (0.2 - 0.8) * (1 - 0.4) ** 3)
    assert pruner.ratio_at(10 + 100) == 0.8
    _fit(model, model.parameters(), lambda m, a, b: F.cross_entropy(m(a), b), xtr, ytr, 210, lr=1e-3,
         after_step=pruner.step)
    w0 = np.asarray(model[0].weight.get_value())
    assert abs(pruner.sparsity() - 0.8) < 0.01
    assert np.all(w0[~np.asarray(pruner.masks["0.weight"])] == 0)          # pruned weights stayed zero while training
    pruned = _acc(model, xte, yte)
    print(f"digits MLP: dense {dense:.4f}, 80% sparse {pruned:.4f}")
    assert pruned >= dense - 0.03

    local = UnstructuredPruner(_mlp(32), ratio=0.5, local_sparsity=True)
    local.step()
    for name, mask in local.masks.items():
        assert abs(float(jnp.mean(~mask)) - 0.5) < 0.02, name
    with pytest.raises(ValueError, match="ratio=1.5"):
        UnstructuredPruner(_mlp(8), ratio=1.5)


def test_soft_label_loss_matches_numpy_and_distillation_helps_a_small_student(digits):
    rng = np.random.RandomState(0)
    s, t = rng.randn(5, 7).astype(np.float32), rng.randn(5, 7).astype(np.float32)

    def log_softmax(z):
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))

    T = 3.0
    pt = np.exp(log_softmax(t / T))
    ref = np.mean(np.sum(pt * (log_softmax(t / T) - log_softmax(s / T)), -1)) * T * T
    np.testing.assert_allclose(float(soft_label_loss(jnp.asarray(s), jnp.asarray(t), T)), ref, rtol=1e-5)
    with pytest.raises(ValueError, match="adapter="):
        feature_loss(jnp.ones((2, 4)), jnp.ones((2, 8)))
    adapter = nn.Linear(4, 8)
    assert float(feature_loss(jnp.ones((2, 4)), adapter(jnp.ones((2, 4))), adapter=adapter)) == 0.0

    xtr, ytr, xte, yte = digits
    small_x, small_y = xtr[:150], ytr[:150]         # the student sees few labels; the teacher saw them all
    pdx.seed(1)
    teacher = _fit(_mlp(128), None, lambda m, a, b: F.cross_entropy(m(a), b), xtr, ytr, 400)
    pdx.seed(2)
    alone = _fit(_mlp(8), None, lambda m, a, b: F.cross_entropy(m(a), b), small_x, small_y, 300)
    pdx.seed(2)
    distiller = Distiller(_mlp(8), teacher)
    mixed = DistillationLoss(temperature=T, alpha=0.3)(jnp.asarray(s), jnp.asarray(t), jnp.arange(5) % 7)
    np.testing.assert_allclose(float(mixed), 0.3 * float(F.cross_entropy(jnp.asarray(s), jnp.arange(5) % 7))
                               + 0.7 * ref, rtol=1e-5)
    criterion = DistillationLoss(temperature=4.0, alpha=0.0)    # soft labels only: the labels below are unused

    def distill_loss(m, a, b):
        student_logits, teacher_logits = m(a)
        return criterion(student_logits, teacher_logits, b)

    before = np.asarray(teacher[0].weight.get_value()).copy()
    # Unlabelled inputs get the teacher's soft labels: the student trains on all of xtr through the teacher.
    _fit(distiller, distiller.student.parameters(), distill_loss, xtr, np.zeros_like(ytr), 300)
    np.testing.assert_array_equal(np.asarray(teacher[0].weight.get_value()), before)   # the teacher is frozen
    acc_alone, acc_distilled = _acc(alone, xte, yte), _acc(distiller.student, xte, yte)
    print(f"student alone {acc_alone:.4f}, distilled {acc_distilled:.4f}, teacher {_acc(teacher, xte, yte):.4f}")
    assert acc_distilled > acc_alone


def test_custom_quanter_through_the_quanter_decorator():
    import sys
    import types

    from pdx.quantization import PTQ, BaseQuanter, QuantConfig, fake_quant, quanter

    module = types.ModuleType("custom_quanters")
    sys.modules[module.__name__] = module
    try:
        class HalfRangeLayer(BaseQuanter):
            def __init__(self, layer, bit_length=8):
                super().__init__(bit_length)

            def forward(self, x):
                self._seen()
                return fake_quant(x, 0.5 * jnp.max(jnp.abs(x)), self.bit_length())

            def scales(self):
                return jnp.asarray(1.0)

        HalfRangeLayer.__module__ = module.__name__
        quanter("HalfRange")(HalfRangeLayer)
        factory = module.HalfRange(bit_length=4)
        assert factory.kwargs == {"bit_length": 4}
        model = PTQ(QuantConfig(activation=factory, weight=None)).quantize(nn.Sequential(nn.Linear(3, 2)))
        assert isinstance(model[0].activation_quanter, HalfRangeLayer)
        x = jnp.asarray([[1.0, 0.2, -0.3]])
        np.testing.assert_allclose(np.asarray(model[0].activation_quanter(x)),
                                   np.clip(np.round(np.asarray(x) / 0.5 * 7), -7, 7) * 0.5 / 7, atol=1e-6)
    finally:
        del sys.modules[module.__name__]


class _CNN(nn.Layer):
    def __init__(self, c=16, hidden=64):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, c, 3, padding=1), nn.BatchNorm2D(c), nn.ReLU(),
            nn.Conv2D(c, c, 3, padding=1, groups=c), nn.BatchNorm2D(c), nn.ReLU(), nn.MaxPool2D(2),
            nn.Conv2D(c, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
            nn.Flatten(), nn.Linear(128, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, x):
        return self.features(x)


def test_channel_pruning_removes_channels_and_the_state_dict_loads_into_the_smaller_net(digits):
    from pdx.quantization import ChannelGroup, ChannelPruner, channel_groups, sensitivity

    xtr, ytr, xte, yte = (a.reshape(-1, 1, 8, 8) if i % 2 == 0 else a for i, a in enumerate(digits))
    pdx.seed(3)
    net = _fit(_CNN(), None, lambda m, a, b: F.cross_entropy(m(a), b), xtr, ytr, 300)
    net.eval()
    base = _acc(net, xte, yte)
    assert channel_groups(net) == [ChannelGroup("features.0", ("features.1", "features.3", "features.4"), ("features.7",)),
                                   ChannelGroup("features.7", (), ("features.11",)),
                                   ChannelGroup("features.11", (), ("features.13",))]
    flops0 = pdx.flops(net, [1, 1, 8, 8], print_detail=False)
    params0 = sum(p.size for p in net.parameters())
    table = sensitivity(net, lambda m: _acc(m, xte, yte), ratios=(0.0, 0.5))
    assert all(row[0.0] == base for row in table.values())

    pruner = ChannelPruner(net, "l1")
    assert pruner.prune(0.5) == {"features.0": 8, "features.7": 16, "features.11": 32}
    flops1 = pdx.flops(net, [1, 1, 8, 8], print_detail=False)
    params1 = sum(p.size for p in net.parameters())
    print(f"FLOPs {flops0} -> {flops1}, params {params0} -> {params1}")
    assert 0.2 < flops1 / flops0 < 0.6 and 0.2 < params1 / params0 < 0.6   # in and out widths both halve

    small = _CNN(c=8, hidden=32)
    small.features[7] = nn.Conv2D(8, 16, 3, padding=1)
    small.features[11] = nn.Linear(64, 32)
    missing, unexpected = small.set_state_dict(net.state_dict())
    assert not missing and not unexpected
    small.eval()
    np.testing.assert_allclose(np.asarray(small(xte[:32])), np.asarray(net(xte[:32])), atol=1e-5)

    net.train()
    _fit(net, None, lambda m, a, b: F.cross_entropy(m(a), b), xtr, ytr, 150, lr=1e-3)
    net.eval()
    tuned = _acc(net, xte, yte)
    print(f"digits CNN: unpruned {base:.4f}, 50% channels pruned + fine-tuned {tuned:.4f}")
    assert tuned >= base - 0.015
    with pytest.raises(ValueError, match="criterion='l3'"):
        ChannelPruner(net, "l3")
    with pytest.raises(ValueError, match="not a sublayer"):
        ChannelPruner(net, groups=[ChannelGroup("nope")])
