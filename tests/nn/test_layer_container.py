"""Sequential, LayerList, LayerDict: naming, indexing, repr, sharing, modes."""

import collections

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import pdx.nn as nn
from layer_testutil import assert_close, load_from_paddle, pd_forward

ZERO = nn.initializer.Constant(0.0)


def _lin(i=2, o=2):
    return nn.Linear(i, o, weight_attr=ZERO)


def test_sequential_matches_paddle_names_and_output(paddle, rng):
    pd_net = paddle.nn.Sequential(paddle.nn.Linear(3, 4), paddle.nn.ReLU(), paddle.nn.Linear(4, 2))
    net = load_from_paddle(nn.Sequential(_lin(3, 4), nn.ReLU(), _lin(4, 2)), pd_net)
    assert list(net.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    x = rng.standard_normal((5, 3)).astype(np.float32)
    assert_close(net(jnp.asarray(x)), pd_forward(paddle, pd_net, x))
    assert repr(net) == repr(pd_net)
    assert len(net) == 3 and isinstance(net[1], nn.ReLU) and net[-1] is net[2]
    head = net[:2]
    assert isinstance(head, nn.Sequential) and head[0] is net[0] and len(head) == 2


def test_sequential_named_and_mutation():
    named = nn.Sequential(("fc", _lin()), ("act", nn.ReLU()))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"] and named["act"] is named[1]
    ordered = nn.Sequential(collections.OrderedDict([("a", _lin()), ("b", _lin())]))
    assert [n for n, _ in ordered.named_children()] == ["a", "b"]
    seq = nn.Sequential(_lin(), _lin())
    seq.append(nn.Tanh())
    seq.insert(0, nn.Sigmoid())
    assert [type(m).__name__ for m in seq] == ["Sigmoid", "Linear", "Linear", "Tanh"]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    del seq[0]
    assert len(seq) == 3
    with pytest.raises(IndexError, match="out of range"):
        seq[7]
    with pytest.raises(ValueError, match="shadow"):
        nn.Sequential(("forward", _lin()))


def test_order_survives_split_merge_and_jit():
    net = nn.Sequential(*[nn.Linear(2, 2, weight_attr=nn.initializer.Constant(float(i))) for i in range(12)])
    x = jnp.ones((1, 2))
    merged = nnx.merge(*nnx.split(net))  # nnx rebuilds attributes in sorted order: '10' before '2'
    assert [n for n, _ in merged.named_children()] == [str(i) for i in range(12)]
    assert sorted(merged.state_dict()) == sorted(net.state_dict())
    np.testing.assert_array_equal(nnx.jit(lambda m, x: m(x))(net, x), net(x))


def test_layer_list():
    layers = nn.LayerList([_lin() for _ in range(3)])
    assert len(layers) == 3 and list(layers.state_dict())[-1] == "2.bias"
    first = layers[0]
    layers.append(nn.ReLU())
    layers.insert(1, nn.Tanh())
    assert [type(m).__name__ for m in layers] == ["Linear", "Tanh", "Linear", "Linear", "ReLU"]
    assert [n for n, _ in layers.named_children()] == ["0", "1", "2", "3", "4"]
    assert list(layers.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias", "3.weight", "3.bias"]
    assert layers.pop(1).__class__ is nn.Tanh and layers[0] is first and layers[-1].__class__ is nn.ReLU
    layers.extend([nn.Sigmoid()])
    layers += [nn.ReLU()]
    assert len(layers) == 6 and len(layers[1:3]) == 2 and len(layers + layers) == 12
    layers[0] = nn.Identity()
    assert isinstance(layers[0], nn.Identity)
    del layers[1:3]
    assert [n for n, _ in layers.named_children()] == ["0", "1", "2", "3"]
    with pytest.raises(IndexError):
        layers[10]
    with pytest.raises(TypeError, match="Layer"):
        layers.append(3)


def test_layer_dict():
    d = nn.LayerDict({"proj": _lin(2, 3), "act": nn.ReLU()})
    assert list(d.keys()) == ["proj", "act"] and "proj" in d and len(d) == 2
    assert list(d.state_dict()) == ["proj.weight", "proj.bias"]
    d["out"] = _lin(3, 1)
    d.update([("norm", nn.LayerNorm(1))])
    assert list(d) == ["proj", "act", "out", "norm"]
    assert d.pop("act").__class__ is nn.ReLU and "act" not in d
    assert [k for k, _ in d.items()] == ["proj", "out", "norm"] and len(d.values()) == 3
    with pytest.raises(KeyError, match="nope"):
        d["nope"]
    d.clear()
    assert len(d) == 0 and d.state_dict() == {}


def test_shared_layers_modes_and_plain_list_error():
    shared = _lin()
    net = nn.Sequential(shared, nn.ReLU(), shared, nn.Dropout(0.5))
    assert len(net.parameters()) == 2  # the shared Linear counts once
    net.eval()
    assert all(not m.training for m in net.sublayers(include_self=True))
    net.train()
    assert all(m.training for m in net.sublayers(include_self=True))

    class Holder(nn.Layer):
        def __init__(self):
            super().__init__()
            self.blocks = [_lin(), _lin()]

    with pytest.raises(TypeError, match="LayerList"):
        Holder()
