"""pdx shape/indexing ops vs the installed paddle: forward values and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ops_testutil import grads_match, run_both, traces_like_eager

import pdx


def f32(*shape):
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


def const(value, dtype=np.int32):
    return lambda rng: np.asarray(value, dtype)


def mask(*shape):
    return lambda rng: rng.random(shape) < 0.4


S = (3, 5, 7)

FORWARD = [
    ("reshape_copy_infer", lambda m, x: m.reshape(x, [0, -1]), [f32(*S)]),
    ("reshape_zero_middle", lambda m, x: m.reshape(x, [7, 0, 3]), [f32(*S)]),
    ("reshape_flat", lambda m, x: m.reshape(x, [-1]), [f32(*S)]),
    ("reshape_tuple", lambda m, x: m.reshape(x, (5, 21)), [f32(*S)]),
    ("transpose", lambda m, x: m.transpose(x, [2, 0, 1]), [f32(*S)]),
    ("transpose_neg", lambda m, x: m.transpose(x, [-1, -3, -2]), [f32(*S)]),
    ("concat", lambda m, a, b, c: m.concat([a, b, c], axis=1), [f32(3, 2, 7), f32(3, 5, 7), f32(3, 1, 7)]),
    ("concat_neg_axis", lambda m, a, b: m.concat((a, b), axis=-1), [f32(3, 5), f32(3, 2)]),
    ("stack", lambda m, a, b: m.stack([a, b]), [f32(3, 5), f32(3, 5)]),
    ("stack_last", lambda m, a, b, c: m.stack([a, b, c], axis=-1), [f32(3, 5), f32(3, 5), f32(3, 5)]),
    ("split_int", lambda m, x: m.split(x, 5, axis=1), [f32(*S)]),
    ("split_sections", lambda m, x: m.split(x, [2, -1, 3], axis=-1), [f32(*S)]),
    ("split_list_exact", lambda m, x: m.split(x, [1, 2], axis=0), [f32(*S)]),
    ("chunk", lambda m, x: m.chunk(x, 7, axis=2), [f32(*S)]),
    ("squeeze_all", lambda m, x: m.squeeze(x), [f32(1, 3, 1, 5)]),
    ("squeeze_axis", lambda m, x: m.squeeze(x, axis=2), [f32(1, 3, 1, 5)]),
    ("squeeze_list_non1_ignored", lambda m, x: m.squeeze(x, axis=[-1, 0, 1]), [f32(1, 3, 1, 5)]),
    ("unsqueeze_int", lambda m, x: m.unsqueeze(x, -1), [f32(3, 5)]),
    ("unsqueeze_list", lambda m, x: m.unsqueeze(x, [0, 2]), [f32(3, 5)]),
    ("unsqueeze_neg_repeat", lambda m, x: m.unsqueeze(x, [-1, -1]), [f32(3, 5)]),
    ("unsqueeze_mixed", lambda m, x: m.unsqueeze(x, [-3, 1]), [f32(3, 5)]),
    ("flatten", lambda m, x: m.flatten(x), [f32(*S)]),
    ("flatten_range", lambda m, x: m.flatten(x, start_axis=1, stop_axis=2), [f32(2, 3, 5, 7)]),
    ("flatten_0d", lambda m, x: m.flatten(x), [const(3.0, np.float32)]),
    ("gather", lambda m, x, i: m.gather(x, i), [f32(*S), const([2, 0, 2])]),
    ("gather_axis", lambda m, x, i: m.gather(x, i, axis=2), [f32(*S), const([6, 0, 3, 3])]),
    ("gather_0d_index", lambda m, x, i: m.gather(x, i, axis=1), [f32(*S), const(4)]),
    ("gather_nd", lambda m, x, i: m.gather_nd(x, i), [f32(*S), const([[1, 2], [0, 4], [2, 0]])]),
    ("gather_nd_full", lambda m, x, i: m.gather_nd(x, i), [f32(*S), const([[[1, 2, 3]], [[0, 4, 6]]])]),
    ("scatter_overwrite", lambda m, x, i, u: m.scatter(x, i, u), [f32(4, 3), const([3, 0]), f32(2, 3)]),
    ("scatter_accumulate", lambda m, x, i, u: m.scatter(x, i, u, overwrite=False),
     [f32(4, 3), const([1, 1, 2, 1]), f32(4, 3)]),
    ("scatter_overwrite_repeated_index_cpu", lambda m, x, i, u: m.scatter(x, i, u),
     [f32(4, 3), const([1, 1, 2, 1]), f32(4, 3)]),
    ("scatter_nd_add", lambda m, x, i, u: m.scatter_nd_add(x, i, u),
     [f32(4, 3, 2), const([[1, 2], [1, 2], [3, 0]]), f32(3, 2)]),
    ("scatter_nd_add_rows", lambda m, x, i, u: m.scatter_nd_add(x, i, u),
     [f32(4, 3), const([[1], [1], [3]]), f32(3, 3)]),
    ("index_select", lambda m, x, i: m.index_select(x, i, axis=1), [f32(*S), const([4, 0, 0, 2])]),
    ("index_select_default", lambda m, x, i: m.index_select(x, i), [f32(*S), const([2, 1])]),
    ("take_along_axis", lambda m, x, i: m.take_along_axis(x, i, axis=1), [f32(*S), const(np.zeros((3, 2, 7)) + 4)]),
    ("take_along_axis_bcast", lambda m, x, i: m.take_along_axis(x, i, 2), [f32(*S), const([[[0, 6]]])]),
    ("take_along_axis_nobcast", lambda m, x, i: m.take_along_axis(x, i, 1, broadcast=False),
     [f32(*S), const([[[0, 2]], [[4, 1]]])]),
    ("where", lambda m, c, x, y: m.where(c, x, y), [mask(*S), f32(*S), f32(5, 7)]),
    ("where_scalars", lambda m, c: m.where(c, 1.5, -2.0), [mask(3, 5)]),
    ("where_scalar_tensor", lambda m, c, x: m.where(c, x, 0.0), [mask(3, 5), f32(3, 5)]),
    ("masked_fill", lambda m, x, k: m.masked_fill(x, k, -1.5), [f32(*S), mask(5, 7)]),
    ("masked_select", lambda m, x, k: m.masked_select(x, k), [f32(*S), mask(*S)]),
    ("masked_select_bcast", lambda m, x, k: m.masked_select(x, k), [f32(3, 5), mask(5)]),
    ("tile", lambda m, x: m.tile(x, [2, 1, 3]), [f32(3, 5)]),
    ("tile_short", lambda m, x: m.tile(x, [2]), [f32(3, 5)]),
    ("expand", lambda m, x: m.expand(x, [2, 3, -1, 7]), [f32(3, 5, 1)]),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, [4, 3, 5]), [f32(3, 1)]),
    ("expand_as", lambda m, x, y: m.expand_as(x, y), [f32(5, 1), f32(3, 5, 7)]),
    ("flip", lambda m, x: m.flip(x, [0, 2]), [f32(*S)]),
    ("flip_int", lambda m, x: m.flip(x, -1), [f32(*S)]),
    ("roll_flat", lambda m, x: m.roll(x, 4), [f32(*S)]),
    ("roll_axes", lambda m, x: m.roll(x, [1, -2], axis=[0, 2]), [f32(*S)]),
    ("cast_int", lambda m, x: m.cast(x * 3, "int32"), [f32(*S)]),
    ("cast_bool", lambda m, x: m.cast(x, "bool"), [const([0.0, 1.5, -2.0], np.float32)]),
    ("slice", lambda m, x: m.slice(x, axes=[0, 2], starts=[1, -5], ends=[100, -1]), [f32(*S)]),
    ("slice_empty", lambda m, x: m.slice(x, [2], [3], [1]), [f32(*S)]),
    ("strided_slice", lambda m, x: m.strided_slice(x, [1, 2], [0, 1], [5, 7], [2, 3]), [f32(*S)]),
    ("strided_slice_neg", lambda m, x: m.strided_slice(x, [1, 2], [4, -1], [-10, 0], [-1, -2]), [f32(*S)]),
    ("unbind", lambda m, x: m.unbind(x, axis=1), [f32(*S)]),
    ("unbind_default", lambda m, x: m.unbind(x), [f32(*S)]),
    ("repeat_interleave_flat", lambda m, x: m.repeat_interleave(x, 2), [f32(3, 5)]),
    ("repeat_interleave_axis", lambda m, x: m.repeat_interleave(x, 3, axis=1), [f32(3, 5)]),
    ("repeat_interleave_tensor", lambda m, x, r: m.repeat_interleave(x, r, axis=0), [f32(3, 5), const([2, 0, 3])]),
]


@pytest.mark.parametrize("fn,inputs", [pytest.param(c[1], c[2], id=c[0]) for c in FORWARD])
def test_forward_matches_paddle(paddle, rng, fn, inputs):
    run_both(paddle, fn, [make(rng) for make in inputs])


def test_forward_cases_trace_under_jit(rng):
    traces_like_eager(FORWARD, rng, skip=("masked_select", "masked_select_bcast", "repeat_interleave_tensor"))


PUT_INDEX = np.array([[0, 0, 2, 1, 4, 4, 4]] * 3, np.int32).reshape(3, 1, 7)


@pytest.mark.parametrize("reduce", ["assign", "add", "mul", "multiply", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_put_along_axis_reductions(paddle, rng, reduce, include_self):
    index = np.stack([np.array([0, 2, 4, 1, 3, 3, 0])] * 3).reshape(3, 1, 7).astype(np.int32)
    if reduce == "assign":
        index = PUT_INDEX[:, :, :1].repeat(7, axis=2) * 0 + np.arange(7, dtype=np.int32) % 5
    run_both(paddle, lambda m, x, i, v: m.put_along_axis(x, i, v, 1, reduce=reduce, include_self=include_self),
             [rng.standard_normal(S).astype(np.float32), index, rng.standard_normal((3, 1, 7)).astype(np.float32)])


def test_put_along_axis_duplicates_and_broadcast(paddle, rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    dup = np.array([[1, 1, 1], [2, 1, 2]], np.int32)
    run_both(paddle, lambda m, a, i, v: m.put_along_axis(a, i, v, 0, reduce="add"),
             [x, dup, rng.standard_normal((2, 3)).astype(np.float32)])
    run_both(paddle, lambda m, a, i, v: m.put_along_axis(a, i, v, 0, reduce="mean"),
             [x, dup, rng.standard_normal((2, 3)).astype(np.float32)])
    run_both(paddle, lambda m, a, i: m.put_along_axis(a, i, 9.0, 1), [x, np.array([[2]], np.int32)])
    run_both(paddle, lambda m, a, i, v: m.put_along_axis(a, i, v, 1, broadcast=False),
             [x, np.array([[0], [2]], np.int32), np.array([[5.0, 7.0], [6.0, 8.0]], np.float32)])


PAD_CASES = [
    ("const_last_axis", (3, 5, 7), dict(pad=[1, 2])),
    ("const_two_axes", (3, 5, 7), dict(pad=[1, 0, 0, 2], value=1.5)),
    ("const_full_left", (3, 5, 7), dict(pad=[1, 0, 0, 2, 3, 1])),
    ("const_full_right", (3, 5, 7), dict(pad=[1, 0, 0, 2, 3, 1], pad_from_left_axis=False)),
    ("const_2d_full", (3, 5), dict(pad=[1, 2, 3, 4])),
    ("const_1d", (5,), dict(pad=[2, 1])),
    ("const_spatial_nchw", (2, 3, 4, 5), dict(pad=[1, 2, 0, 3])),
    ("const_spatial_nhwc", (2, 4, 5, 3), dict(pad=[1, 2, 0, 3], data_format="NHWC")),
    ("const_nlc", (2, 5, 3), dict(pad=[2, 1], data_format="NLC")),
    ("reflect_ncl", (2, 3, 6), dict(pad=[2, 3], mode="reflect")),
    ("reflect_nchw", (2, 3, 4, 5), dict(pad=[1, 2, 3, 1], mode="reflect")),
    ("replicate_nhwc", (2, 4, 5, 3), dict(pad=[1, 2, 0, 3], mode="replicate", data_format="NHWC")),
    ("circular_nchw", (1, 2, 3, 4), dict(pad=[1, 2, 2, 1], mode="circular")),
    ("replicate_ncdhw", (1, 2, 3, 4, 5), dict(pad=[1, 0, 2, 1, 0, 2], mode="replicate")),
    ("circular_ndhwc", (1, 3, 4, 5, 2), dict(pad=[1, 1, 0, 2, 2, 0], mode="circular", data_format="NDHWC")),
]


@pytest.mark.parametrize("shape,kwargs", [pytest.param(c[1], c[2], id=c[0]) for c in PAD_CASES])
def test_pad_matches_paddle(paddle, rng, shape, kwargs):
    x = rng.standard_normal(shape).astype(np.float32)
    run_both(paddle, lambda m, t: m.pad(t, **kwargs), [x],
             pd_fn=lambda p, t: p.nn.functional.pad(t, **kwargs))


GRADS = [
    ("reshape_transpose", lambda m, x: m.transpose(m.reshape(x, [7, 0, 3]), [1, 2, 0]), [f32(*S)], (0,)),
    ("concat", lambda m, a, b: m.concat([a, b], axis=1), [f32(3, 2, 7), f32(3, 5, 7)], (0, 1)),
    ("stack", lambda m, a, b: m.stack([a, b], axis=1), [f32(3, 5), f32(3, 5)], (0, 1)),
    ("split", lambda m, x: m.split(x, [2, -1], axis=2), [f32(*S)], (0,)),
    ("gather_dup", lambda m, x, i: m.gather(x, i, axis=1), [f32(*S), const([4, 0, 4, 4])], (0,)),
    ("gather_nd", lambda m, x, i: m.gather_nd(x, i), [f32(*S), const([[1, 2], [1, 2], [0, 0]])], (0,)),
    ("scatter_overwrite", lambda m, x, i, u: m.scatter(x, i, u), [f32(4, 3), const([3, 0]), f32(2, 3)], (0, 2)),
    ("scatter_accumulate", lambda m, x, i, u: m.scatter(x, i, u, overwrite=False),
     [f32(4, 3), const([1, 1, 2]), f32(3, 3)], (0, 2)),
    ("scatter_nd_add", lambda m, x, i, u: m.scatter_nd_add(x, i, u),
     [f32(4, 3), const([[1, 2], [1, 2], [3, 0]]), f32(3)], (0, 2)),
    ("index_select", lambda m, x, i: m.index_select(x, i, axis=2), [f32(*S), const([6, 6, 1])], (0,)),
    ("take_along_axis", lambda m, x, i: m.take_along_axis(x, i, 2), [f32(*S), const([[[0, 6, 6]]])], (0,)),
    ("put_along_axis_add", lambda m, x, i, v: m.put_along_axis(x, i, v, 1, reduce="add"),
     [f32(3, 4), const([[0, 2], [1, 1], [3, 0]]), f32(3, 2)], (0, 2)),
    ("where", lambda m, c, x, y: m.where(c, x, y), [mask(3, 5), f32(3, 5), f32(5)], (1, 2)),
    ("masked_fill", lambda m, x, k: m.masked_fill(x, k, 2.0), [f32(3, 5), mask(3, 5)], (0,)),
    ("tile_expand", lambda m, x: m.expand(m.tile(x, [1, 2]), [4, 3, 10]), [f32(3, 5)], (0,)),
    ("flip_roll", lambda m, x: m.roll(m.flip(x, 1), [2], axis=[2]), [f32(*S)], (0,)),
    ("strided_slice", lambda m, x: m.strided_slice(x, [1, 2], [4, -1], [-10, 0], [-1, -2]), [f32(*S)], (0,)),
    ("repeat_interleave", lambda m, x: m.repeat_interleave(x, 2, axis=1), [f32(3, 5)], (0,)),
    ("unbind", lambda m, x: m.unbind(x, axis=2), [f32(3, 5, 2)], (0,)),
    ("pad_reflect", lambda m, x: m.pad(x, [1, 2, 2, 1], mode="reflect"), [f32(2, 3, 4, 5)], (0,),
     lambda p, x: p.nn.functional.pad(x, [1, 2, 2, 1], mode="reflect")),
    ("pad_const", lambda m, x: m.pad(x, [1, 0, 2, 3], value=3.0), [f32(3, 5)], (0,),
     lambda p, x: p.nn.functional.pad(x, [1, 0, 2, 3], value=3.0)),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c[0]) for c in GRADS])
def test_grads_match_paddle(paddle, rng, case):
    _, fn, inputs, wrt, *pd_fn = case
    grads_match(paddle, fn, [make(rng) for make in inputs], wrt, rng, pd_fn=pd_fn[0] if pd_fn else None)


def test_shape_ops_under_jit(rng):
    x = rng.standard_normal(S).astype(np.float32)

    @jax.jit
    def f(t):
        parts = pdx.split(pdx.transpose(t, [1, 0, 2]), [2, -1])
        return pdx.concat([pdx.flip(parts[1], 0), parts[0]], axis=0)

    np.testing.assert_allclose(f(x), np.concatenate([x.transpose(1, 0, 2)[2:][::-1], x.transpose(1, 0, 2)[:2]]))
    # masked_select's jit-friendly alternative works under jit
    np.testing.assert_allclose(jax.jit(lambda t: pdx.where(t > 0, t, 0.0))(x), np.where(x > 0, x, 0))


def test_masked_select_is_eager_only(rng):
    with pytest.raises(RuntimeError, match=r"masked_select is eager only.*pdx\.where\(mask, x, 0\)"):
        jax.jit(pdx.masked_select)(jnp.ones(3), jnp.asarray([True, False, True]))
    # the gradient w.r.t. x works eagerly because the mask is concrete
    g = jax.grad(lambda t: pdx.masked_select(t, jnp.asarray([True, False, True])).sum())(jnp.ones(3))
    np.testing.assert_allclose(g, [1.0, 0.0, 1.0])


def test_repeat_interleave_tensor_repeats_need_concrete_values():
    with pytest.raises(TypeError, match=r"pdx\.repeat_interleave: a traced `repeats`"):
        jax.jit(lambda r: pdx.repeat_interleave(jnp.ones(3), r))(jnp.asarray([1, 2, 3]))


@pytest.mark.parametrize("call,match", [
    (lambda: pdx.reshape(jnp.ones((2, 3)), [4, 2]),
     r"pdx\.reshape: cannot reshape x\.shape=\(2, 3\) \(6 elements\) to shape=\[4, 2\] \(8 elements\)"),
    (lambda: pdx.reshape(jnp.ones((2, 3)), [-1, -1]), r"pdx\.reshape: .*more than one -1"),
    (lambda: pdx.reshape(jnp.ones((2, 3)), [4, -1]), r"pdx\.reshape: cannot reshape x\.shape=\(2, 3\)"),
    (lambda: pdx.reshape(jnp.ones((2, 3)), [1, 2, 0]), r"pdx\.reshape: .*has 0 at position 2"),
    (lambda: pdx.concat([jnp.ones((2, 3)), jnp.ones((2, 3, 1))]),
     r"pdx\.concat: all inputs must have the same rank; x\[0\]\.shape=\(2, 3\) but x\[1\]\.shape=\(2, 3, 1\)"),
    (lambda: pdx.concat([jnp.ones((2, 3)), jnp.ones((2, 4))], axis=0), r"pdx\.concat: .*differ outside axis=0"),
    (lambda: pdx.concat([jnp.ones((2, 3))], axis=2), r"pdx\.concat: `axis`=2 is out of range"),
    (lambda: pdx.stack([jnp.ones(2), jnp.ones(3)]), r"pdx\.stack: all inputs must have the same shape"),
    (lambda: pdx.transpose(jnp.ones((2, 3)), [0, 0]), r"pdx\.transpose: `perm`=\[0, 0\] is not a permutation"),
    (lambda: pdx.transpose(jnp.ones((2, 3)), [0]), r"pdx\.transpose: `perm`=\[0\] has 1 entries"),
    (lambda: pdx.split(jnp.ones(7), 3), r"pdx\.split: x\.shape\[0\]=7 cannot be split evenly"),
    (lambda: pdx.split(jnp.ones(7), [2, 2]), r"pdx\.split: sections \[2, 2\] sum to 4"),
    (lambda: pdx.chunk(jnp.ones(7), 2), r"pdx\.chunk: x\.shape\[0\]=7"),
    (lambda: pdx.unsqueeze(jnp.ones((2, 3)), [3, 0]), r"pdx\.unsqueeze: `axis`=3 is out of range"),
    (lambda: pdx.flatten(jnp.ones((2, 3, 4)), 2, 1), r"pdx\.flatten: `start_axis`=2 comes after"),
    (lambda: pdx.gather(jnp.ones((2, 3)), jnp.ones((2, 2), jnp.int32)), r"pdx\.gather: `index` must be 0-D or 1-D"),
    (lambda: pdx.gather_nd(jnp.ones((2, 3)), jnp.ones((2, 3), jnp.int32)), r"pdx\.gather_nd: index\.shape\[-1\]=3"),
    (lambda: pdx.scatter(jnp.ones((4, 3)), jnp.asarray([0, 1]), jnp.ones((2, 2))),
     r"pdx\.scatter: updates\.shape=\(2, 2\) must be \(2, 3\)"),
    (lambda: pdx.take_along_axis(jnp.ones((2, 3)), jnp.zeros(2, jnp.int32), 0), r"pdx\.take_along_axis: .*same rank"),
    (lambda: pdx.put_along_axis(jnp.ones((2, 3)), jnp.zeros((1, 1), jnp.int32), 1.0, 0, reduce="max"),
     r"pdx\.put_along_axis: `reduce`='max'"),
    (lambda: pdx.where(jnp.asarray([True]), jnp.ones(1)), r"pdx\.where: pass both `x` and `y`"),
    (lambda: pdx.masked_fill(jnp.ones((2, 3)), jnp.ones(2, bool), 0.0),
     r"pdx\.masked_fill: x\.shape=\(2, 3\) and mask"),
    (lambda: pdx.expand(jnp.ones((2, 3)), [2, 4]), r"pdx\.expand: cannot expand x\.shape=\(2, 3\)"),
    (lambda: pdx.expand(jnp.ones(3), [-1, 3]), r"pdx\.expand: .*-1 \(keep the dim\) is not allowed"),
    (lambda: pdx.roll(jnp.ones(3), [1, 2]), r"pdx\.roll: `shifts`=\[1, 2\] must be a single int"),
    (lambda: pdx.strided_slice(jnp.ones(3), [0], [0], [3], [0]), r"pdx\.strided_slice: `strides` must be non-zero"),
    (lambda: pdx.slice(jnp.ones(3), [0, 1], [0], [3]), r"pdx\.slice: `axes`, `starts`, `ends` must have"),
    (lambda: pdx.repeat_interleave(jnp.ones(3), jnp.asarray([1, 2])), r"pdx\.repeat_interleave: `repeats` has 2"),
    (lambda: pdx.pad(jnp.ones((2, 3)), [1, 1], mode="reflect"), r"pdx\.pad: mode='reflect'.*3-D, 4-D or 5-D"),
    (lambda: pdx.pad(jnp.ones((1, 2, 3)), [3, 0], mode="reflect"), r"pdx\.pad: mode='reflect' needs padding <"),
    (lambda: pdx.pad(jnp.ones((1, 2, 3)), [1]), r"pdx\.pad: `pad`=\[1\] must have an even length"),
    (lambda: pdx.pad(jnp.ones((1, 2, 3, 4)), [1, 1, 1, 1], mode="replicate", data_format="NCL"),
     r"pdx\.pad: `data_format`='NCL' does not fit a 4-D x"),
    (lambda: pdx.pad(jnp.ones((1, 2, 3)), [1, 1], mode="edge"), r"pdx\.pad: `mode`='edge' is not supported"),
])
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_argument_types_name_the_op():
    with pytest.raises(TypeError, match=r"pdx\.concat: `x` must be a list or tuple of tensors"):
        pdx.concat(jnp.ones((2, 3)))
    with pytest.raises(TypeError, match=r"pdx\.gather: `index` must be an integer tensor"):
        pdx.gather(jnp.ones(3), jnp.ones(2))
    with pytest.raises(TypeError, match=r"pdx\.masked_fill: `mask` must be a bool tensor"):
        pdx.masked_fill(jnp.ones(3), jnp.ones(3), 0.0)
    with pytest.raises(TypeError, match=r"pdx\.cast: unknown dtype"):
        pdx.cast(jnp.ones(3), "floaty")
