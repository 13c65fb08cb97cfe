"""pdx comparison, logical, sort/search and introspection ops vs the installed paddle."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ops_testutil import assert_matches, grads_match, run_both, traces_like_eager

import pdx


def f32(*shape):
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


def small_int(*shape):
    return lambda rng: rng.integers(-3, 4, shape).astype(np.int32)


def bools(*shape):
    return lambda rng: rng.random(shape) < 0.5


def distinct(*shape):
    """Values without ties, so sort orders are unique."""
    return lambda rng: rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32) / 7


def const(value, dtype=np.float32):
    return lambda rng: np.asarray(value, dtype)


S = (3, 5, 7)

FORWARD = [
    ("equal", lambda m, x, y: m.equal(x, y), [small_int(*S), small_int(5, 7)]),
    ("not_equal", lambda m, x, y: m.not_equal(x, y), [small_int(*S), small_int(*S)]),
    ("greater_than", lambda m, x, y: m.greater_than(x, y), [f32(*S), f32(7)]),
    ("greater_equal", lambda m, x, y: m.greater_equal(x, y), [small_int(3, 5), small_int(3, 1)]),
    ("less_than", lambda m, x, y: m.less_than(x, y), [f32(*S), f32(*S)]),
    ("less_equal", lambda m, x, y: m.less_equal(x, y), [small_int(3, 5), small_int(5)]),
    ("logical_and", lambda m, x, y: m.logical_and(x, y), [bools(*S), bools(5, 7)]),
    ("logical_or", lambda m, x, y: m.logical_or(x, y), [bools(3, 5), bools(3, 5)]),
    ("logical_xor", lambda m, x, y: m.logical_xor(x, y), [bools(3, 5), bools(1, 5)]),
    ("logical_not", lambda m, x: m.logical_not(x), [bools(*S)]),
    ("allclose_true", lambda m, x, y: m.allclose(x, y), [const([1.0, 2.0]), const([1.0, 2.000001])]),
    ("allclose_false", lambda m, x, y: m.allclose(x, y), [const([1.0, 2.0]), const([1.0, 2.1])]),
    ("allclose_tol", lambda m, x, y: m.allclose(x, y, rtol=0.0, atol=0.2), [const([1.0, 2.0]), const([1.1, 2.1])]),
    ("allclose_nan", lambda m, x, y: m.allclose(x, y, equal_nan=True), [const([np.nan, 1.0]), const([np.nan, 1.0])]),
    ("argmax", lambda m, x: m.argmax(x), [f32(*S)]),
    ("argmax_axis", lambda m, x: m.argmax(x, axis=1), [f32(*S)]),
    ("argmax_keepdim_none", lambda m, x: m.argmax(x, keepdim=True), [f32(*S)]),
    ("argmax_ties", lambda m, x: m.argmax(x, axis=-1, keepdim=True), [small_int(3, 7)]),
    ("argmin_axis", lambda m, x: m.argmin(x, axis=-1, dtype="int32"), [f32(*S)]),
    ("argmin", lambda m, x: m.argmin(x), [small_int(3, 5)]),
    ("argsort", lambda m, x: m.argsort(x), [distinct(*S)]),
    ("argsort_axis_desc", lambda m, x: m.argsort(x, axis=0, descending=True), [distinct(*S)]),
    ("argsort_stable_ties", lambda m, x: m.argsort(x, axis=1, stable=True), [small_int(3, 9)]),
    ("argsort_stable_ties_desc", lambda m, x: m.argsort(x, axis=1, descending=True, stable=True), [small_int(3, 9)]),
    ("sort", lambda m, x: m.sort(x, axis=1), [f32(*S)]),
    ("sort_desc", lambda m, x: m.sort(x, descending=True), [small_int(3, 9)]),
    ("topk", lambda m, x: m.topk(x, 3), [distinct(*S)]),
    ("topk_axis", lambda m, x: m.topk(x, 2, axis=0), [distinct(*S)]),
    ("topk_smallest", lambda m, x: m.topk(x, 4, axis=1, largest=False), [distinct(*S)]),
    ("searchsorted", lambda m, s, v: m.searchsorted(s, v), [const([1.0, 2.0, 2.0, 3.5, 7.0]), f32(3, 4)]),
    ("searchsorted_right", lambda m, s, v: m.searchsorted(s, v, right=True),
     [const([1.0, 2.0, 2.0, 3.5, 7.0]), const([[2.0, 0.0, 7.0, 9.0]])]),
    ("searchsorted_batched", lambda m, s, v: m.searchsorted(s, v, out_int32=True),
     [const([[1.0, 3.0, 5.0], [0.0, 0.5, 2.0]]), const([[2.0, 6.0], [0.5, -1.0]])]),
    ("any", lambda m, x: m.any(x), [bools(*S)]),
    ("any_axis", lambda m, x: m.any(x, axis=[0, 2], keepdim=True), [bools(*S)]),
    ("all", lambda m, x: m.all(x, axis=1), [bools(*S)]),
    ("all_all", lambda m, x: m.all(x), [const([True, True])]),
    ("numel", lambda m, x: m.numel(x), [f32(*S)]),
    ("nonzero", lambda m, x: m.nonzero(x), [small_int(*S)]),
    ("nonzero_tuple", lambda m, x: m.nonzero(x, as_tuple=True), [small_int(3, 5)]),
    ("where_indices", lambda m, c: m.where(c), [bools(3, 5)]),
    ("unique", lambda m, x: m.unique(x), [small_int(*S)]),
    ("unique_all", lambda m, x: m.unique(x, return_index=True, return_inverse=True, return_counts=True),
     [small_int(3, 5)]),
    ("unique_counts", lambda m, x: m.unique(x, return_counts=True, dtype="int32"), [f32(2, 3)]),
    ("unique_axis", lambda m, x: m.unique(x, return_inverse=True, return_counts=True, axis=0),
     [const([[1, 2], [3, 4], [1, 2], [0, 9]], np.int32)]),
]


@pytest.mark.parametrize("fn,inputs", [pytest.param(c[1], c[2], id=c[0]) for c in FORWARD])
def test_forward_matches_paddle(paddle, rng, fn, inputs):
    run_both(paddle, fn, [make(rng) for make in inputs])


def test_forward_cases_trace_under_jit(rng):
    eager_only = ("nonzero", "nonzero_tuple", "where_indices", "unique", "unique_all", "unique_counts", "unique_axis")
    traces_like_eager(FORWARD, rng, skip=eager_only)


def test_shape_is_int32_and_works_under_jit(paddle, rng):
    x = rng.standard_normal(S).astype(np.float32)
    ours = pdx.shape(jnp.asarray(x))
    assert ours.dtype == jnp.int32
    np.testing.assert_array_equal(ours, np.asarray(paddle.shape(paddle.to_tensor(x))))
    np.testing.assert_array_equal(jax.jit(pdx.shape)(x), [3, 5, 7])
    assert int(jax.jit(pdx.numel)(x)) == 105


def test_is_tensor(paddle):
    for value in (np.zeros(2), [1.0], 3.0):
        assert pdx.is_tensor(value) == paddle.is_tensor(value) is False
    assert pdx.is_tensor(jnp.zeros(2)) and paddle.is_tensor(paddle.zeros([2]))
    assert jax.jit(lambda t: jnp.asarray(pdx.is_tensor(t)))(jnp.zeros(2))


GRADS = [
    ("sort", lambda m, x: m.sort(x, axis=1, descending=True), [distinct(*S)], (0,)),
    ("topk_values", lambda m, x: m.topk(x, 3, axis=1)[0], [distinct(*S)], (0,)),
    ("topk_smallest", lambda m, x: m.topk(x, 2, largest=False)[0], [distinct(3, 5)], (0,)),
]


@pytest.mark.parametrize("fn,inputs,wrt", [pytest.param(c[1], c[2], c[3], id=c[0]) for c in GRADS])
def test_grads_match_paddle(paddle, rng, fn, inputs, wrt):
    grads_match(paddle, fn, [make(rng) for make in inputs], wrt, rng)


@pytest.mark.parametrize("call", [
    lambda x: pdx.nonzero(x), lambda x: pdx.nonzero(x, as_tuple=True), lambda x: pdx.where(x > 0),
    lambda x: pdx.unique(x), lambda x: pdx.unique(x, return_counts=True),
], ids=["nonzero", "nonzero_tuple", "where_indices", "unique", "unique_counts"])
def test_eager_only_ops_raise_under_jit(call):
    with pytest.raises(RuntimeError, match=r"is eager only.*Pass size=N"):
        jax.jit(call)(jnp.asarray([1.0, 0.0, 2.0]))


def test_size_argument_makes_nonzero_and_unique_jittable():
    x = jnp.asarray([[0, 3], [4, 0]])
    idx = jax.jit(lambda t: pdx.nonzero(t, size=3, fill_value=-1))(x)
    np.testing.assert_array_equal(idx, [[0, 1], [1, 0], [-1, -1]])
    values, counts = jax.jit(lambda t: pdx.unique(t, return_counts=True, size=4, fill_value=9))(x)
    np.testing.assert_array_equal(values, [0, 3, 4, 9])
    np.testing.assert_array_equal(counts[:3], [2, 1, 1])


def test_comparisons_with_python_scalars(paddle, rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    theirs = paddle.greater_than(paddle.to_tensor(x), paddle.to_tensor(0.0))
    assert_matches(pdx.greater_than(jnp.asarray(x), 0.0), theirs)
    assert pdx.equal(jnp.asarray([1, 2]), 2).tolist() == [False, True]


@pytest.mark.parametrize("call,match", [
    (lambda: pdx.equal(jnp.ones((2, 3)), jnp.ones((3, 2))), r"pdx\.equal: x\.shape=\(2, 3\) and y\.shape=\(3, 2\)"),
    (lambda: pdx.argmax(jnp.ones((2, 3)), axis=2), r"pdx\.argmax: `axis`=2 is out of range"),
    (lambda: pdx.topk(jnp.ones(3), 4), r"pdx\.topk: `k`=4 must be in \[1, 3\]"),
    (lambda: pdx.sort(jnp.ones(())), r"pdx\.sort: x must have rank >= 1"),
    (lambda: pdx.searchsorted(jnp.ones((2, 3)), jnp.ones((3, 1))), r"pdx\.searchsorted: sorted_sequence\.shape"),
    (lambda: pdx.any(jnp.ones((2, 3)), axis=[1, 1]), r"pdx\.any: `axis`=\[1, 1\] repeats"),
    (lambda: pdx.allclose(jnp.ones(2), jnp.ones(3)), r"pdx\.allclose: x\.shape=\(2,\) and y\.shape=\(3,\)"),
    (lambda: pdx.argmin(jnp.ones((0,))), r"pdx\.argmin: cannot take argmin of an empty tensor"),
])
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_index_dtype_is_named():
    with pytest.raises(TypeError, match=r"pdx\.argmax: `dtype` must be 'int32' or 'int64'"):
        pdx.argmax(jnp.ones(3), dtype="float32")
