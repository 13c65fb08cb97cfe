"""pdx.nn.utils against paddle.nn.utils 3.3.1: weight_norm / remove_weight_norm
(state, forward and gradients), parameters_to_vector / vector_to_parameters,
clip_grad_norm_ / clip_grad_value_ (functional: the gradients in, the clipped
gradients out) on random values."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.nn import utils


def _paddle_linear(paddle, net):
    ref = paddle.nn.Linear(4, 3)
    ref.weight.set_value(np.asarray(net.weight[...]))
    ref.bias.set_value(np.asarray(net.bias[...]))
    return ref


def test_weight_norm_matches_paddle(paddle, rng):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    for dim in (0, None, -2):
        net = pdx.nn.Linear(4, 3)
        ref = paddle.nn.utils.weight_norm(_paddle_linear(paddle, net), dim=dim)
        utils.weight_norm(net, dim=dim)
        assert list(net.state_dict()) == list(ref.state_dict()), dim
        for k, v in ref.state_dict().items():
            np.testing.assert_allclose(np.asarray(net.state_dict()[k]), v.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{dim} {k}")
        # train the direction and the norm a little differently from the start, then compare again
        g = np.asarray(rng.standard_normal(ref.weight_g.shape) + 2, np.float32)
        ref.weight_g.set_value(g)
        net.weight_g.set_value(jnp.asarray(g))
        out = ref(paddle.to_tensor(x))
        (out * out).sum().backward()
        got = net(jnp.asarray(x))
        np.testing.assert_allclose(np.asarray(got), out.numpy(), rtol=1e-5, atol=1e-5)
        grads = pdx.grad(lambda m, x: (m(x) ** 2).sum())(net, jnp.asarray(x))
        for k in ("weight_g", "weight_v", "bias"):
            np.testing.assert_allclose(np.asarray(grads[k]), getattr(ref, k).grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=f"{dim} {k}")
        paddle.nn.utils.remove_weight_norm(ref)
        utils.remove_weight_norm(net)
        assert sorted(net.state_dict()) == sorted(ref.state_dict())
        np.testing.assert_allclose(np.asarray(net.weight[...]), ref.weight.numpy(), rtol=1e-5, atol=1e-6)
    conv = utils.weight_norm(pdx.nn.Conv2D(2, 3, 3), dim=0)
    assert conv.weight_g.shape == (3,) and conv(jnp.ones((1, 2, 5, 5))).shape == (1, 3, 3, 3)
    with pytest.raises(RuntimeError, match="two weight_norm"):
        utils.weight_norm(conv)
    with pytest.raises(ValueError, match="not found"):
        utils.remove_weight_norm(pdx.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="dim=5"):
        utils.weight_norm(pdx.nn.Linear(2, 2), dim=5)
    assert utils.spectral_norm is pdx.nn.spectral_norm


def test_vectors_and_clipping_match_paddle(paddle, rng):
    shapes = [(3, 4), (5,), (2, 2, 2)]
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [rng.standard_normal(s).astype(np.float32) * 3 for s in shapes]
    ref_params = []
    for v, g in zip(values, grads):
        p = paddle.create_parameter(list(v.shape), "float32")
        p.set_value(v)
        ref_params.append(p)
    net = pdx.nn.Layer()
    for i, v in enumerate(values):
        setattr(net, f"p{i}", net.create_parameter(v.shape))
        getattr(net, f"p{i}").set_value(jnp.asarray(v))
    vec = paddle.nn.utils.parameters_to_vector(ref_params)
    np.testing.assert_array_equal(np.asarray(utils.parameters_to_vector(net.parameters())), vec.numpy())
    new = rng.standard_normal(vec.shape[0] + 3).astype(np.float32)
    paddle.nn.utils.vector_to_parameters(paddle.to_tensor(new), ref_params)
    utils.vector_to_parameters(jnp.asarray(new), net.parameters())
    for p, q in zip(ref_params, net.parameters()):
        np.testing.assert_array_equal(np.asarray(q[...]), p.numpy())

    def paddle_grads():
        for p, g in zip(ref_params, grads):
            p.clear_gradient()
            (p * paddle.to_tensor(g)).sum().backward()

    named = pdx.Gradients({f"p{i}": jnp.asarray(g) for i, g in enumerate(grads)})
    named.owner = net
    for norm_type, max_norm in ((2.0, 1.0), (1.0, 2.5), (float("inf"), 0.5), (0, 2.0), (2.0, 1e6)):
        paddle_grads()
        total = paddle.nn.utils.clip_grad_norm_(ref_params, max_norm, norm_type=norm_type)
        clipped, got = utils.clip_grad_norm_(named, max_norm, norm_type=norm_type)
        assert type(clipped) is pdx.Gradients and clipped.owner is net
        np.testing.assert_allclose(float(got), float(total), rtol=1e-5)
        for i, p in enumerate(ref_params):
            np.testing.assert_allclose(np.asarray(clipped[f"p{i}"]), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    paddle_grads()
    paddle.nn.utils.clip_grad_value_(ref_params, 1.5)
    clipped = utils.clip_grad_value_([jnp.asarray(g) for g in grads], 1.5)
    for c, p in zip(clipped, ref_params):
        np.testing.assert_array_equal(np.asarray(c), p.grad.numpy())
    with pytest.raises(TypeError, match="(?s)clip_grad_norm_.*value_and_grad"):
        utils.clip_grad_norm_(net.parameters(), 1.0)
    with pytest.raises(ValueError, match="norm_type"):
        utils.clip_grad_norm_(named, 1.0, norm_type=3)
    with pytest.raises(RuntimeError, match="non-finite"):
        utils.clip_grad_norm_([jnp.array([np.inf])], 1.0, error_if_nonfinite=True)
