"""pdx.nn.functional activations vs paddle.nn.functional."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F

SHAPE = (3, 5, 7)

# (name, kwargs) — the same call is made on both sides.
ELEMENTWISE = [
    ("relu", {}), ("relu6", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}),
    ("elu", {}), ("elu", {"alpha": 0.5}), ("celu", {"alpha": 1.5}), ("selu", {}),
    ("gelu", {}), ("gelu", {"approximate": True}), ("silu", {}), ("swish", {}), ("sigmoid", {}),
    ("tanh", {}), ("hardtanh", {}), ("hardtanh", {"min": -0.5, "max": 2.0}), ("hardsigmoid", {}),
    ("hardsigmoid", {"slope": 0.2, "offset": 0.4}), ("hardswish", {}), ("hardshrink", {}),
    ("softshrink", {"threshold": 0.3}), ("thresholded_relu", {"threshold": 0.5}), ("tanhshrink", {}),
    ("softsign", {}), ("softplus", {}), ("softplus", {"beta": 2, "threshold": 3}), ("log_sigmoid", {}),
    ("mish", {}), ("softmax", {}), ("softmax", {"axis": 1}), ("log_softmax", {}), ("log_softmax", {"axis": 0}),
    ("glu", {"axis": 0}), ("rrelu", {"training": False}),
]


@pytest.mark.parametrize("name,kwargs", ELEMENTWISE, ids=[f"{n}-{k}" for n, k in ELEMENTWISE])
def test_forward_matches_paddle(oracle, rng, name, kwargs):
    x = (rng.standard_normal(SHAPE) * 3).astype(np.float32)
    if name == "glu":
        x = x[:2]  # glu halves an even axis
    ours = getattr(F, name)(jnp.asarray(x), **kwargs)
    ref = getattr(oracle.F, name)(oracle.t(x), **kwargs)
    oracle.close(ours, ref, rtol=1e-5, atol=2e-6)


def test_softplus_threshold_tail_and_large_inputs(oracle):
    x = np.array([-100.0, -1.0, 0.0, 19.0, 21.0, 100.0], np.float32)
    oracle.close(F.softplus(jnp.asarray(x)), oracle.F.softplus(oracle.t(x)))
    g = jax.jit(jax.grad(lambda v: F.softplus(v).sum()))(jnp.asarray(x))
    assert np.all(np.isfinite(np.asarray(g)))


def test_softmax_dtype_argument(oracle, rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    ours = F.softmax(jnp.asarray(x), dtype="float32")
    oracle.close(ours, oracle.F.softmax(oracle.t(x), dtype="float32"))
    assert ours.dtype == jnp.float32


@pytest.mark.parametrize("wshape,fmt", [((1,), "NCHW"), ((4,), "NCHW"), ((5,), "NHWC"), ((), "NCHW")])
def test_prelu(oracle, rng, wshape, fmt):
    x = rng.standard_normal((2, 4, 3, 5)).astype(np.float32)
    w = rng.random(wshape).astype(np.float32)
    oracle.close(F.prelu(jnp.asarray(x), jnp.asarray(w), data_format=fmt),
                 oracle.F.prelu(oracle.t(x), oracle.t(w), data_format=fmt))


def test_maxout(oracle, rng):
    x = rng.standard_normal((2, 6, 3, 5)).astype(np.float32)
    oracle.close(F.maxout(jnp.asarray(x), groups=3), oracle.F.maxout(oracle.t(x), groups=3))
    xt = x.transpose(0, 2, 3, 1)
    oracle.close(F.maxout(jnp.asarray(xt), groups=2, axis=-1), oracle.F.maxout(oracle.t(xt), groups=2, axis=-1))


@pytest.mark.parametrize("name,kwargs", [("softmax", {"axis": 1}), ("gelu", {}), ("gelu", {"approximate": True}),
                                         ("log_softmax", {}), ("elu", {}), ("mish", {}), ("hardswish", {})])
def test_gradients_match_paddle(oracle, rng, name, kwargs):
    x = (rng.standard_normal(SHAPE) * 2).astype(np.float32)
    oracle.grads(lambda v: getattr(F, name)(v, **kwargs), lambda v: getattr(oracle.F, name)(v, **kwargs),
                 [x], [0], rng)


def test_rrelu_training_draws_slopes_in_range():
    x = -jnp.ones((1000,))
    y = F.rrelu(x, 0.1, 0.3, training=True, key=jax.random.key(0))
    slopes = -np.asarray(y)
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    pdx.seed(3)
    a = F.rrelu(x)
    pdx.seed(3)
    np.testing.assert_array_equal(a, F.rrelu(x))


def test_activation_errors():
    with pytest.raises(ValueError, match="gelu.*approximate"):
        F.gelu(jnp.ones(2), approximate="fast")
    with pytest.raises(ValueError, match="glu.*even"):
        F.glu(jnp.ones((3,)))
    with pytest.raises(ValueError, match="prelu.*weight"):
        F.prelu(jnp.ones((2, 3, 4)), jnp.ones(5))
    with pytest.raises(ValueError, match="maxout.*divisible by groups"):
        F.maxout(jnp.ones((1, 5, 2, 2)), groups=2)
    with pytest.raises(ValueError, match="rrelu.*lower"):
        F.rrelu(jnp.ones(2), lower=0.5, upper=0.2)
