"""The further random ops: shapes/dtypes equal paddle's, sample moments within 3 standard errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx

N = 20000

# (id, call, paddle call, expected mean, expected variance); moments are per element.
CASES = [
    ("randperm", lambda m: m.randperm(7), None, None),
    ("randperm_float", lambda m: m.randperm(6, "float32"), None, None),
    ("rand_like", lambda m: m.rand_like(m.zeros([N])), 0.5, 1 / 12),
    ("randn_like", lambda m: m.randn_like(m.zeros([N])), 0.0, 1.0),
    ("randint_like", lambda m: m.randint_like(m.zeros([N], "float32"), 2, 6), 3.5, 1.25),
    ("randint_like_high_only", lambda m: m.randint_like(m.zeros([N], "int32"), 4), 1.5, 1.25),
    ("standard_normal", lambda m: m.standard_normal([N]), 0.0, 1.0),
    ("log_normal", lambda m: m.log_normal(0.0, 0.5, shape=[N]), np.exp(0.125), (np.exp(0.25) - 1) * np.exp(0.25)),
    ("log_normal_tensor", lambda m: m.log_normal(m.zeros([N]), 0.25), np.exp(0.03125),
     (np.exp(0.0625) - 1) * np.exp(0.0625)),
    ("poisson", lambda m: m.poisson(m.full([N], 3.0)), 3.0, 3.0),
    ("standard_gamma", lambda m: m.standard_gamma(m.full([N], 2.5)), 2.5, 2.5),
    ("binomial", lambda m: m.binomial(m.full([N], 10, "int32"), m.full([N], 0.3)), 3.0, 2.1),
]


def test_shapes_dtypes_and_moments_match(paddle):
    pdx.seed(7)
    paddle.seed(7)
    failures = []
    for case_id, call, mean, var in CASES:
        ours, theirs = call(pdx), call(paddle)
        expected_dtype = jax.dtypes.canonicalize_dtype(theirs.numpy().dtype)
        if (tuple(ours.shape), ours.dtype) != (tuple(theirs.shape), expected_dtype):
            failures.append(f"{case_id}: {ours.shape} {ours.dtype} vs paddle {theirs.shape} {theirs.dtype}")
            continue
        values = np.asarray(ours, np.float64)
        if mean is None:
            if sorted(values.tolist()) != list(range(values.size)):
                failures.append(f"{case_id}: not a permutation: {values}")
            continue
        se = np.sqrt(var / values.size)
        if abs(values.mean() - mean) > 3 * se:
            failures.append(f"{case_id}: mean {values.mean():.4f} vs {mean:.4f} (3 se = {3 * se:.4f})")
        se_var = np.sqrt(2 * var ** 2 / values.size) * 2  # heavier tails: loose bound on the variance
        if abs(values.var() - var) > 3 * se_var:
            failures.append(f"{case_id}: var {values.var():.4f} vs {var:.4f}")
    assert not failures, "\n".join(failures)


def test_explicit_keys_reproduce_and_work_under_jit():
    key = jax.random.key(3)
    fns = [
        lambda x, k: pdx.randperm(5, key=k),
        lambda x, k: pdx.rand_like(x, key=k),
        lambda x, k: pdx.randn_like(x, key=k),
        lambda x, k: pdx.randint_like(x, 0, 9, key=k),
        lambda x, k: pdx.standard_normal([3], key=k),
        lambda x, k: pdx.log_normal(shape=[3], key=k),
    ]
    x = jnp.zeros([3])
    jitted = jax.jit(lambda x, k: [f(x, k) for f in fns])(x, key)
    for f, j in zip(fns, jitted):
        np.testing.assert_allclose(np.asarray(f(x, key)), np.asarray(j), rtol=1e-6)
    # The samplers built on loops (compiled above in the moments test) are only traced here.
    samplers = jax.eval_shape(lambda x, k: [pdx.poisson(x + 1, key=k), pdx.standard_gamma(x + 1, key=k),
                                            pdx.binomial(jnp.full([3], 4), x + 0.5, key=k)], x, key)
    assert [(s.shape, s.dtype) for s in samplers] == [((3,), jnp.float32), ((3,), jnp.float32), ((3,), jnp.int32)]


def test_under_jit_without_key_asks_for_one():
    with pytest.raises(RuntimeError, match="key"):
        jax.jit(lambda x: pdx.rand_like(x))(jnp.zeros([2]))


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="`n`=-1"):
        pdx.randperm(-1)
    with pytest.raises(ValueError, match="`low`=3"):
        pdx.randint_like(jnp.zeros([2]), 3, 1)
    with pytest.raises(TypeError, match="`x` must be a floating"):
        pdx.poisson(jnp.ones([2], jnp.int32))
    with pytest.raises(ValueError, match="`shape` is required"):
        pdx.log_normal()
    with pytest.raises(ValueError, match="cannot be broadcast"):
        pdx.binomial(jnp.ones([2]), jnp.ones([3]))
