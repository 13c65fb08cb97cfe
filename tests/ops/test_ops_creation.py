"""pdx creation ops vs the installed paddle, and the random ops' statistics and key handling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ops_testutil import assert_matches, run_both, traces_like_eager

import pdx

CREATION = [
    ("zeros", lambda m: m.zeros([3, 5, 7])),
    ("zeros_int", lambda m: m.zeros([2, 3], dtype="int64")),
    ("ones", lambda m: m.ones([3, 5])),
    ("ones_bool", lambda m: m.ones([4], dtype="bool")),
    ("full", lambda m: m.full([3, 5], 2.5)),
    ("full_int_fill", lambda m: m.full([2, 3], 3)),
    ("full_bool", lambda m: m.full([2], True)),
    ("full_dtype", lambda m: m.full([2, 3], 7, dtype="int32")),
    ("full_inf_str", lambda m: m.full([2], "inf")),
    ("arange_end", lambda m: m.arange(5)),
    ("arange_float", lambda m: m.arange(0.0, 2.0, 0.3)),
    ("arange_neg_step", lambda m: m.arange(10, 1, -3)),
    ("arange_dtype", lambda m: m.arange(1, 7, 2, dtype="float32")),
    ("linspace", lambda m: m.linspace(-1.0, 2.0, 7)),
    ("linspace_one", lambda m: m.linspace(3.0, 5.0, 1)),
    ("linspace_int", lambda m: m.linspace(-10, 10, 7, dtype="int32")),
    ("eye", lambda m: m.eye(3)),
    ("eye_rect", lambda m: m.eye(3, 5, dtype="int32")),
]


@pytest.mark.parametrize("fn", [pytest.param(c[1], id=c[0]) for c in CREATION])
def test_creation_matches_paddle(paddle, fn):
    assert_matches(fn(pdx), fn(paddle))


def test_empty_is_zeros_of_the_right_shape():
    out = pdx.empty([2, 3], dtype="int32")
    assert out.shape == (2, 3) and out.dtype == jnp.int32 and not out.any()


LIKE = [
    ("zeros_like", lambda m, x: m.zeros_like(x)),
    ("zeros_like_dtype", lambda m, x: m.zeros_like(x, dtype="int32")),
    ("ones_like", lambda m, x: m.ones_like(x)),
    ("full_like", lambda m, x: m.full_like(x, 1.5)),
    ("full_like_dtype", lambda m, x: m.full_like(x, 4, dtype="int64")),
    ("tril", lambda m, x: m.tril(x)),
    ("tril_diag", lambda m, x: m.tril(x, diagonal=-1)),
    ("triu", lambda m, x: m.triu(x, 2)),
    ("diag_extract", lambda m, x: m.diag(x[0])),
    ("diag_extract_offset", lambda m, x: m.diag(x[1], offset=-2)),
]


@pytest.mark.parametrize("fn", [pytest.param(c[1], id=c[0]) for c in LIKE])
def test_like_and_triangle_ops_match_paddle(paddle, rng, fn):
    run_both(paddle, fn, [rng.standard_normal((3, 5, 7)).astype(np.float32)])


def test_like_cases_trace_under_jit(rng):
    traces_like_eager([(c[0], c[1], [lambda r: r.standard_normal((3, 5, 7)).astype(np.float32)]) for c in LIKE], rng)


def test_full_like_casts_to_x_dtype(paddle):
    run_both(paddle, lambda m, x: m.full_like(x, 2.7), [np.array([1, 2], np.int32)])


@pytest.mark.parametrize("offset,padding", [(0, 0), (1, 9), (-2, 0), (2, -1)])
def test_diag_from_vector(paddle, offset, padding):
    run_both(paddle, lambda m, x: m.diag(x, offset=offset, padding_value=padding),
             [np.array([1, 2, 3], np.int32)])


@pytest.mark.parametrize("data", [1.5, 3, True, [1.0, 2.0], [[1, 2], [3, 4]], [True, False],
                                  np.array([1.0, 2.0], np.float64), np.array([1, 2], np.int64),
                                  np.array([[1.5]], np.float32)])
def test_to_tensor_dtype_and_values(paddle, data):
    assert_matches(pdx.to_tensor(data), paddle.to_tensor(data))


def test_to_tensor_explicit_dtype_and_stop_gradient(paddle):
    assert_matches(pdx.to_tensor([1, 2], dtype="float32"), paddle.to_tensor([1, 2], dtype="float32"))
    x = jnp.asarray(2.0)
    assert float(jax.grad(lambda v: pdx.to_tensor(v) * v)(x)) == 2.0  # stop_gradient=True blocks one path
    assert float(jax.grad(lambda v: pdx.to_tensor(v, stop_gradient=False) * v)(x)) == 4.0


def test_meshgrid_ij(paddle, rng):
    a, b, c = (rng.standard_normal(n).astype(np.float32) for n in (3, 5, 2))
    run_both(paddle, lambda m, x, y, z: m.meshgrid(x, y, z), [a, b, c])
    run_both(paddle, lambda m, x, y: m.meshgrid([x, y]), [a, b])


def test_creation_under_jit():
    out = jax.jit(lambda x: pdx.zeros([2, 3]) + pdx.ones_like(x) + pdx.eye(3)[:2] + pdx.arange(3))(jnp.ones((2, 3)))
    np.testing.assert_allclose(out, np.ones((2, 3)) + np.eye(3)[:2] + np.arange(3))


def test_default_dtype_is_respected():
    pdx.set_default_dtype("bfloat16")
    try:
        assert pdx.zeros([2]).dtype == jnp.bfloat16
        assert pdx.to_tensor(1.5).dtype == jnp.bfloat16
        assert pdx.rand([2]).dtype == jnp.bfloat16
    finally:
        pdx.set_default_dtype("float32")


@pytest.mark.parametrize("call,match", [
    (lambda: pdx.zeros([2, -3]), r"pdx\.zeros: `shape`=\[2, -3\] has a negative dim"),
    (lambda: pdx.full([2], "abc"), r"pdx\.full: `fill_value`='abc'"),
    (lambda: pdx.arange(0, 5, 0), r"pdx\.arange: `step` must be non-zero"),
    (lambda: pdx.linspace(0, 1, 0), r"pdx\.linspace: `num`=0"),
    (lambda: pdx.tril(jnp.ones(3)), r"pdx\.tril: `x` must have rank >= 2"),
    (lambda: pdx.diag(jnp.ones((2, 2, 2))), r"pdx\.diag: `x` must be 1-D or 2-D"),
    (lambda: pdx.meshgrid(jnp.ones((2, 2))), r"pdx\.meshgrid: every input must be 0-D or 1-D"),
])
def test_creation_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_dtype_names_the_op():
    with pytest.raises(TypeError, match=r"pdx\.zeros: unknown dtype 'floaty'"):
        pdx.zeros([2], dtype="floaty")


# ---------------------------------------------------------------- random ops

def _moments(x):
    x = np.asarray(x, np.float64)
    return x.mean(), x.std()


def test_rand_and_uniform_range_and_moments():
    pdx.seed(1)
    x = pdx.rand([20000])
    assert x.dtype == jnp.float32 and x.shape == (20000,)
    assert 0.0 <= float(x.min()) and float(x.max()) < 1.0
    mean, std = _moments(x)
    assert abs(mean - 0.5) < 0.01 and abs(std - (1 / 12) ** 0.5) < 0.01
    u = pdx.uniform([20000], min=-3.0, max=1.0)
    assert -3.0 <= float(u.min()) and float(u.max()) < 1.0 and abs(_moments(u)[0] + 1.0) < 0.05


def test_uniform_default_range_follows_installed_paddle(paddle):
    sample = paddle.uniform([2000]).numpy()
    ours = np.asarray(pdx.uniform([2000]))
    assert (sample.min() >= 0) == (ours.min() >= 0)


def test_uniform_nonzero_seed_is_fixed():
    a, b = pdx.uniform([4], seed=7), pdx.uniform([4], seed=7)
    np.testing.assert_array_equal(a, b)


def test_randn_and_normal_moments():
    pdx.seed(2)
    mean, std = _moments(pdx.randn([20000]))
    assert abs(mean) < 0.03 and abs(std - 1) < 0.03
    mean, std = _moments(pdx.normal(3.0, 2.0, shape=[20000]))
    assert abs(mean - 3) < 0.06 and abs(std - 2) < 0.06


def test_normal_with_tensor_mean_and_std(paddle):
    mean = jnp.asarray([0.0, 100.0, -50.0])
    out = pdx.normal(mean, 0.01)
    assert out.shape == tuple(paddle.normal(paddle.to_tensor(np.asarray(mean)), 0.01).shape) == (3,)
    np.testing.assert_allclose(out, mean, atol=0.1)
    both = pdx.normal(jnp.zeros((2, 1)), jnp.full((1, 3), 1e-3))
    assert both.shape == (2, 3)


def test_randint_range_dtype_and_high_none():
    pdx.seed(3)
    x = pdx.randint(-3, 4, [5000])
    assert x.dtype == jnp.int32 and int(x.min()) == -3 and int(x.max()) == 3
    y = pdx.randint(5, shape=[5000])
    assert int(y.min()) == 0 and int(y.max()) == 4
    assert pdx.randint(0, 3).shape == (1,)


def test_bernoulli_frequency_and_p():
    pdx.seed(4)
    probs = jnp.full((20000,), 0.3)
    draws = pdx.bernoulli(probs)
    assert draws.dtype == jnp.float32 and set(np.unique(draws)) <= {0.0, 1.0}
    assert abs(float(draws.mean()) - 0.3) < 0.02
    assert float(pdx.bernoulli(jnp.zeros(20000), p=1.0).min()) == 1.0


def test_multinomial_with_and_without_replacement():
    pdx.seed(5)
    probs = jnp.asarray([0.1, 0.2, 0.7])
    draws = pdx.multinomial(probs, 20000, replacement=True)
    assert draws.shape == (20000,) and draws.dtype == jnp.int32
    freq = np.bincount(np.asarray(draws), minlength=3) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.02)
    weights = jnp.ones((4, 5)).at[:, 0].set(0.0)  # a zero weight is never drawn
    rows = pdx.multinomial(weights, 4)
    assert rows.shape == (4, 4)
    for row in np.asarray(rows):
        assert sorted(row.tolist()) == [1, 2, 3, 4]


@pytest.mark.parametrize("draw", [
    lambda: pdx.rand([16]), lambda: pdx.randn([16]), lambda: pdx.randint(0, 9, [16]),
    lambda: pdx.uniform([16]), lambda: pdx.normal(shape=[16]), lambda: pdx.bernoulli(jnp.full((16,), 0.5)),
    lambda: pdx.multinomial(jnp.ones(64), 16),
], ids=["rand", "randn", "randint", "uniform", "normal", "bernoulli", "multinomial"])
def test_random_ops_reproducible_under_seed(draw):
    pdx.seed(123)
    a, a2 = draw(), draw()
    pdx.seed(123)
    b = draw()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, a2)


def test_random_ops_need_explicit_key_under_jit():
    with pytest.raises(RuntimeError, match=r"rand\(\) needs an explicit `key=`"):
        jax.jit(lambda: pdx.rand([2]))()
    with pytest.raises(RuntimeError, match=r"multinomial\(\) needs an explicit `key=`"):
        jax.jit(lambda p: pdx.multinomial(p, 1))(jnp.ones(3))
    key = jax.random.key(0)
    jitted = jax.jit(lambda k: pdx.randn([2, 3], key=k) + pdx.randint(0, 3, [2, 3], key=k))
    np.testing.assert_array_equal(jitted(key), jitted(key))
    assert pdx.rand([2], key=jax.random.PRNGKey(0)).shape == (2,)  # raw uint32 keys work too


@pytest.mark.parametrize("call,match", [
    (lambda: pdx.randint(5, 5), r"pdx\.randint: `low`=5 must be < `high`=5"),
    (lambda: pdx.normal(0.0, 1.0), r"pdx\.normal: `shape` is required"),
    (lambda: pdx.multinomial(jnp.ones(3), 4), r"pdx\.multinomial: `num_samples`=4 exceeds the 3 categories"),
    (lambda: pdx.multinomial(jnp.ones((2, 2, 2))), r"pdx\.multinomial: `x` must be 1-D or 2-D"),
])
def test_random_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_random_float_dtype_checked():
    with pytest.raises(TypeError, match=r"pdx\.rand: `dtype` must be a floating dtype"):
        pdx.rand([2], dtype="int32")
