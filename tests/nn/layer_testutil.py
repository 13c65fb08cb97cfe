"""Helpers for the pdx.nn layer tests: weight transfer to/from paddle, forward and
gradient comparison against the paddle layer."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


def axis_names(var):
    """A variable's logical axis names (flax stores `sharding_names` as `out_sharding`)."""
    meta = var.get_metadata()
    return meta.get("sharding_names", meta.get("out_sharding"))


def load_from_paddle(layer, pd_layer):
    """Copy paddle's weights into `layer`; assert both state_dicts have the same keys and shapes."""
    pd_state = {k: v.numpy() for k, v in pd_layer.state_dict().items()}
    ours = layer.state_dict()
    assert list(ours) == list(pd_state) or set(ours) == set(pd_state), (sorted(ours), sorted(pd_state))
    for k, v in pd_state.items():
        assert tuple(ours[k].shape) == tuple(v.shape), (k, ours[k].shape, v.shape)
    missing, unexpected = layer.set_state_dict(pd_state)
    assert not missing and not unexpected, (missing, unexpected)
    return layer


def load_into_paddle(paddle, pd_layer, layer):
    """Copy pdx's weights into the paddle layer (the round trip pdx -> paddle)."""
    state = {k: paddle.to_tensor(np.asarray(v)) for k, v in layer.state_dict().items()}
    missing, unexpected = pd_layer.set_state_dict(state)
    assert not missing and not unexpected, (missing, unexpected)


def perturb(layer, rng, scale=0.1):
    """Add noise to every parameter and buffer so a round trip proves values move, not defaults."""
    state = {k: np.asarray(v) + scale * rng.standard_normal(v.shape).astype(np.float32)
             for k, v in layer.state_dict().items()}
    state = {k: np.abs(v) + 0.5 if k.endswith("_variance") else v for k, v in state.items()}
    layer.set_state_dict(state)


def pd_forward(paddle, pd_layer, *inputs, **kwargs):
    tensors = [paddle.to_tensor(np.asarray(x)) for x in inputs]
    out = pd_layer(*tensors, **kwargs)
    return out


def assert_close(ours, theirs, rtol=1e-5, atol=1e-5):
    if hasattr(theirs, "numpy"):
        theirs = theirs.numpy()
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float32), np.asarray(theirs, dtype=np.float32),
                               rtol=rtol, atol=atol)


def pdx_grads(layer, inputs, cotangent):
    """Gradients of sum(layer(*inputs) * cotangent) w.r.t. each input and each parameter by name."""
    graphdef, params, rest = nnx.split(layer, nnx.Param, ...)

    def loss(params, inputs):
        model = nnx.merge(graphdef, params, rest)
        return jnp.sum(model(*inputs) * cotangent)

    # One compiled program for forward + backward is much cheaper than op-by-op eager autodiff.
    grad_fn = jax.jit(jax.grad(loss, argnums=(0, 1)))
    g_params, g_inputs = grad_fn(params, tuple(jnp.asarray(x) for x in inputs))
    by_name = {".".join(str(p) for p in path): np.asarray(v.get_value()) for path, v in nnx.to_flat_state(g_params)}
    return [np.asarray(g) for g in g_inputs], by_name


def paddle_grads(paddle, pd_layer, inputs, cotangent):
    """The same gradients from paddle's backward()."""
    tensors = [paddle.to_tensor(np.asarray(x), stop_gradient=False) for x in inputs]
    out = pd_layer(*tensors)
    (out * paddle.to_tensor(np.asarray(cotangent))).sum().backward()
    by_name = {name: p.grad.numpy() for name, p in pd_layer.named_parameters() if p.grad is not None}
    return [t.grad.numpy() for t in tensors], by_name


def assert_grads_match(paddle, layer, pd_layer, inputs, rng, rtol=1e-4, atol=1e-5):
    out = layer(*[jnp.asarray(x) for x in inputs])
    cotangent = rng.standard_normal(out.shape).astype(np.float32)
    g_in, g_params = pdx_grads(layer, inputs, cotangent)
    p_in, p_params = paddle_grads(paddle, pd_layer, inputs, cotangent)
    for ours, theirs in zip(g_in, p_in):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
    assert set(p_params) <= set(g_params), (sorted(g_params), sorted(p_params))
    for name, theirs in p_params.items():
        np.testing.assert_allclose(g_params[name], theirs, rtol=rtol, atol=atol, err_msg=name)
