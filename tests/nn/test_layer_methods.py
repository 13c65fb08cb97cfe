"""The Layer methods Paddle's `nn.Layer` has, side by side with paddle 3.3.1:
forward pre/post hooks (inputs/outputs replaced, order, prepend, kwargs,
always_call, remove() handles, inside pdx.jit), lookup by dotted path,
load_state_dict, dtype casts, state_dict hooks; and every public method of
paddle.nn.Layer exists on pdx's Layer."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx


class _Net:
    """The same two-layer net in both frameworks."""

    @staticmethod
    def build(nn):
        class Net(nn.Layer):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 2)
                self.bn = nn.BatchNorm1D(2)
                self.seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())

            def forward(self, x, scale=1.0):
                return self.seq(self.bn(self.fc(x))) * scale

        return Net()


def _copy(ref, net):
    net.set_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})


def test_every_paddle_layer_method_exists(paddle):
    names = {n for n in dir(paddle.nn.Layer) if not n.startswith("_")}
    missing = sorted(n for n in names if not hasattr(pdx.nn.Layer, n))
    assert not missing, missing


def test_forward_hooks_match_paddle(paddle, rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    results = {}
    for fw, nn, to in (("paddle", paddle.nn, paddle.to_tensor), ("pdx", pdx.nn, jnp.asarray)):
        net = _Net.build(nn)
        if fw == "pdx":
            _copy(ref_net, net)
        else:
            ref_net = net
        net.eval()
        calls = []
        h1 = net.fc.register_forward_pre_hook(lambda layer, inputs: (calls.append("pre1"), inputs[0] * 2)[1])
        h2 = net.fc.register_forward_pre_hook(lambda layer, inputs: calls.append("pre0"), prepend=True)
        h3 = net.register_forward_pre_hook(lambda layer, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
        h4 = net.seq.register_forward_post_hook(lambda layer, inputs, out: out + 1)
        h5 = net.register_forward_post_hook(lambda layer, inputs, kwargs, out: (calls.append(kwargs["scale"]), None)[1],
                                            with_kwargs=True)
        out1 = np.asarray(net(to(x)))
        h1.remove()
        h4.remove()
        h4.remove()  # a second remove is a no-op
        out2 = np.asarray(net(to(x)))
        for h in (h2, h3, h5):
            h.remove()
        out3 = np.asarray(net(to(x)))
        results[fw] = (out1, out2, out3, calls)
    for a, b in zip(results["paddle"][:3], results["pdx"][:3]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    assert results["pdx"][3] == results["paddle"][3]


def test_hooks_run_in_jit_and_always_call():
    fc = pdx.nn.Linear(2, 2)
    fc.register_forward_post_hook(lambda layer, inputs, out: out * 0 + 7.0)
    assert pdx.jit(lambda x: fc(x))(jnp.ones((1, 2))).tolist() == [[7.0, 7.0]]
    seen = []

    class Boom(pdx.nn.Layer):
        def forward(self, x):
            raise ValueError("boom")

    boom = Boom()
    boom.register_forward_post_hook(lambda layer, inputs, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        boom(jnp.ones(1))
    assert seen == [None]


def test_paths_state_and_casts_match_paddle(paddle):
    ref, net = _Net.build(paddle.nn), _Net.build(pdx.nn)
    _copy(ref, net)
    assert [n for n, _ in net.named_modules()] == [n for n, _ in ref.named_modules()]
    assert len(list(net.modules())) == len(list(ref.modules()))
    assert type(net.get_sublayer("seq.0")).__name__ == type(ref.get_sublayer("seq.0")).__name__ == "Linear"
    np.testing.assert_array_equal(np.asarray(net.get_parameter("seq.0.weight")[...]), ref.get_parameter("seq.0.weight").numpy())
    ref.seq.register_buffer("mask", paddle.ones([2]))
    net.seq.register_buffer("mask", jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(net.get_buffer("seq.mask")[...]), ref.get_buffer("seq.mask").numpy())
    for layer in (ref, net):
        with pytest.raises(AttributeError):
            layer.get_sublayer("seq.7")
    net.set_sublayer("seq.1", pdx.nn.Tanh())
    ref.set_sublayer("seq.1", paddle.nn.Tanh())
    assert type(net.seq[1]).__name__ == "Tanh"
    sd = {k: v.numpy() for k, v in ref.state_dict().items()}
    assert tuple(net.load_state_dict(sd)) == ([], [])
    del sd["fc.bias"]
    sd["extra"] = np.zeros(1, np.float32)
    with pytest.raises(RuntimeError, match="Missing key.*fc.bias"):
        net.load_state_dict(sd)
    assert tuple(net.load_state_dict(sd, strict=False)) == tuple(ref.set_state_dict(sd))
    assert sorted(net.to_static_state_dict()) == sorted(ref.to_static_state_dict())
    handle = net.register_state_dict_hook(lambda d: {k: v for k, v in d.items() if "bn" not in k})
    assert "bn._mean" not in net.state_dict()
    handle.remove()
    assert "bn._mean" in net.state_dict()
    net.float16()  # excludes nn.BatchNorm only (BatchNorm1D is cast), as Paddle
    assert net.fc.weight[...].dtype == jnp.float16 and net.bn.weight[...].dtype == jnp.float16
    net.type("float32")
    assert all(v.dtype == jnp.float32 for v in net.state_dict().values())
    net.requires_grad_(False)
    ref.requires_grad_(False)
    assert {p.stop_gradient for p in net.parameters()} == {p.stop_gradient for p in ref.parameters()} == {True}
    assert net.cpu() is net and net.cuda() is net and net.create_tensor(dtype="float32").shape == ()
    with pytest.raises(ValueError, match="shouldn't implement backward"):
        net.backward()
    with pytest.raises(NotImplementedError, match="pdx.checkpoint"):
        net.sharded_state_dict()
