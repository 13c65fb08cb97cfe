"""pdx math ops vs the installed paddle: forward values, dtypes and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ops_testutil import assert_matches, grads_match, run_both, traces_like_eager

import pdx


def f32(*shape, low=-2.0, high=2.0):
    return lambda rng: rng.uniform(low, high, shape).astype(np.float32)


def pos(*shape):
    return f32(*shape, low=0.2, high=3.0)


def i32(*shape, low=-9, high=10):
    return lambda rng: rng.integers(low, high, shape).astype(np.int32)


def nonzero_i32(*shape):
    return lambda rng: (rng.integers(1, 6, shape) * rng.choice([-1, 1], shape)).astype(np.int32)


def halves(rng):
    return np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -3.7, 1.25], np.float32)


def special(rng):
    return np.array([1.0, np.nan, np.inf, -np.inf, -0.0, 3e38], np.float32)


S = (3, 5, 7)

FORWARD = [
    # elementwise binary (broadcasting included)
    ("add", lambda m, x, y: m.add(x, y), [f32(*S), f32(5, 1)]),
    ("add_int", lambda m, x, y: m.add(x, y), [i32(3, 5), i32(5)]),
    ("subtract", lambda m, x, y: m.subtract(x, y), [f32(*S), f32(*S)]),
    ("multiply", lambda m, x, y: m.multiply(x, y), [f32(3, 5), f32(1, 5)]),
    ("divide", lambda m, x, y: m.divide(x, y), [f32(*S), pos(7)]),
    ("divide_int", lambda m, x, y: m.divide(x, y), [i32(4, 5), nonzero_i32(4, 5)]),
    ("floor_divide_int", lambda m, x, y: m.floor_divide(x, y), [i32(4, 5), nonzero_i32(4, 5)]),
    ("floor_divide_f", lambda m, x, y: m.floor_divide(x, y), [f32(4, 5, low=-9, high=9), pos(4, 5)]),
    ("remainder_int", lambda m, x, y: m.remainder(x, y), [i32(4, 5), nonzero_i32(4, 5)]),
    ("remainder_f", lambda m, x, y: m.remainder(x, y), [f32(4, 5, low=-9, high=9), pos(4, 5)]),
    ("mod", lambda m, x, y: m.mod(x, y), [i32(6), nonzero_i32(6)]),
    ("pow_scalar", lambda m, x: m.pow(x, 3), [f32(*S)]),
    ("pow_float", lambda m, x: m.pow(x, 0.5), [pos(3, 4)]),
    ("pow_tensor", lambda m, x, y: m.pow(x, y), [pos(3, 4), f32(3, 4)]),
    ("pow_int", lambda m, x: m.pow(x, 2.0), [i32(5)]),
    ("maximum", lambda m, x, y: m.maximum(x, y), [f32(*S), f32(7)]),
    ("minimum", lambda m, x, y: m.minimum(x, y), [f32(*S), f32(5, 1)]),
    # elementwise unary
    ("exp", lambda m, x: m.exp(x), [f32(*S)]),
    ("exp_int", lambda m, x: m.exp(x), [i32(4, low=-3, high=3)]),
    ("log", lambda m, x: m.log(x), [pos(*S)]),
    ("log1p", lambda m, x: m.log1p(x), [pos(3, 5)]),
    ("log2", lambda m, x: m.log2(x), [pos(3, 5)]),
    ("sqrt", lambda m, x: m.sqrt(x), [pos(*S)]),
    ("sqrt_int", lambda m, x: m.sqrt(x), [i32(4, low=0, high=9)]),
    ("rsqrt", lambda m, x: m.rsqrt(x), [pos(3, 5)]),
    ("abs", lambda m, x: m.abs(x), [f32(*S)]),
    ("abs_int", lambda m, x: m.abs(x), [i32(6)]),
    ("sign", lambda m, x: m.sign(x), [f32(3, 5)]),
    ("floor", lambda m, x: m.floor(x), [f32(3, 5, low=-5, high=5)]),
    ("ceil", lambda m, x: m.ceil(x), [f32(3, 5, low=-5, high=5)]),
    ("round_halves", lambda m, x: m.round(x), [halves]),
    ("round", lambda m, x: m.round(x), [f32(*S, low=-5, high=5)]),
    ("round_decimals", lambda m, x: m.round(x, decimals=1), [f32(3, 5, low=-5, high=5)]),
    ("sin", lambda m, x: m.sin(x), [f32(*S)]),
    ("cos", lambda m, x: m.cos(x), [f32(*S)]),
    ("tanh", lambda m, x: m.tanh(x), [f32(*S)]),
    ("erf", lambda m, x: m.erf(x), [f32(*S)]),
    ("clip", lambda m, x: m.clip(x, min=-0.5, max=1.0), [f32(*S)]),
    ("clip_min_only", lambda m, x: m.clip(x, min=0.0), [f32(3, 5)]),
    ("clip_max_only", lambda m, x: m.clip(x, max=0.0), [f32(3, 5)]),
    ("isnan", lambda m, x: m.isnan(x), [special]),
    ("isinf", lambda m, x: m.isinf(x), [special]),
    ("isfinite", lambda m, x: m.isfinite(x), [special]),
    ("nan_to_num", lambda m, x: m.nan_to_num(x), [special]),
    ("nan_to_num_args", lambda m, x: m.nan_to_num(x, nan=1.5, posinf=9.0, neginf=-9.0), [special]),
    ("lerp", lambda m, x, y: m.lerp(x, y, 0.3), [f32(*S), f32(*S)]),
    ("lerp_tensor_w", lambda m, x, y, w: m.lerp(x, y, w), [f32(3, 5), f32(3, 5), f32(5, low=0, high=1)]),
    ("scale", lambda m, x: m.scale(x, scale=2.5, bias=1.0), [f32(*S)]),
    ("scale_bias_first", lambda m, x: m.scale(x, scale=2.5, bias=1.0, bias_after_scale=False), [f32(3, 5)]),
    ("scale_act", lambda m, x: m.scale(x, scale=2.0, bias=-0.5, act="relu"), [f32(3, 5)]),
    # reductions
    ("sum", lambda m, x: m.sum(x), [f32(*S)]),
    ("sum_axis", lambda m, x: m.sum(x, axis=1), [f32(*S)]),
    ("sum_axes_keepdim", lambda m, x: m.sum(x, axis=[0, -1], keepdim=True), [f32(*S)]),
    ("sum_int", lambda m, x: m.sum(x, axis=0), [i32(3, 5)]),
    ("sum_dtype", lambda m, x: m.sum(x, dtype="float32"), [i32(3, 5)]),
    ("mean", lambda m, x: m.mean(x), [f32(*S)]),
    ("mean_axis", lambda m, x: m.mean(x, axis=[1, 2], keepdim=True), [f32(*S)]),
    ("max", lambda m, x: m.max(x), [f32(*S)]),
    ("max_axis", lambda m, x: m.max(x, axis=-1, keepdim=True), [f32(*S)]),
    ("min_axes", lambda m, x: m.min(x, axis=[0, 2]), [f32(*S)]),
    ("max_int", lambda m, x: m.max(x, axis=1), [i32(3, 5)]),
    ("amax", lambda m, x: m.amax(x, axis=1), [f32(*S)]),
    ("amin", lambda m, x: m.amin(x), [f32(*S)]),
    ("prod", lambda m, x: m.prod(x, axis=1), [f32(3, 5, low=0.5, high=1.5)]),
    ("prod_all_keepdim", lambda m, x: m.prod(x, keepdim=True), [f32(2, 3, low=0.5, high=1.5)]),
    ("prod_int", lambda m, x: m.prod(x, axis=0), [i32(3, 4, low=-3, high=4)]),
    ("std", lambda m, x: m.std(x), [f32(*S)]),
    ("std_axis_biased", lambda m, x: m.std(x, axis=1, unbiased=False, keepdim=True), [f32(*S)]),
    ("var", lambda m, x: m.var(x, axis=[0, 2]), [f32(*S)]),
    ("var_biased", lambda m, x: m.var(x, axis=1, unbiased=False), [f32(3, 5)]),
    ("logsumexp", lambda m, x: m.logsumexp(x), [f32(*S)]),
    ("logsumexp_axis", lambda m, x: m.logsumexp(x, axis=1, keepdim=True), [f32(*S, low=-50, high=50)]),
    ("cumsum_flat", lambda m, x: m.cumsum(x), [f32(3, 5)]),
    ("cumsum_axis", lambda m, x: m.cumsum(x, axis=1), [f32(*S)]),
    ("cumsum_int", lambda m, x: m.cumsum(x, axis=-1), [i32(3, 5)]),
    ("cumsum_dtype", lambda m, x: m.cumsum(x, axis=0, dtype="float32"), [i32(3, 5)]),
    ("cumprod_flat", lambda m, x: m.cumprod(x), [f32(2, 3, low=0.5, high=1.5)]),
    ("cumprod_dim", lambda m, x: m.cumprod(x, dim=1), [f32(*S, low=0.5, high=1.5)]),
    ("cumprod_dtype", lambda m, x: m.cumprod(x, dim=0, dtype="float32"), [i32(3, 4, low=-3, high=4)]),
    # products
    ("matmul", lambda m, x, y: m.matmul(x, y), [f32(3, 5), f32(5, 7)]),
    ("matmul_tx", lambda m, x, y: m.matmul(x, y, transpose_x=True), [f32(5, 3), f32(5, 7)]),
    ("matmul_ty", lambda m, x, y: m.matmul(x, y, transpose_y=True), [f32(3, 5), f32(7, 5)]),
    ("matmul_txy_batch", lambda m, x, y: m.matmul(x, y, True, True), [f32(2, 5, 3), f32(2, 7, 5)]),
    ("matmul_batch_bcast", lambda m, x, y: m.matmul(x, y), [f32(2, 1, 3, 5), f32(4, 5, 2)]),
    ("matmul_vec_mat", lambda m, x, y: m.matmul(x, y), [f32(5), f32(3, 5, 7)]),
    ("matmul_mat_vec", lambda m, x, y: m.matmul(x, y), [f32(3, 4, 5), f32(5)]),
    ("matmul_vec_vec", lambda m, x, y: m.matmul(x, y, transpose_x=True, transpose_y=True), [f32(5), f32(5)]),
    ("mm", lambda m, x, y: m.mm(x, y), [f32(3, 5), f32(5, 2)]),
    ("bmm", lambda m, x, y: m.bmm(x, y), [f32(3, 5, 7), f32(3, 7, 2)]),
    ("dot_1d", lambda m, x, y: m.dot(x, y), [f32(7), f32(7)]),
    ("dot_2d", lambda m, x, y: m.dot(x, y), [f32(3, 5), f32(3, 5)]),
    ("einsum_mm", lambda m, x, y: m.einsum("ij,jk->ik", x, y), [f32(3, 5), f32(5, 7)]),
    ("einsum_batch_trace", lambda m, x: m.einsum("bii->b", x), [f32(3, 4, 4)]),
    ("einsum_ellipsis", lambda m, x, y: m.einsum("...ij,...jk->...ik", x, y), [f32(2, 3, 5), f32(2, 5, 4)]),
    ("outer", lambda m, x, y: m.outer(x, y), [f32(5), f32(7)]),
    ("outer_nd", lambda m, x, y: m.outer(x, y), [f32(2, 3), f32(4)]),
    ("kron", lambda m, x, y: m.kron(x, y), [f32(2, 3), f32(3, 2)]),
    ("kron_rank", lambda m, x, y: m.kron(x, y), [f32(2, 2, 2), f32(3, 2)]),
]


@pytest.mark.parametrize("fn,inputs", [pytest.param(c[1], c[2], id=c[0]) for c in FORWARD])
def test_forward_matches_paddle(paddle, rng, fn, inputs):
    run_both(paddle, fn, [make(rng) for make in inputs], rtol=2e-5, atol=2e-5)


def test_forward_cases_trace_under_jit(rng):
    traces_like_eager(FORWARD, rng, skip=())


def test_mean_of_integers_is_floating(paddle):
    # Documented difference: Paddle truncates the mean of an int tensor to int; pdx keeps the value.
    out = pdx.mean(jnp.asarray([1, 2], jnp.int32))
    assert out.dtype == jnp.float32 and float(out) == 1.5


GRADS = [
    ("add_bcast", lambda m, x, y: m.add(x, y), [f32(*S), f32(5, 1)], (0, 1)),
    ("divide", lambda m, x, y: m.divide(x, y), [f32(3, 5), pos(3, 5)], (0, 1)),
    ("pow", lambda m, x: m.pow(x, 3), [f32(3, 5)], (0,)),
    ("maximum_ties", lambda m, x, y: m.maximum(x, y), [lambda r: np.array([1.0, 2.0, 3.0], np.float32),
                                                       lambda r: np.array([2.0, 2.0, 2.0], np.float32)], (0, 1)),
    ("max_ties", lambda m, x: m.max(x), [lambda r: np.array([[1.0, 3.0, 3.0], [2.0, 3.0, 0.0]], np.float32)], (0,)),
    ("max_axis_ties", lambda m, x: m.max(x, axis=1), [lambda r: np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]],
                                                                         np.float32)], (0,)),
    ("amin_axis", lambda m, x: m.amin(x, axis=0), [f32(*S)], (0,)),
    ("sum_axes", lambda m, x: m.sum(x, axis=[0, 2]), [f32(*S)], (0,)),
    ("mean", lambda m, x: m.mean(x, axis=1), [f32(*S)], (0,)),
    ("prod", lambda m, x: m.prod(x, axis=1), [f32(3, 5, low=0.5, high=1.5)], (0,)),
    ("std", lambda m, x: m.std(x, axis=1), [f32(*S)], (0,)),
    ("var", lambda m, x: m.var(x), [f32(3, 5)], (0,)),
    ("logsumexp", lambda m, x: m.logsumexp(x, axis=-1), [f32(*S)], (0,)),
    ("cumsum", lambda m, x: m.cumsum(x, axis=1), [f32(*S)], (0,)),
    ("cumprod", lambda m, x: m.cumprod(x, dim=1), [f32(3, 5, low=0.5, high=1.5)], (0,)),
    ("matmul", lambda m, x, y: m.matmul(x, y), [f32(3, 5), f32(5, 7)], (0, 1)),
    ("matmul_tx_ty", lambda m, x, y: m.matmul(x, y, transpose_x=True, transpose_y=True),
     [f32(2, 5, 3), f32(7, 5)], (0, 1)),
    ("matmul_vec", lambda m, x, y: m.matmul(x, y), [f32(5), f32(2, 5, 3)], (0, 1)),
    ("bmm", lambda m, x, y: m.bmm(x, y), [f32(2, 3, 4), f32(2, 4, 5)], (0, 1)),
    ("einsum", lambda m, x, y: m.einsum("bij,bjk->bik", x, y), [f32(2, 3, 4), f32(2, 4, 5)], (0, 1)),
    ("clip", lambda m, x: m.clip(x, -0.5, 0.5), [f32(3, 5)], (0,)),
    ("tanh_erf", lambda m, x: m.tanh(m.erf(x)), [f32(3, 5)], (0,)),
    ("lerp", lambda m, x, y: m.lerp(x, y, 0.3), [f32(3, 5), f32(3, 5)], (0, 1)),
    ("sqrt_log", lambda m, x: m.sqrt(m.log(x)), [f32(3, 5, low=1.5, high=3)], (0,)),
    ("kron", lambda m, x, y: m.kron(x, y), [f32(2, 3), f32(3, 2)], (0, 1)),
]


@pytest.mark.parametrize("fn,inputs,wrt", [pytest.param(c[1], c[2], c[3], id=c[0]) for c in GRADS])
def test_grads_match_paddle(paddle, rng, fn, inputs, wrt):
    grads_match(paddle, fn, [make(rng) for make in inputs], wrt, rng)


def test_python_scalar_keeps_integer_dtype():
    x = jnp.asarray([1, 2, 3], jnp.int32)
    assert pdx.add(x, 1).dtype == jnp.int32
    assert pdx.multiply(x, 2).dtype == jnp.int32
    assert pdx.divide(x, 2).dtype == jnp.float32


def test_matmul_and_reductions_under_jit(paddle, rng):
    x, y = rng.standard_normal((2, 5, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    out = jax.jit(lambda a, b: pdx.sum(pdx.matmul(a, b), axis=[0, 2]))(x, y)
    assert_matches(out, paddle.sum(paddle.matmul(paddle.to_tensor(x), paddle.to_tensor(y)), axis=[0, 2]),
                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call,match", [
    (lambda: pdx.matmul(jnp.ones((2, 3)), jnp.ones((4, 5))),
     r"pdx\.matmul: x\.shape=\(2, 3\) and y\.shape=\(4, 5\).*\(3 vs 4\)"),
    (lambda: pdx.matmul(jnp.ones((2, 2, 3)), jnp.ones((3, 3, 4))), r"pdx\.matmul: batch dims"),
    (lambda: pdx.bmm(jnp.ones((2, 2, 3)), jnp.ones((3, 3, 4))), r"pdx\.bmm: batch sizes differ"),
    (lambda: pdx.dot(jnp.ones(3), jnp.ones(4)), r"pdx\.dot"),
    (lambda: pdx.add(jnp.ones((2, 3)), jnp.ones((4,))),
     r"pdx\.add: x\.shape=\(2, 3\) and y\.shape=\(4,\) cannot be broadcast"),
    (lambda: pdx.sum(jnp.ones((2, 3)), axis=2), r"pdx\.sum: `axis`=2 is out of range"),
    (lambda: pdx.mean(jnp.ones((2, 3)), axis=[0, -2]), r"pdx\.mean: `axis`=\[0, -2\] repeats"),
    (lambda: pdx.cumsum(jnp.ones((2, 3)), axis=3), r"pdx\.cumsum: `axis`=3"),
    (lambda: pdx.scale(jnp.ones(2), act="bogus"), r"pdx\.scale: `act`='bogus'"),
    (lambda: pdx.einsum("ij,jk->ik", jnp.ones((2, 3))), r"pdx\.einsum: equation"),
    (lambda: pdx.max(jnp.ones((0, 3)), axis=0), r"pdx\.max: cannot reduce over an empty axis"),
])
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_non_tensor_argument_is_named():
    with pytest.raises(TypeError, match=r"pdx\.exp: argument `x` must be a tensor"):
        pdx.exp(object())
