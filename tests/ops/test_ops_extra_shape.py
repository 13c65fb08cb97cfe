"""Stacking, splitting, axis moves, views and products vs the installed paddle."""

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


FORWARD = [
    ("cat", lambda m, x, y: m.cat([x, y], axis=-1), [f32(2, 3), f32(2, 4)]),
    ("concatenate", lambda m, x, y: m.concatenate([x, y]), [f32(2, 3), f32(1, 3)]),
    ("hstack_1d", lambda m, x, y: m.hstack([x, y]), [f32(3), f32(2)]),
    ("hstack_2d", lambda m, x, y: m.hstack([x, y]), [f32(2, 3), f32(2, 1)]),
    ("vstack", lambda m, x, y: m.vstack([x, y]), [f32(3), f32(2, 3)]),
    ("row_stack", lambda m, x, y: m.row_stack([x, y]), [i32(3), i32(3)]),
    ("dstack", lambda m, x, y: m.dstack([x, y]), [f32(2, 3), f32(2, 3, 2)]),
    ("dstack_1d", lambda m, x, y: m.dstack([x, y]), [f32(3), f32(3)]),
    ("column_stack", lambda m, x, y: m.column_stack([x, y]), [f32(3), f32(3, 2)]),
    ("tensor_split_n", lambda m, x: m.tensor_split(x, 3, axis=1), [f32(2, 7)]),
    ("tensor_split_idx", lambda m, x: m.tensor_split(x, [1, 4]), [f32(6, 2)]),
    ("tensor_split_neg", lambda m, x: m.tensor_split(x, [2, -1], axis=-1), [f32(2, 6)]),
    ("hsplit", lambda m, x: m.hsplit(x, 2), [f32(3, 4)]),
    ("hsplit_1d", lambda m, x: m.hsplit(x, [2]), [f32(5)]),
    ("vsplit", lambda m, x: m.vsplit(x, [1, 2]), [f32(4, 3)]),
    ("dsplit", lambda m, x: m.dsplit(x, 2), [f32(2, 3, 4)]),
    ("unstack", lambda m, x: m.unstack(x, axis=1), [f32(2, 3, 4)]),
    ("permute", lambda m, x: m.permute(x, [2, 0, 1]), [f32(2, 3, 4)]),
    ("swapaxes_pair", lambda m, x: m.swapaxes(x, 0, 2), [f32(2, 3, 4)]),
    ("swapaxes_perm", lambda m, x: m.swapaxes(x, [1, 0, 2]), [f32(2, 3, 4)]),
    ("swapdims", lambda m, x: m.swapdims(x, -1, 0), [f32(2, 3, 4)]),
    ("moveaxis", lambda m, x: m.moveaxis(x, [0, 1], [-1, 0]), [f32(2, 3, 4)]),
    ("t", lambda m, x: m.t(x), [f32(3, 5)]),
    ("t_1d", lambda m, x: m.t(x), [f32(3)]),
    ("matrix_transpose", lambda m, x: m.matrix_transpose(x), [f32(2, 3, 4)]),
    ("ravel", lambda m, x: m.ravel(x), [f32(2, 3, 4)]),
    ("reverse", lambda m, x: m.reverse(x, [0, 2]), [f32(2, 3, 4)]),
    ("rot90", lambda m, x: m.rot90(x), [f32(3, 4)]),
    ("rot90_k", lambda m, x: m.rot90(x, k=-3, axes=[1, 2]), [f32(2, 3, 4)]),
    ("rot90_k2", lambda m, x: m.rot90(x, k=2, axes=[-1, 0]), [f32(2, 3, 4)]),
    ("unflatten", lambda m, x: m.unflatten(x, -1, [2, -1]), [f32(3, 6)]),
    ("view_shape", lambda m, x: m.view(x, [4, -1]), [f32(2, 3, 4)]),
    ("view_as", lambda m, x, y: m.view_as(x, y), [f32(2, 6), f32(3, 4)]),
    ("narrow", lambda m, x: m.narrow(x, 1, -3, 2), [f32(2, 5)]),
    ("atleast_1d", lambda m, x: m.atleast_1d(x), [const(3.0)]),
    ("atleast_2d_many", lambda m, x, y: m.atleast_2d(x, y), [f32(3), f32(2, 2)]),
    ("atleast_3d", lambda m, x: m.atleast_3d(x), [f32(3, 4)]),
    ("atleast_3d_1d", lambda m, x: m.atleast_3d(x), [f32(4)]),
    ("broadcast_tensors", lambda m, x, y: m.broadcast_tensors([x, y]), [f32(2, 1, 4), f32(3, 1)]),
    ("crop", lambda m, x: m.crop(x, shape=[2, -1], offsets=[1, 1]), [f32(4, 5)]),
    ("unfold", lambda m, x: m.unfold(x, 1, 3, 2), [f32(2, 7, 3)]),
    ("as_strided", lambda m, x: m.as_strided(x, [3, 2], [2, 1], 8), [f32(12)]),
    ("as_strided_2d", lambda m, x: m.as_strided(x, [2, 3], [1, 4]), [f32(3, 4)]),
    ("take_along_dim", lambda m, x, i: m.take_along_dim(x, i, 1), [f32(3, 4), i32(3, 2, low=0, high=4)]),
    # products and diagonals
    ("tensordot_int", lambda m, x, y: m.tensordot(x, y, axes=1), [f32(2, 3), f32(3, 4)]),
    ("tensordot_lists", lambda m, x, y: m.tensordot(x, y, axes=[[0, 2], [2, 0]]), [f32(2, 3, 4), f32(4, 5, 2)]),
    ("inner", lambda m, x, y: m.inner(x, y), [f32(2, 3, 4), f32(5, 4)]),
    ("vecdot", lambda m, x, y: m.vecdot(x, y), [f32(2, 3, 4), f32(3, 4)]),
    ("vecdot_axis", lambda m, x, y: m.vecdot(x, y, axis=0), [f32(3, 4), f32(3, 4)]),
    ("addmm", lambda m, i, x, y: m.addmm(i, x, y, beta=0.5, alpha=2.0), [f32(3), f32(2, 4), f32(4, 3)]),
    ("baddbmm", lambda m, i, x, y: m.baddbmm(i, x, y, 0.3, 1.5), [f32(2, 3, 5), f32(2, 3, 4), f32(2, 4, 5)]),
    ("mv", lambda m, x, v: m.mv(x, v), [f32(3, 4), f32(4)]),
    ("ger", lambda m, x, y: m.ger(x, y), [f32(3), f32(4)]),
    ("cross_default", lambda m, x, y: m.cross(x, y), [f32(2, 3), f32(2, 3)]),
    ("cross_axis", lambda m, x, y: m.cross(x, y, axis=-1), [f32(3, 4, 3), f32(3, 4, 3)]),
    ("diagonal", lambda m, x: m.diagonal(x), [f32(3, 4)]),
    ("diagonal_args", lambda m, x: m.diagonal(x, offset=-1, axis1=2, axis2=0), [f32(4, 2, 3)]),
    ("trace", lambda m, x: m.trace(x, offset=1), [f32(3, 4)]),
    ("trace_axes", lambda m, x: m.trace(x, 0, 1, 2), [f32(2, 3, 3)]),
    ("diagflat", lambda m, x: m.diagflat(x, offset=1), [f32(2, 2)]),
    ("diag_embed", lambda m, x: m.diag_embed(x), [f32(2, 3)]),
    ("diag_embed_args", lambda m, x: m.diag_embed(x, offset=-1, dim1=0, dim2=2), [f32(2, 3)]),
    ("cdist", lambda m, x, y: m.cdist(x, y), [f32(2, 3, 4), f32(2, 5, 4)]),
    ("cdist_p1", lambda m, x, y: m.cdist(x, y, p=1.0), [f32(3, 4), f32(5, 4)]),
    ("cdist_pinf", lambda m, x, y: m.cdist(x, y, p=float("inf")), [f32(3, 4), f32(5, 4)]),
    ("cdist_p3", lambda m, x, y: m.cdist(x, y, p=3.0), [f32(3, 4), f32(5, 4)]),
    ("dist", lambda m, x, y: m.dist(x, y), [f32(3, 4), f32(4)]),
    ("dist_p0", lambda m, x, y: m.dist(x, y, p=0), [const([1.0, 2, 3]), const([1.0, 0, 3])]),
    ("dist_pinf", lambda m, x, y: m.dist(x, y, p=float("inf")), [f32(3, 4), f32(3, 4)]),
    ("pdist", lambda m, x: m.pdist(x), [f32(5, 3)]),
    ("renorm", lambda m, x: m.renorm(x, 2.0, 1, 1.5), [f32(3, 4, 2)]),
    ("vander", lambda m, x: m.vander(x), [f32(4)]),
    ("vander_n_inc", lambda m, x: m.vander(x, 3, True), [i32(4, low=-3, high=4)]),
    ("cartesian_prod", lambda m, x, y: m.cartesian_prod([x, y]), [i32(3), i32(2)]),
    ("combinations", lambda m, x: m.combinations(x), [f32(4)]),
    ("combinations_r3_rep", lambda m, x: m.combinations(x, 3, True), [i32(3)]),
    ("combinations_r0", lambda m, x: m.combinations(x, 0), [f32(3)]),
    ("combinations_r_too_big", lambda m, x: m.combinations(x, 4), [f32(3)]),
    ("block_diag", lambda m, x, y, z: m.block_diag([x, y, z]), [f32(2, 3), f32(1, 1), f32(2)]),
    ("tril_indices", lambda m: m.tril_indices(4, 3, -1), []),
    ("triu_indices", lambda m: m.triu_indices(3, 5, 1), []),
    ("eigvalsh", lambda m, x: m.eigvalsh(x @ x.transpose([0, 2, 1])), [f32(2, 3, 3)]),
]

