"""The flax.nnx features pdx relies on, each checked to behave as pdx._nnx and
pdx._placement assume. A flax upgrade that changes one fails here first.

Relied on:
  1. `Variable._raw_value`: the slot `get_raw_value()` reads.
  2. nnx refuses Variable writes from a foreign trace (`TraceContextError`),
     and `Variable._trace_state` / `Pytree._pytree__state._trace_state` are the
     TraceStates that decide it.
  3. Every attribute write of every nnx.Pytree goes through
     `Pytree.__setattr__`/`__delattr__`; Variable metadata changes through
     `set_metadata`, `del_metadata`, `update_from_state`, `copy_from`.
  4. A graph definition depends only on node types and attributes, Variable
     types and metadata, and the contents of plain lists/dicts, which
     `nnx.iter_graph` yields as nodes.
  5. `out_sharding` is flax's current name for logical axis names
     (`sharding_names` is deprecated); with `eager_sharding=False` flax only
     records it.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import errors as nnx_errors
from flax import nnx

import pdx
from pdx import _nnx, _placement


class Plain(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones(2))
        self.size = 2


def test_stored_values_and_writes_from_a_foreign_trace():
    m = Plain()
    assert _nnx.stored_value(m.w) is m.w.get_raw_value()                    # 1
    assert _nnx.stored_values([m.w]) == [m.w.get_raw_value()]

    @jax.jit
    def nnx_write(x):
        m.w.set_raw_value(x)
        return x

    with pytest.raises(nnx_errors.TraceContextError):                        # 2: why the bypass exists
        nnx_write(jnp.zeros(2))

    original = m.w.get_raw_value()

    @jax.jit
    def bypass(x):
        _nnx.store_value(m.w, x * 2)
        out = m.w.get_raw_value()
        _nnx.store_value(m.w, original)
        return out

    np.testing.assert_array_equal(bypass(jnp.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(m.w[...], [1.0, 1.0])


def test_mutable_in_trace_opens_and_restores():
    m = Plain()
    before = (m.w._trace_state, m._pytree__state._trace_state, m.w.get_raw_value())

    @jax.jit
    def f(x):
        with _nnx.mutable_in_trace([m.w], [m], [x]):
            m.w[...] = m.w[...] * 3                                           # 2: writes accepted
            m.size = 2                                                        # and node attributes
            return _nnx.stored_value(m.w)

    np.testing.assert_array_equal(f(jnp.full(2, 2.0)), [6.0, 6.0])
    assert (m.w._trace_state, m._pytree__state._trace_state, m.w.get_raw_value()) == before

    @jax.jit
    def fails(x):
        with _nnx.mutable_in_trace([m.w], [m], [x]):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fails(jnp.zeros(2))
    assert (m.w._trace_state, m._pytree__state._trace_state, m.w.get_raw_value()) == before
    m.w[...] = jnp.zeros(2)                                                   # still writable eagerly


def _moves(change) -> bool:
    before = _nnx.structure_version()
    change()
    return _nnx.structure_version() != before


def test_structure_version_sees_every_nnx_mutation_point():
    for cls, name in _nnx._HOOKED:                                            # 3: the names exist and are hooked
        assert getattr(cls.__dict__[name], "__pdx_counts_structure__", False), (cls, name)
    # No nnx Pytree class routes attribute writes around Pytree.__setattr__/__delattr__.
    for name in dir(nnx):
        cls = getattr(nnx, name)
        if isinstance(cls, type) and issubclass(cls, nnx.Pytree):
            assert cls.__setattr__ is nnx.Pytree.__setattr__, name
            assert cls.__delattr__ is nnx.Pytree.__delattr__, name
    m, other = Plain(), Plain()
    layers = nnx.List([Plain()])
    table = nnx.Dict(a=Plain())
    assert _moves(lambda: setattr(m, "extra", nnx.Param(jnp.zeros(1))))
    assert _moves(lambda: delattr(m, "extra"))
    assert _moves(lambda: setattr(m, "size", 3))
    assert _moves(lambda: layers.append(Plain()))
    assert _moves(lambda: table.__setitem__("b", Plain()))
    assert _moves(lambda: m.w.set_metadata("note", 1))
    assert _moves(lambda: m.w.set_metadata(note=2))
    assert _moves(lambda: m.w.set_metadata({"note": 3}))
    assert _moves(lambda: m.w.del_metadata("note"))
    assert _moves(lambda: m.w.copy_from(other.w))
    assert _moves(lambda: nnx.update(m, nnx.state(other)))
    assert not _moves(lambda: m.w.set_value(jnp.zeros(2)))                    # values are not structure
    assert not _moves(lambda: m.w.__setitem__(..., jnp.ones(2)))


def _graph_parts(*objs):
    g = pdx._graph.Graph(objs)
    return g.nodes, g.variables, g.containers


def test_fingerprint_covers_what_the_graphdef_depends_on():
    class Holder(nnx.Module):
        def __init__(self):
            self.child = Plain()
            self.items = nnx.data([Plain()])

    h = Holder()
    assert any(c is h.items for c in _graph_parts(h)[2])                     # 4: containers are nodes

    def fingerprint():
        return _nnx.structure_fingerprint(*_graph_parts(h))

    changes = [
        lambda: setattr(h.child, "size", 5),                  # a static attribute
        lambda: h.child.w.set_metadata("note", "x"),          # Variable metadata
        lambda: setattr(h.child, "w", nnx.BatchStat(jnp.ones(2))),  # a Variable's type
        lambda: h.items.append(Plain()),                      # a plain list, in place
        lambda: setattr(h, "child", Plain()),                 # a subtree replaced by an equal one
    ]
    for change in changes:
        before_fp, before_def = fingerprint(), nnx.graphdef(h)
        assert fingerprint() == before_fp
        change()
        after_def = nnx.graphdef(h)
        assert fingerprint() != before_fp
        # Whenever the graph definition changed, so did the fingerprint (the converse may not hold).
        assert after_def == before_def or fingerprint() != before_fp
    h.child.w[...] = jnp.zeros(2)                             # a value change is not structure
    fp = fingerprint()
    h.child.w[...] = jnp.ones(2)
    assert fingerprint() == fp


def test_out_sharding_is_the_logical_axes_name():
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                        # 5: no deprecation
        p = nnx.Param(jnp.ones((2, 4)), **_placement.axes_metadata(("embed", "mlp")))
    assert p.get_metadata("out_sharding") == ("embed", "mlp")
    assert _placement.logical_axes(p) == ("embed", "mlp")
    assert isinstance(p.get_value().sharding, jax.sharding.SingleDeviceSharding)  # recorded, not applied
    with pytest.warns(DeprecationWarning, match="sharding_names"):
        nnx.Param(jnp.ones(2), sharding_names=("embed",), eager_sharding=False)
    assert _placement.logical_axes(pdx.nn.Linear(2, 3).weight) == ("embed", "mlp")


def test_placement_record():
    net = pdx.nn.Linear(8, 16)
    assert _placement.placement_of(net.weight) is None
    x = jnp.ones((8, 16))
    assert _placement.constrain_value(net.weight, x) is x
    pdx.parallel.shard(net, pdx.parallel.HybridConfig(mp_degree=2, sharding_degree=2, sharding_stage=2))
    record = _placement.placement_of(net.weight)
    assert isinstance(record, _placement.Placement)
    assert record.value.spec == jax.sharding.PartitionSpec(None, "mp")
    assert "sharding" in tuple(record.grad.spec)                              # stage 2: gradients split
    with pytest.raises(dataclasses_frozen_error()):
        record.value = None
    with pytest.raises(TypeError, match="NamedSharding"):
        _placement.Placement(value=jax.sharding.PartitionSpec())
    out = jax.jit(lambda g: _placement.constrain_grad(net.weight, g))(jnp.ones((8, 16)))
    assert out.sharding.spec == record.grad.spec
    _placement.drop_placement(net.weight)
    assert _placement.placement_of(net.weight) is None


def dataclasses_frozen_error():
    import dataclasses

    return dataclasses.FrozenInstanceError


def test_bookkeeping_attributes_and_layer_norm_helpers():
    m = Plain()
    names = [name for name, _ in _nnx.user_attributes(m)]
    assert names == ["w", "size"]                                             # nnx's own slots left out
    assert any(name.startswith("_pytree__") for name in vars(m))             # which nnx does keep there
    x = jnp.asarray(np.random.default_rng(0).standard_normal((2, 3, 8)), jnp.float32)
    scale, bias = jnp.full(8, 2.0), jnp.full(8, 0.5)
    got = _nnx.layer_norm(x, (2,), scale, bias, 1e-5)
    xn = np.asarray(x, np.float64)
    ref = (xn - xn.mean(-1, keepdims=True)) / np.sqrt(xn.var(-1, keepdims=True) + 1e-5) * 2.0 + 0.5
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    assert got.dtype == x.dtype
