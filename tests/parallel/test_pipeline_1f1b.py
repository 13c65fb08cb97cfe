"""The 1F1B pipeline schedule: the same loss and gradients as one device and as GPipe, with activation
memory that stays flat as microbatches grow (GPipe's grows), on 8 host devices (dp2 x pp4).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn, parallel

HIDDEN, CLASSES, ROWS = 64, 7, 8  # ROWS per microbatch


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(HIDDEN, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)

    def forward(self, h):
        return h + jnp.tanh(self.fc(self.norm(h)))


class Net(nn.Layer):
    def __init__(self, layers=8):
        super().__init__()
        pdx.seed(0)
        self.blocks = nn.LayerStack([Block() for _ in range(layers)])
        self.head = nn.Linear(HIDDEN, CLASSES)

    def loss(self, x, y, schedule, stages=1, microbatches=1):
        if schedule == "1f1b":
            return parallel.pipeline_1f1b_loss(self.blocks, x, y, self.head,
                                               lambda head, h, t: F.cross_entropy(head(h), t),
                                               num_stages=stages, num_microbatches=microbatches)
        return F.cross_entropy(self.head(parallel.run_layers(self.blocks, x)), y)  # GPipe under pp > 1


def data(m, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((ROWS * m, HIDDEN)).astype(np.float32),
            rng.integers(0, CLASSES, ROWS * m).astype(np.int32))


def test_same_loss_and_gradients_as_one_device_and_gpipe():
    x, y = data(8)
    ref_loss, ref_grads = pdx.value_and_grad(lambda m: m.loss(x, y, "plain"))(Net())
    for stages, m in ((2, 2), (4, 8)):  # no mesh: the schedule alone
        loss, grads = pdx.value_and_grad(lambda net: net.loss(x, y, "1f1b", stages, m))(Net())
        np.testing.assert_allclose(float(loss), float(ref_loss), rtol=1e-6)
        for k in ref_grads:
            np.testing.assert_allclose(np.asarray(grads[k]), np.asarray(ref_grads[k]), rtol=1e-5, atol=1e-6, err_msg=k)

    config = parallel.HybridConfig(dp_degree=2, pp_degree=4, accumulate_steps=8)
    mesh = config.mesh()
    net = parallel.shard(Net(), config, mesh=mesh)
    xs = jax.device_put(x, parallel.named_sharding(("batch", None), x.shape, config, mesh))
    ys = jax.device_put(y, parallel.named_sharding(("batch",), y.shape, config, mesh))
    one_f_one_b = pdx.jit(lambda n, a, b: pdx.value_and_grad(lambda q: q.loss(a, b, "1f1b", 4, 8))(n))
    gpipe = pdx.jit(lambda n, a, b: pdx.value_and_grad(lambda q: q.loss(a, b, "gpipe"))(n))
    with parallel.use_mesh(config, mesh):
        loss, grads = one_f_one_b(net, xs, ys)
        g_loss, g_grads = gpipe(net, xs, ys)
        compiled = one_f_one_b.lower(net, xs, ys).compile()
    np.testing.assert_allclose([float(loss), float(g_loss)], [float(ref_loss)] * 2, rtol=1e-5)
    for k in ref_grads:
        np.testing.assert_allclose(np.asarray(grads[k]), np.asarray(ref_grads[k]), rtol=1e-5, atol=1e-6, err_msg=k)
        np.testing.assert_allclose(np.asarray(grads[k]), np.asarray(g_grads[k]), rtol=1e-5, atol=1e-6, err_msg=k)
    assert "collective-permute" in {c.kind for c in parallel.collectives(compiled)}


def test_activation_memory_flat_in_microbatches_where_gpipe_grows():
    config_of = lambda m: parallel.HybridConfig(dp_degree=2, pp_degree=4, accumulate_steps=m)  # noqa: E731
    temp = {}
    for m in (8, 32):
        config = config_of(m)
        mesh = config.mesh()
        net = parallel.shard(Net(), config, mesh=mesh)
        x, y = data(m)
        xs = jax.device_put(x, parallel.named_sharding(("batch", None), x.shape, config, mesh))
        ys = jax.device_put(y, parallel.named_sharding(("batch",), y.shape, config, mesh))
        for schedule in ("1f1b", "gpipe"):
            step = pdx.jit(lambda n, a, b, s=schedule: pdx.value_and_grad(lambda q: q.loss(a, b, s, 4, m))(n))
            with parallel.use_mesh(config, mesh):
                temp[schedule, m] = step.lower(net, xs, ys).compile().memory_analysis().temp_size_in_bytes
    assert temp["1f1b", 8] < temp["gpipe", 8], temp
    # 4x the microbatches: GPipe keeps every microbatch's activations, 1F1B at most 2p - 1 stage inputs
    assert temp["gpipe", 32] > 2.5 * temp["gpipe", 8], temp
    assert temp["1f1b", 32] < 1.6 * temp["1f1b", 8], temp


def test_bad_input_names_the_numbers():
    net = Net(layers=6)
    x, y = data(4)
    with pytest.raises(ValueError, match=r"6 layers cannot be split into 4 stages"):
        net.loss(x, y, "1f1b", 4, 4)
    with pytest.raises(ValueError, match=r"num_microbatches=2 < num_stages=3"):
        net.loss(x, y, "1f1b", 3, 2)
    with pytest.raises(TypeError, match="must be a pdx.nn.LayerStack"):
        parallel.pipeline_1f1b_loss([Block()], x, y, net.head, lambda *a: 0.0, num_stages=1, num_microbatches=1)