JIT_SKIP = {"tril_indices", "triu_indices"}


def test_forward_matches_paddle(paddle, rng):
    check_forward(paddle, rng, FORWARD, eager=JIT_SKIP)


GRADS = [
    ("hstack", lambda m, x, y: m.hstack([x, y]), [f32(2, 3), f32(2, 1)], (0, 1)),
    ("tensor_split", lambda m, x: m.tensor_split(x, 3, axis=1)[1], [f32(2, 7)], (0,)),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, -1), [f32(2, 3, 4)], (0,)),
    ("rot90", lambda m, x: m.rot90(x, 3), [f32(3, 4)], (0,)),
    # non-overlapping windows: paddle 3.3's gradient of overlapping windows counts each element once
    ("unfold", lambda m, x: m.unfold(x, 0, 2, 2), [f32(5, 2)], (0,)),
    ("tensordot", lambda m, x, y: m.tensordot(x, y, axes=[[1], [0]]), [f32(2, 3), f32(3, 4)], (0, 1)),
    ("addmm", lambda m, i, x, y: m.addmm(i, x, y, 0.5, 2.0), [f32(2, 3), f32(2, 4), f32(4, 3)], (0, 1, 2)),
    ("cross", lambda m, x, y: m.cross(x, y), [f32(2, 3), f32(2, 3)], (0, 1)),
    ("trace", lambda m, x: m.trace(x), [f32(3, 3)], (0,)),
    ("cdist", lambda m, x, y: m.cdist(x, y), [f32(3, 4), f32(5, 4)], (0, 1)),
    ("dist", lambda m, x, y: m.dist(x, y, p=3), [f32(3, 4), f32(3, 4)], (0, 1)),
    ("renorm", lambda m, x: m.renorm(x, 2.0, 0, 1.0), [f32(3, 4)], (0,)),
]


