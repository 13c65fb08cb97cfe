"""pdx linear algebra vs the installed paddle (`paddle.linalg`): values, reconstructions, gradients."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ops_testutil import assert_matches, grads_match, run_both, traces_like_eager

import pdx


def f32(*shape):
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


def spd(*batch_and_n):
    """Well-conditioned symmetric positive-definite matrices."""
    *batch, n = batch_and_n

    def make(rng):
        a = rng.standard_normal((*batch, n, n)).astype(np.float32)
        return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=np.float32)).astype(np.float32)
    return make


def well_conditioned(*batch_and_n):
    *batch, n = batch_and_n
    return lambda rng: (rng.standard_normal((*batch, n, n)) + 3 * np.eye(n)).astype(np.float32)


NORMS = [  # (p, axis, keepdim)
    (None, None, False), ("fro", None, True), (2, None, False), (1, None, False), (math.inf, None, True),
    (-math.inf, None, False), (0, None, False), (3, None, False), ("nuc", None, False), ("nuc", None, True),
    (None, 1, True), (2, -1, False), (1, 0, False), (0.5, 1, False), (math.inf, 1, True), (-math.inf, 0, False),
    ("fro", [1], False), ("fro", [0, 1], False), ("fro", [0, 1], True), ("nuc", [0, 1], False),
    ("nuc", [1, 0], True), (1, [0, 1], False), (1, [0, 1], True), (-1, [1, 0], False), (2, [0, 1], False),
    (2, [0, 1], True), (-2, [0, 1], False), (math.inf, [0, 1], False), (-math.inf, [0, 1], True),
]


@pytest.mark.parametrize("p,axis,keepdim", NORMS, ids=[f"p={p}-axis={a}-keepdim={k}" for p, a, k in NORMS])
def test_norm_2d_matches_paddle(paddle, rng, p, axis, keepdim):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    run_both(paddle, lambda m, t: m.norm(t, p=p, axis=axis, keepdim=keepdim), [x],
             pd_fn=lambda pd, t: pd.linalg.norm(t, p=p, axis=axis, keepdim=keepdim), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("p,axis", [(None, None), (2, [0, 1, 2]), (3, [0, 2, 1]), ("fro", [1, 2]),
                                    ("nuc", [2, 0]), (2, [-1, -2]), (1, [0, 2]), (math.inf, [0, 1, 2])])
def test_norm_3d_matches_paddle(paddle, rng, p, axis):
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    run_both(paddle, lambda m, t: m.norm(t, p=p, axis=axis), [x],
             pd_fn=lambda pd, t: pd.linalg.norm(t, p=p, axis=axis), rtol=1e-4, atol=1e-4)


def test_top_level_paddle_norm_agrees(paddle, rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    run_both(paddle, lambda m, t: m.norm(t, p=1, axis=1), [x], rtol=1e-5, atol=1e-5)


def _linalg(name):
    return lambda pd, *args: getattr(pd.linalg, name)(*args)


LINALG = [
    ("inverse", lambda m, x: m.inverse(x), [well_conditioned(3, 4)], lambda pd, x: pd.inverse(x)),
    ("cholesky", lambda m, x: m.cholesky(x), [spd(2, 4)], lambda pd, x: pd.linalg.cholesky(x)),
    ("cholesky_upper", lambda m, x: m.cholesky(x, upper=True), [spd(5)],
     lambda pd, x: pd.linalg.cholesky(x, upper=True)),
    ("det", lambda m, x: m.det(x), [well_conditioned(3, 4)], _linalg("det")),
    ("solve", lambda m, x, y: m.solve(x, y), [well_conditioned(2, 4), f32(2, 4, 3)], _linalg("solve")),
    ("solve_vector", lambda m, x, y: m.solve(x, y), [well_conditioned(4), f32(4)], _linalg("solve")),
    ("solve_right", lambda m, x, y: m.solve(x, y, left=False), [well_conditioned(4), f32(3, 4)],
     lambda pd, x, y: pd.linalg.solve(x, y, left=False)),
    ("pinv", lambda m, x: m.pinv(x), [f32(5, 3)], _linalg("pinv")),
    ("pinv_batch", lambda m, x: m.pinv(x, rcond=1e-6), [f32(2, 3, 5)], lambda pd, x: pd.linalg.pinv(x, rcond=1e-6)),
    ("pinv_hermitian", lambda m, x: m.pinv(x, hermitian=True), [spd(4)],
     lambda pd, x: pd.linalg.pinv(x, hermitian=True)),
    ("matrix_power_3", lambda m, x: m.matrix_power(x, 3), [f32(2, 4, 4)], lambda pd, x: pd.linalg.matrix_power(x, 3)),
    ("matrix_power_0", lambda m, x: m.matrix_power(x, 0), [f32(4, 4)], lambda pd, x: pd.linalg.matrix_power(x, 0)),
    ("matrix_power_neg", lambda m, x: m.matrix_power(x, -2), [well_conditioned(3)],
     lambda pd, x: pd.linalg.matrix_power(x, -2)),
]


@pytest.mark.parametrize("fn,inputs,pd_fn", [pytest.param(c[1], c[2], c[3], id=c[0]) for c in LINALG])
def test_linalg_matches_paddle(paddle, rng, fn, inputs, pd_fn):
    run_both(paddle, fn, [make(rng) for make in inputs], pd_fn=pd_fn, rtol=1e-4, atol=1e-4)


def test_linalg_cases_trace_under_jit(rng):
    traces_like_eager(LINALG, rng)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_singular_values_and_reconstruction(paddle, rng, shape, full_matrices):
    x = rng.standard_normal(shape).astype(np.float32)
    u, s, vh = pdx.svd(jnp.asarray(x), full_matrices=full_matrices)
    pu, ps, pvh = paddle.linalg.svd(paddle.to_tensor(x), full_matrices=full_matrices)
    assert (u.shape, s.shape, vh.shape) == (tuple(pu.shape), tuple(ps.shape), tuple(pvh.shape))
    assert_matches(s, ps, rtol=1e-4, atol=1e-4)
    k = s.shape[-1]
    recon = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(recon, x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] +
                               (u.shape[-1], u.shape[-1])), atol=1e-4)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_shapes_and_reconstruction(paddle, rng, shape, mode):
    x = rng.standard_normal(shape).astype(np.float32)
    ours = pdx.qr(jnp.asarray(x), mode=mode)
    theirs = paddle.linalg.qr(paddle.to_tensor(x), mode=mode)
    if mode == "r":
        assert ours.shape == tuple(theirs.shape)
        # R is unique up to the signs of its rows
        np.testing.assert_allclose(np.abs(ours), np.abs(theirs.numpy()), rtol=1e-4, atol=1e-4)
        return
    q, r = ours
    assert (q.shape, r.shape) == (tuple(theirs[0].shape), tuple(theirs[1].shape))
    np.testing.assert_allclose(q @ r, x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.tril(np.asarray(r), -1), 0, atol=1e-6)


GRADS = [
    ("norm_fro", lambda m, x: m.norm(x), [f32(3, 5)], (0,), lambda pd, x: pd.linalg.norm(x)),
    ("norm_p3_axis", lambda m, x: m.norm(x, p=3, axis=1), [f32(3, 5)], (0,), lambda pd, x: pd.linalg.norm(x, 3, 1)),
    ("norm_inf_matrix", lambda m, x: m.norm(x, p=math.inf, axis=[0, 1]), [f32(3, 5)], (0,),
     lambda pd, x: pd.linalg.norm(x, p=math.inf, axis=[0, 1])),
    ("norm_nuc", lambda m, x: m.norm(x, p="nuc", axis=[1, 2]), [f32(2, 3, 4)], (0,),
     lambda pd, x: pd.linalg.norm(x, p="nuc", axis=[1, 2])),
    ("inverse", lambda m, x: m.inverse(x), [well_conditioned(2, 3)], (0,), lambda pd, x: pd.inverse(x)),
    ("det", lambda m, x: m.det(x), [well_conditioned(3)], (0,), _linalg("det")),
    ("solve", lambda m, x, y: m.solve(x, y), [well_conditioned(3), f32(3, 2)], (0, 1), _linalg("solve")),
    ("cholesky", lambda m, x: m.cholesky(x), [spd(3)], (0,), _linalg("cholesky")),
]


@pytest.mark.parametrize("fn,inputs,wrt,pd_fn", [pytest.param(*c[1:], id=c[0]) for c in GRADS])
def test_grads_match_paddle(paddle, rng, fn, inputs, wrt, pd_fn):
    grads_match(paddle, fn, [make(rng) for make in inputs], wrt, rng, pd_fn=pd_fn, rtol=2e-4, atol=2e-4)


def test_linalg_under_jit(rng):
    a = well_conditioned(2, 3)(rng)
    out = jax.jit(lambda t: pdx.matmul(pdx.inverse(t), t) + pdx.norm(t, axis=[1, 2], keepdim=True))(a)
    np.testing.assert_allclose(out, np.eye(3) + np.linalg.norm(a, axis=(1, 2), keepdims=True), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("call,match", [
    (lambda: pdx.norm(jnp.ones((2, 3)), p=3, axis=[0, 1]), r"pdx\.norm: `p`=3 is not a matrix norm"),
    (lambda: pdx.norm(jnp.ones((2, 3)), p="nuc", axis=1), r"pdx\.norm: p='nuc' needs exactly two axes"),
    (lambda: pdx.norm(jnp.ones(3), p="nuc"), r"pdx\.norm: p='nuc' with axis=None needs a 2-D x"),
    (lambda: pdx.norm(jnp.ones((2, 3)), p="bogus"), r"pdx\.norm: `p`='bogus' is not supported"),
    (lambda: pdx.norm(jnp.ones((2, 3)), axis=[0, 0]), r"pdx\.norm: `axis`=\[0, 0\] must list distinct axes"),
    (lambda: pdx.inverse(jnp.ones((2, 3))), r"pdx\.inverse: `x` must be a square matrix.*x\.shape=\(2, 3\)"),
    (lambda: pdx.det(jnp.ones(3)), r"pdx\.det: `x` must be a square matrix"),
    (lambda: pdx.solve(jnp.eye(3), jnp.ones((4, 2))), r"pdx\.solve: x\.shape=\(3, 3\) and y\.shape=\(4, 2\)"),
    (lambda: pdx.qr(jnp.ones((2, 3)), mode="full"), r"pdx\.qr: `mode`='full'"),
    (lambda: pdx.svd(jnp.ones(3)), r"pdx\.svd: `x` must have rank >= 2"),
    (lambda: pdx.matrix_power(jnp.ones((2, 3)), 2), r"pdx\.matrix_power: `x` must be a square matrix"),
])
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
