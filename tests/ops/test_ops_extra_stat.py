"""Statistics, scans, histograms, scatter-style writes, complex and creation ops vs the installed paddle."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from extra_testutil import check_forward, check_grads

import pdx


def f32(*shape, low=-2.0, high=2.0):
    return lambda rng: rng.uniform(low, high, shape).astype(np.float32)


def i32(*shape, low=-9, high=10):
    return lambda rng: rng.integers(low, high, shape).astype(np.int32)


def const(values, dtype=np.float32):
    return lambda rng: np.asarray(values, dtype)


def with_nans(*shape):
    def make(rng):
        x = rng.uniform(-2, 2, shape).astype(np.float32)
        x[rng.random(shape) < 0.25] = np.nan
        return x
    return make


def distinct(*shape):
    return lambda rng: rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32)


def repeats(*shape):
    return lambda rng: rng.integers(0, 4, shape).astype(np.float32)


FORWARD = [
    ("nansum", lambda m, x: m.nansum(x, axis=1), [with_nans(3, 4, 5)]),
    ("nansum_int", lambda m, x: m.nansum(x), [i32(3, 4)]),
    ("nansum_keepdim", lambda m, x: m.nansum(x, axis=[0, 2], keepdim=True), [with_nans(3, 4, 5)]),
    ("nanmean", lambda m, x: m.nanmean(x, axis=-1), [with_nans(3, 4, 5)]),
    ("count_nonzero", lambda m, x: m.count_nonzero(x, axis=1), [i32(3, 4, low=-1, high=2)]),
    ("count_nonzero_all", lambda m, x: m.count_nonzero(x, keepdim=True), [i32(3, 4, low=-1, high=2)]),
    ("median_all", lambda m, x: m.median(x), [f32(3, 4)]),
    ("median_axis", lambda m, x: m.median(x, axis=1, keepdim=True), [f32(3, 5)]),
    ("median_even", lambda m, x: m.median(x, axis=-1), [f32(3, 4, 6)]),
    ("median_min", lambda m, x: m.median(x, axis=1, mode="min"), [distinct(3, 6)]),
    ("median_int", lambda m, x: m.median(x, axis=0), [i32(4, 3)]),
    ("median_nan", lambda m, x: m.median(x, axis=1), [const([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0]])]),
    ("nanmedian", lambda m, x: m.nanmedian(x, axis=1), [const([[1.0, np.nan, 2.0, 5.0], [3.0, 1.0, 2.0, 0.0]])]),
    ("nanmedian_all", lambda m, x: m.nanmedian(x), [with_nans(4, 5)]),
    ("nanmedian_min", lambda m, x: m.nanmedian(x, axis=0, mode="min"),
     [const([[1.0, np.nan], [4.0, 2.0], [3.0, 5.0], [0.0, 7.0]])]),
    ("quantile", lambda m, x: m.quantile(x, 0.3), [f32(4, 5)]),
    ("quantile_list_axis", lambda m, x: m.quantile(x, [0.1, 0.5, 0.9], axis=1, keepdim=True), [f32(3, 7)]),
    ("quantile_axes", lambda m, x: m.quantile(x, 0.25, axis=[0, 2]), [f32(3, 4, 5)]),
    ("quantile_lower", lambda m, x: m.quantile(x, 0.4, axis=0, interpolation="lower"), [f32(6, 3)]),
    ("quantile_higher", lambda m, x: m.quantile(x, 0.4, axis=0, interpolation="higher"), [f32(6, 3)]),
    ("quantile_midpoint", lambda m, x: m.quantile(x, 0.4, axis=0, interpolation="midpoint"), [f32(6, 3)]),
    ("nanquantile", lambda m, x: m.nanquantile(x, [0.3, 0.7], axis=1), [with_nans(3, 8)]),
    ("kthvalue", lambda m, x: m.kthvalue(x, 2), [distinct(3, 5)]),
    ("kthvalue_axis", lambda m, x: m.kthvalue(x, 3, axis=0, keepdim=True), [distinct(4, 3, 2)]),
    ("mode", lambda m, x: m.mode(x), [repeats(3, 7)]),
    ("mode_axis_keepdim", lambda m, x: m.mode(x, axis=0, keepdim=True), [repeats(6, 3)]),
    # scans
    ("cummax", lambda m, x: m.cummax(x, axis=1), [repeats(3, 6)]),
    ("cummax_flat", lambda m, x: m.cummax(x), [f32(3, 4)]),
    ("cummin", lambda m, x: m.cummin(x, axis=-1), [repeats(3, 6)]),
    ("cummin_int", lambda m, x: m.cummin(x, axis=0), [i32(5, 2)]),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, axis=1), [f32(3, 5, low=-20, high=20)]),
    ("logcumsumexp_flat", lambda m, x: m.logcumsumexp(x), [f32(2, 3)]),
    ("diff", lambda m, x: m.diff(x), [f32(3, 5)]),
    ("diff_n2_axis0", lambda m, x: m.diff(x, n=2, axis=0), [i32(5, 3)]),
    ("diff_pre_app", lambda m, x, p, a: m.diff(x, axis=1, prepend=p, append=a), [f32(2, 3), f32(2, 1), f32(2, 2)]),
    ("trapezoid", lambda m, y: m.trapezoid(y), [f32(3, 5)]),
    ("trapezoid_dx", lambda m, y: m.trapezoid(y, dx=0.5, axis=0), [f32(4, 3)]),
    ("trapezoid_x", lambda m, y, x: m.trapezoid(y, x=x), [f32(2, 5), f32(5)]),
    ("cumulative_trapezoid", lambda m, y: m.cumulative_trapezoid(y, dx=2.0), [f32(3, 5)]),
    ("cumulative_trapezoid_x", lambda m, y, x: m.cumulative_trapezoid(y, x), [f32(3, 4), f32(3, 4)]),
    ("histogram", lambda m, x: m.histogram(x, bins=5, min=-1, max=1), [f32(20)]),
    ("histogram_auto", lambda m, x: m.histogram(x, bins=4), [f32(3, 7)]),
    ("histogram_weight", lambda m, x, w: m.histogram(x, bins=3, min=-2, max=2, weight=w), [f32(10), f32(10)]),
    ("histogram_density", lambda m, x: m.histogram(x, bins=3, density=True), [f32(10)]),
    ("histogram_bin_edges", lambda m, x: m.histogram_bin_edges(x, bins=4), [f32(9)]),
    ("histogramdd", lambda m, x: m.histogramdd(x, bins=3), [f32(10, 2)]),
    ("histogramdd_ranges", lambda m, x: m.histogramdd(x, bins=[2, 3], ranges=[-1.0, 1.0, -2.0, 2.0]),
     [f32(10, 2)]),
    ("bincount", lambda m, x: m.bincount(x), [i32(12, low=0, high=6)]),
    ("bincount_w", lambda m, x, w: m.bincount(x, weights=w, minlength=9), [i32(12, low=0, high=6), f32(12)]),
    ("bucketize", lambda m, x, s: m.bucketize(x, s), [f32(3, 4), const([-1.0, 0.0, 0.5, 1.5])]),
    ("bucketize_right", lambda m, x, s: m.bucketize(x, s, right=True, out_int32=True),
     [const([0.0, 1.0, 2.0]), const([0.0, 1.0, 2.0])]),
    ("msort", lambda m, x: m.msort(x), [f32(4, 3)]),
    ("isin", lambda m, x, t: m.isin(x, t), [i32(3, 4), i32(5)]),
    ("isin_invert", lambda m, x, t: m.isin(x, t, invert=True), [f32(3, 4), const([0.5, 1.0])]),
    ("unique_consecutive", lambda m, x: m.unique_consecutive(x), [i32(12, low=0, high=3)]),
    ("unique_consecutive_all", lambda m, x: m.unique_consecutive(x, True, True), [i32(3, 4, low=0, high=2)]),
    ("unique_consecutive_axis", lambda m, x: m.unique_consecutive(x, True, True, axis=1),
     [const([[1, 1, 2, 2], [3, 3, 4, 5]], np.int32)]),
    ("reduce_as", lambda m, x, t: m.reduce_as(x, t), [f32(2, 3, 4), f32(3, 1)]),
    # scatter-style writes and gathers
    ("scatter_nd", lambda m, i, u: m.scatter_nd(i, u, [4, 3]), [i32(5, 1, low=0, high=4), f32(5, 3)]),
    ("scatter_add", lambda m, x, i, s: m.scatter_add(x, 1, i, s), [f32(3, 4), i32(3, 2, low=0, high=4), f32(3, 3)]),
    ("scatter_reduce_sum", lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "sum"),
     [f32(4, 2), i32(3, 2, low=0, high=4), f32(3, 2)]),
    ("scatter_reduce_amax", lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "amax", include_self=False),
     [f32(4, 2), i32(3, 2, low=0, high=4), f32(3, 2)]),
    ("scatter_reduce_mean", lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "mean"),
     [f32(4, 2), i32(3, 2, low=0, high=4), f32(3, 2)]),
    ("index_add", lambda m, x, i, v: m.index_add(x, i, 1, v, alpha=2), [f32(3, 5), const([4, 0, 4], np.int32),
                                                                        f32(3, 3)]),
    ("index_fill", lambda m, x, i: m.index_fill(x, i, 0, -1.5), [f32(4, 3), const([0, 2], np.int32)]),
    ("index_put", lambda m, x, a, b, v: m.index_put(x, (a, b), v), [f32(3, 4), const([0, 2], np.int32),
                                                                    const([1, 3], np.int32), f32(2)]),
    ("index_put_acc", lambda m, x, a, v: m.index_put(x, (a,), v, accumulate=True),
     [f32(3, 4), const([0, 0, 2], np.int32), f32(4)]),
    ("masked_scatter", lambda m, x, k, v: m.masked_scatter(x, k, v),
     [f32(3, 4), lambda rng: rng.random((3, 4)) < 0.5, f32(12)]),
    ("masked_scatter_bcast", lambda m, x, k, v: m.masked_scatter(x, k, v),
     [f32(3, 4), const([True, False, True, False], np.bool_), f32(7)]),
    ("select_scatter", lambda m, x, v: m.select_scatter(x, v, 1, -1), [f32(3, 4, 2), f32(3, 2)]),
    ("slice_scatter", lambda m, x, v: m.slice_scatter(x, v, [0, 1], [0, 1], [4, 4], [2, 2]),
     [f32(4, 5), f32(2, 2)]),
    ("diagonal_scatter", lambda m, x, y: m.diagonal_scatter(x, y, 1), [f32(3, 4), f32(3)]),
    ("diagonal_scatter_axes", lambda m, x, y: m.diagonal_scatter(x, y, -1, 2, 0), [f32(3, 2, 3), f32(2, 2)]),
    ("take", lambda m, x, i: m.take(x, i), [f32(3, 4), i32(2, 3, low=-12, high=12)]),
    ("take_wrap", lambda m, x, i: m.take(x, i, mode="wrap"), [f32(3, 4), i32(5, low=-30, high=30)]),
    ("take_clip", lambda m, x, i: m.take(x, i, mode="clip"), [f32(3, 4), i32(5, low=-30, high=30)]),
    ("index_sample", lambda m, x, i: m.index_sample(x, i), [f32(3, 5), i32(3, 4, low=0, high=5)]),
    ("multiplex", lambda m, a, b, i: m.multiplex([a, b], i), [f32(3, 2), f32(3, 2), const([[1], [0], [1]], np.int32)]),
    ("shard_index", lambda m, x: m.shard_index(x, 20, 3, 1), [i32(6, 1, low=0, high=20)]),
    ("argwhere", lambda m, x: m.argwhere(x), [i32(3, 4, low=-1, high=2)]),
    # complex
    ("real", lambda m, x: m.real(x), [const([1 + 2j, -3j], np.complex64)]),
    ("imag", lambda m, x: m.imag(x), [const([1 + 2j, -3j], np.complex64)]),
    ("conj", lambda m, x: m.conj(x), [const([1 + 2j, -3j], np.complex64)]),
    ("angle", lambda m, x: m.angle(x), [const([1 + 2j, -3j, -1 + 0j], np.complex64)]),
    ("angle_real", lambda m, x: m.angle(x), [f32(5)]),
    ("complex", lambda m, x, y: m.complex(x, y), [f32(3, 2), f32(2)]),
    ("polar", lambda m, x, y: m.polar(x, y), [f32(3, low=0, high=2), f32(3)]),
    ("as_complex", lambda m, x: m.as_complex(x), [f32(3, 2)]),
    ("as_real", lambda m, x: m.as_real(x), [const([1 + 2j, -3j], np.complex64)]),
    ("view_as_real", lambda m, x: m.view_as_real(x), [const([1 + 2j], np.complex64)]),
    ("view_as_complex", lambda m, x: m.view_as_complex(x), [f32(2, 2)]),
    ("rank", lambda m, x: m.rank(x), [f32(2, 3, 1)]),
    ("is_empty", lambda m, x: m.is_empty(x), [f32(0, 3)]),
    # creation
    ("assign", lambda m, x: m.assign(x), [f32(3)]),
    ("clone", lambda m, x: m.clone(x), [i32(3)]),
    ("add_n", lambda m, x, y: m.add_n([x, y, x]), [f32(2, 3), f32(2, 3)]),
    ("increment", lambda m, x: m.increment(x, 2.5), [f32(1)]),
    ("logspace", lambda m: m.logspace(-1, 2, 5), []),
    ("logspace_base", lambda m: m.logspace(0, 3, 4, base=2.0), []),
    ("range", lambda m: m.range(1, 4, 0.5), []),
    ("empty_like", lambda m, x: m.empty_like(x, dtype="int32") * 0, [f32(2, 3)]),
    ("hann_window", lambda m: m.hann_window(6), []),
    ("hann_window_sym", lambda m: m.hann_window(6, periodic=False), []),
    ("hamming_window", lambda m: m.hamming_window(5, alpha=0.6, beta=0.4), []),
    ("blackman_window", lambda m: m.blackman_window(7), []),
    ("bartlett_window", lambda m: m.bartlett_window(6, periodic=False), []),
    ("kaiser_window", lambda m: m.kaiser_window(5, beta=5.0), []),
]

EAGER = {"bincount", "bincount_w", "argwhere", "unique_consecutive", "unique_consecutive_all",
         "unique_consecutive_axis", "logspace", "logspace_base", "range", "hann_window",
         "hann_window_sym", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
         "empty_like", "is_empty", "rank"}


def test_forward_matches_paddle(paddle, rng):
    check_forward(paddle, rng, FORWARD, eager=EAGER)


GRADS = [
    ("nansum", lambda m, x: m.nansum(x, axis=1), [f32(3, 4)], (0,)),
    ("median_even", lambda m, x: m.median(x, axis=1), [distinct(3, 4)], (0,)),
    ("median_min", lambda m, x: m.median(x, axis=1, mode="min")[0], [distinct(3, 5)], (0,)),
    ("quantile", lambda m, x: m.quantile(x, [0.3, 0.6], axis=0), [distinct(5, 3)], (0,)),
    ("kthvalue", lambda m, x: m.kthvalue(x, 2, axis=1)[0], [distinct(3, 4)], (0,)),
    ("cummax", lambda m, x: m.cummax(x, axis=1)[0], [distinct(3, 4)], (0,)),
    ("logcumsumexp", lambda m, x: m.logcumsumexp(x, axis=0), [f32(4, 3)], (0,)),
    ("trapezoid", lambda m, y, x: m.trapezoid(y, x), [f32(3, 4), f32(3, 4)], (0, 1)),
    ("scatter_reduce_sum", lambda m, x, s: m.scatter_reduce(x, 0, m.to_tensor([[0, 1], [3, 1]]), s, "sum"),
     [f32(4, 2), f32(2, 2)], (0, 1)),
    ("index_add", lambda m, x, v: m.index_add(x, m.to_tensor([2, 0]), 0, v), [f32(3, 2), f32(2, 2)], (0, 1)),
    ("masked_scatter", lambda m, x, v: m.masked_scatter(x, m.to_tensor([[True, False], [False, True]]), v),
     [f32(2, 2), f32(3)], (0, 1)),
    ("take", lambda m, x: m.take(x, m.to_tensor([0, 5, 5])), [f32(2, 3)], (0,)),
    ("diagonal_scatter", lambda m, x, y: m.diagonal_scatter(x, y), [f32(3, 3), f32(3)], (0,)),
    ("add_n", lambda m, x, y: m.add_n([x, y]), [f32(2, 3), f32(2, 3)], (0, 1)),
]


def test_grads_match_paddle(paddle, rng):
    check_grads(paddle, rng, GRADS)


def test_python_valued_queries(paddle):
    for dt in ("float32", "int32", "bool", "complex64", "float16"):
        x = np.zeros(2, dt)
        for q in ("is_complex", "is_floating_point", "is_integer"):
            assert getattr(pdx, q)(jnp.asarray(x)) == getattr(paddle, q)(paddle.to_tensor(x)), (q, dt)
    for dt in ("float32", "float16", "bfloat16", "float64"):
        ours, theirs = pdx.finfo(dt), paddle.finfo(getattr(paddle, dt))
        assert (ours.bits, float(ours.eps), float(ours.max), float(ours.tiny)) == \
            (theirs.bits, theirs.eps, theirs.max, theirs.tiny), dt
    for dt in ("int8", "int32", "int64", "uint8"):
        ours, theirs = pdx.iinfo(dt), paddle.iinfo(getattr(paddle, dt))
        assert (ours.bits, int(ours.min), int(ours.max)) == (theirs.bits, theirs.min, theirs.max), dt
    assert pdx.tolist(jnp.asarray([[1, 2]])) == paddle.tolist(paddle.to_tensor([[1, 2]]))


def test_dlpack_round_trip(paddle):
    x = jnp.arange(6.0).reshape(2, 3)
    back = pdx.from_dlpack(paddle.utils.dlpack.from_dlpack(pdx.to_dlpack(x)))
    np.testing.assert_array_equal(np.asarray(back), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(pdx.from_dlpack(paddle.ones([2]))), [1.0, 1.0])


def test_create_parameter_is_a_trainable_param():
    from flax import nnx

    pdx.seed(0)
    p = pdx.create_parameter([3, 4], "float32")
    assert isinstance(p, nnx.Param) and p.shape == (3, 4) and float(jnp.abs(p[...]).sum()) > 0
    b = pdx.create_parameter([4], "float32", is_bias=True)
    assert float(jnp.abs(b[...]).sum()) == 0


def test_eager_only_ops_explain_jit():
    with pytest.raises(ValueError, match="cannot run under jit"):
        jax.jit(lambda x: pdx.bincount(x))(jnp.asarray([1, 2]))
    with pytest.raises(ValueError, match="cannot run under jit"):
        jax.jit(lambda x: pdx.argwhere(x))(jnp.asarray([1, 0]))


def test_bad_input_names_the_argument():
    x = jnp.ones([3, 4])
    with pytest.raises(ValueError, match="`mode`"):
        pdx.median(x, axis=0, mode="max")
    with pytest.raises(ValueError, match="`q`"):
        pdx.quantile(x, 1.5)
    with pytest.raises(ValueError, match="`interpolation`"):
        pdx.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(ValueError, match="`k`=5"):
        pdx.kthvalue(x, 5)
    with pytest.raises(ValueError, match="`reduce`"):
        pdx.scatter_reduce(x, 0, jnp.zeros([1, 4], jnp.int32), x, "max")
    with pytest.raises(ValueError, match="value.shape"):
        pdx.index_add(x, jnp.asarray([0]), 0, jnp.ones([2, 4]))
    with pytest.raises(ValueError, match="True entries"):
        pdx.masked_scatter(x, jnp.ones([3, 4], bool), jnp.ones([5]))
    with pytest.raises(ValueError, match="`index`"):
        pdx.take(x, jnp.asarray([12]))
    with pytest.raises(ValueError, match="`mode`"):
        pdx.take(x, jnp.asarray([1]), mode="nearest")
    with pytest.raises(ValueError, match="non-negative"):
        pdx.bincount(jnp.asarray([-1, 2]))
    with pytest.raises(ValueError, match="last dim 2"):
        pdx.as_complex(x)
    with pytest.raises(TypeError, match="`dtype` must be a floating"):
        pdx.finfo("int32")
    with pytest.raises(ValueError, match="`n`"):
        pdx.diff(x, n=-1)
    with pytest.raises(ValueError, match="either `x`"):
        pdx.trapezoid(x, x=x, dx=1.0)
    with pytest.raises(ValueError, match="`bins`"):
        pdx.histogram(x, bins=0)
    with pytest.raises(ValueError, match="add_n does not broadcast"):
        pdx.add_n([x, jnp.ones([4])])
    with pytest.raises(ValueError, match="exactly one element"):
        pdx.increment(x)