def test_grads_match_paddle(paddle, rng):
    check_grads(paddle, rng, GRADS)


def test_view_dtype_and_broadcast_shapes(paddle):
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(pdx.view(jnp.asarray(x), "int32")),
                                  paddle.view(paddle.to_tensor(x), "int32").numpy())
    np.testing.assert_array_equal(np.asarray(pdx.view(jnp.asarray(x), "uint8")),
                                  paddle.view(paddle.to_tensor(x), "uint8").numpy())
    assert pdx.broadcast_shape([2, 1, 3], [4, 1]) == paddle.broadcast_shape([2, 1, 3], [4, 1])
    assert pdx.broadcast_shapes([2, 1], [3], [1, 1]) == list(paddle.broadcast_shapes([2, 1], [3], [1, 1]))


def test_bad_input_names_the_argument():
    x = jnp.ones([2, 3])
    with pytest.raises(ValueError, match="num_or_indices"):
        pdx.tensor_split(x, 0)
    with pytest.raises(ValueError, match="rank >= 3"):
        pdx.dsplit(x, 2)
    with pytest.raises(ValueError, match="`input` must have rank <= 2"):
        pdx.t(jnp.ones([2, 2, 2]))
    with pytest.raises(ValueError, match="axes"):
        pdx.rot90(x, axes=[0, 0])
    with pytest.raises(ValueError, match="`shape`"):
        pdx.unflatten(x, 1, [2, 2])
    with pytest.raises(ValueError, match="start=2, length=3"):
        pdx.narrow(x, 1, 2, 3)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        pdx.broadcast_shape([2, 3], [4])
    with pytest.raises(ValueError, match="must be 3"):
        pdx.cross(x, x, axis=0)
    with pytest.raises(ValueError, match="do not multiply"):
        pdx.mv(x, jnp.ones([2]))
    with pytest.raises(ValueError, match="`source`"):
        pdx.moveaxis(x, [0, 1], [0])
    with pytest.raises(ValueError, match="reach outside"):
        pdx.as_strided(x, [3, 3], [3, 1])
    with pytest.raises(ValueError, match="no dim of size 3"):
        pdx.cross(jnp.ones([2, 2]), jnp.ones([2, 2]))
