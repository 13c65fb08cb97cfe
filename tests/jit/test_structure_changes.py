"""pdx.jit retraces when the structure of any nnx object it threads changes.

Each case compiles a function, changes the structure of one object it
threads (a plain flax.nnx.Module, a pdx Layer, an optimizer, a plain list
inside a Layer, Variable metadata), calls again, and compares with the same
code run eagerly on an identical copy: a stale trace would silently drop the
change. A change to an unrelated object must not retrace.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

import pdx
from pdx import _placement, nn


class Plain(nnx.Module):
    """A flax module that knows nothing of pdx."""

    def __init__(self):
        self.w = nnx.Param(jnp.ones(3))


def _bump_every_param(module) -> None:
    for _, node in nnx.iter_graph(module):
        if isinstance(node, nnx.Param):
            node[...] = node[...] + 1.0


def test_plain_nnx_module_gains_a_param():
    traces = []

    @pdx.jit
    def step(m, x):
        traces.append(1)
        _bump_every_param(m)
        return x + m.w[...]

    m = Plain()
    step(m, jnp.zeros(3))
    m.extra = nnx.Param(jnp.full(3, 10.0))        # a new parameter after a compiled call
    step(m, jnp.zeros(3))
    np.testing.assert_array_equal(m.w[...], np.full(3, 3.0))
    np.testing.assert_array_equal(m.extra[...], np.full(3, 11.0))  # its update is applied, not dropped
    assert len(traces) == 2

    m.child = Plain()                                 # a new submodule
    step(m, jnp.zeros(3))
    np.testing.assert_array_equal(m.child.w[...], np.full(3, 2.0))
    del m.extra                                       # an attribute removed
    step(m, jnp.zeros(3))
    np.testing.assert_array_equal(m.child.w[...], np.full(3, 3.0))
    assert len(traces) == 4
    step(m, jnp.zeros(3))                             # unchanged structure: no retrace
    assert len(traces) == 4


def test_variable_metadata_read_while_tracing():
    @pdx.jit
    def scaled(m, x):
        return x * m.w.get_metadata("scale", 1.0)

    m = Plain()
    np.testing.assert_array_equal(scaled(m, jnp.ones(3)), np.ones(3))
    m.w.set_metadata("scale", 3.0)
    np.testing.assert_array_equal(scaled(m, jnp.ones(3)), np.full(3, 3.0))
    m.w.del_metadata("scale")
    np.testing.assert_array_equal(scaled(m, jnp.ones(3)), np.ones(3))


def test_layer_attribute_replaced_and_list_changed_in_place():
    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.extra = []                           # a plain list: changes in place

        def forward(self, x):
            x = self.fc(x)
            for layer in self.extra:
                x = layer(x)
            return x

    pdx.seed(0)
    net = Net()
    late = nn.Linear(4, 4)                            # built before any compiled call
    forward = pdx.jit(lambda net, x: net(x))
    x = jnp.arange(8.0).reshape(2, 4)
    np.testing.assert_allclose(forward(net, x), net(x), rtol=1e-6)
    net.fc = nn.Linear(4, 4)                          # new weights under the same name and shapes
    np.testing.assert_allclose(forward(net, x), net(x), rtol=1e-6)
    net.extra.append(net.add_sublayer("tail", nn.Linear(4, 4)))
    np.testing.assert_allclose(forward(net, x), net(x), rtol=1e-6)
    net.extra.append(late)                            # no attribute of any nnx object is written
    np.testing.assert_allclose(forward(net, x), net(x), rtol=1e-6)
    assert forward.cache_size() == 3                  # fc's replacement had an equal structure: shared trace


def test_amp_decorate_changes_dtypes():
    pdx.seed(1)
    net, ref = nn.Linear(4, 3), nn.Linear(4, 3)
    ref.set_state_dict(net.state_dict())
    forward = pdx.jit(lambda net, x: net(x))
    x = jnp.ones((2, 4), jnp.float32)
    assert forward(net, x).dtype == jnp.float32
    pdx.amp.decorate(models=net, level="O2", dtype="bfloat16")
    pdx.amp.decorate(models=ref, level="O2", dtype="bfloat16")
    out = forward(net, x.astype(jnp.bfloat16))
    assert out.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(out, np.float32), np.asarray(ref(x.astype(jnp.bfloat16)), np.float32))


def test_sharding_and_metadata_changes_retrace():
    traces = []

    def loss_fn(net, x):
        return (net(x) ** 2).mean()

    @pdx.jit
    def train_step(net, opt, x):
        traces.append(1)
        loss, grads = pdx.value_and_grad(loss_fn)(net, x)
        opt.step(grads)
        return loss

    def make():
        pdx.seed(2)
        net = nn.Linear(8, 16)
        return net, pdx.optimizer.SGD(learning_rate=0.1, parameters=net)

    net, opt = make()
    ref, ref_opt = make()
    x = jnp.arange(32.0).reshape(4, 8) / 32

    def eager_step(net, opt, x):
        loss, grads = pdx.value_and_grad(loss_fn)(net, x)
        opt.step(grads)
        return loss

    np.testing.assert_allclose(train_step(net, opt, x), eager_step(ref, ref_opt, x), rtol=1e-6)
    config = pdx.parallel.HybridConfig(mp_degree=2)
    pdx.parallel.shard([net, opt], config)           # placement recorded as Variable metadata
    pdx.parallel.shard([ref, ref_opt], config)
    assert len(traces) == 1
    np.testing.assert_allclose(train_step(net, opt, x), eager_step(ref, ref_opt, x), rtol=1e-6)
    assert len(traces) == 2                           # the step re-read the placement
    assert _placement.placement_of(net.weight).value.spec == jax.sharding.PartitionSpec(None, "mp")
    assert net.weight.get_value().sharding.spec == jax.sharding.PartitionSpec(None, "mp")

    zero3 = pdx.parallel.HybridConfig(sharding_degree=2, sharding_stage=3)
    pdx.parallel.shard([net, opt], zero3)            # placed anew: a different record
    pdx.parallel.shard([ref, ref_opt], zero3)
    np.testing.assert_allclose(train_step(net, opt, x), eager_step(ref, ref_opt, x), rtol=1e-6)
    np.testing.assert_allclose(net.weight.get_value(), ref.weight.get_value(), rtol=1e-6)
    assert net.weight.get_value().sharding.spec == _placement.placement_of(net.weight).value.spec
    assert "sharding" in tuple(net.weight.get_value().sharding.spec)
    assert len(traces) == 3

    other = Plain()                                   # other objects' changes do not retrace
    other.w.set_metadata("note", "unrelated")
    other.child = Plain()
    train_step(net, opt, x)
    assert len(traces) == 3
