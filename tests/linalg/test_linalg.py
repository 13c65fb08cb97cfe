"""pdx.linalg against the installed paddle.linalg: values, reconstructions, gradients, errors.

Unique results (norms, inverses, solves, eigen/singular values, ...) are compared value by
value. Factorizations that are not unique (eigenvectors up to sign/phase, Q/R signs, the
randomized low-rank SVD) are checked by reconstructing the input and by comparing the
sign-free parts with Paddle.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import pdx
import pdx.linalg as L


def _np(v):
    if isinstance(v, (jax.Array, np.ndarray, np.generic, int, float)):
        return np.asarray(v)
    return np.asarray(v.numpy())


def close(ours, theirs, tol=1e-5, what=""):
    if isinstance(ours, (list, tuple)):
        assert len(ours) == len(theirs), what
        for i, (a, b) in enumerate(zip(ours, theirs)):
            close(a, b, tol, f"{what}[{i}]")
        return
    a, b = _np(ours), _np(theirs)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs paddle {b.shape}"
    if not np.issubdtype(a.dtype, np.inexact):
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    np.testing.assert_allclose(a, b.astype(a.dtype), rtol=tol, atol=tol, err_msg=what)


def rnd(rng, *shape, dtype="float32"):
    x = rng.standard_normal(shape)
    if dtype == "complex64":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def spd(rng, *shape, dtype="float32"):
    a = rnd(rng, *shape, dtype=dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def wellcond(rng, *shape, dtype="float32"):
    return (rnd(rng, *shape, dtype=dtype) + 3 * np.eye(shape[-1])).astype(dtype)


def run(fn, *arrays):
    """`fn` compiled once, its outputs as numpy (eager calls would compile every primitive)."""
    return jax.tree.map(np.asarray, jax.jit(fn)(*arrays))


def both(paddle, fn, arrays, pd_fn=None, tol=1e-5, what="", jit=True):
    # One compiled program per case (eager would compile every primitive); it also checks tracing.
    ours = (jax.jit(lambda *a: fn(L, *a)) if jit else (lambda *a: fn(L, *a)))(*[jnp.asarray(a) for a in arrays])
    theirs = (pd_fn or fn)(paddle.linalg, *[paddle.to_tensor(a) for a in arrays])
    close(ours, theirs, tol, what)
    return ours


def test_norms_match_paddle(paddle, rng):
    x3 = rnd(rng, 2, 5, 3)
    c3 = rnd(rng, 2, 3, 4, dtype="complex64")
    cases = [  # (fn, input)
        (lambda m, t: m.vector_norm(t), x3),
        (lambda m, t: m.vector_norm(t, p=1, axis=-1, keepdim=True), x3),
        (lambda m, t: m.vector_norm(t, p=math.inf, axis=[0, 2]), x3),
        (lambda m, t: m.vector_norm(t, p=-math.inf, axis=1), x3),
        (lambda m, t: m.vector_norm(t, p=0, axis=(0, -1)), x3),
        (lambda m, t: m.vector_norm(t, p=3.5, axis=-2), x3),
        (lambda m, t: m.vector_norm(t, p=2, axis=-1), c3),
        (lambda m, t: m.matrix_norm(t), x3),
        (lambda m, t: m.matrix_norm(t, p="nuc", keepdim=True), x3),
        (lambda m, t: m.matrix_norm(t, p=2, axis=[0, 2]), x3),
        (lambda m, t: m.matrix_norm(t, p=-2), x3),
        (lambda m, t: m.matrix_norm(t, p=1, axis=[-1, -2]), x3),
        (lambda m, t: m.matrix_norm(t, p=-math.inf), x3),
        (lambda m, t: m.norm(t, p="fro", axis=[-2, -1]), x3),
        (lambda m, t: m.norm(t, p=2, axis=-1, keepdim=True), x3),
    ]
    for i, (fn, x) in enumerate(cases):
        both(paddle, fn, [x], tol=1e-5, what=f"norm case {i}")
    # Paddle's complex Frobenius norm sums x*x instead of |x|^2 (a complex result); pdx gives the
    # real norm, so compare with numpy.
    close(L.matrix_norm(c3), np.linalg.norm(c3, axis=(-2, -1)), 1e-5, "complex fro")
    # p=0 of a complex input counts non-zeros as a real number, in pdx.norm and pdx.linalg alike.
    c0 = np.where(rng.random(c3.shape) < 0.5, 0, c3).astype(np.complex64)
    cases = [(lambda t: L.vector_norm(t, p=0, axis=(0, -1)), np.count_nonzero(c0, axis=(0, -1))),
             (lambda t: pdx.norm(t, p=0), np.count_nonzero(c0)), (lambda t: pdx.norm(t, p=0, axis=1),
                                                                   np.count_nonzero(c0, axis=1))]
    for fn, want in cases:
        got = np.asarray(fn(jnp.asarray(c0)))
        assert got.dtype == np.float32, got.dtype
        close(got, np.asarray(want, np.float32), 0, "complex p=0")


def test_values_match_paddle(paddle, rng):
    """Functions with unique results, on batched, odd-shaped, float32 and complex64 inputs."""
    cases = [
        ("inv", lambda m, t: m.inv(t), [wellcond(rng, 3, 3)]),
        ("inv batch", lambda m, t: m.inv(t), [wellcond(rng, 2, 3, 5, 5)]),
        ("inv complex", lambda m, t: m.inv(t), [wellcond(rng, 2, 3, 3, dtype="complex64")]),
        ("det", lambda m, t: m.det(t), [wellcond(rng, 2, 4, 4)]),
        ("det complex", lambda m, t: m.det(t), [wellcond(rng, 3, 3, dtype="complex64")]),
        ("slogdet", lambda m, t: m.slogdet(t), [rnd(rng, 3, 4, 4)]),
        ("slogdet 2d", lambda m, t: m.slogdet(t), [rnd(rng, 5, 5)]),
        ("slogdet complex", lambda m, t: m.slogdet(t), [wellcond(rng, 2, 3, 3, dtype="complex64")]),
        ("matrix_power complex", lambda m, t: m.matrix_power(t, 2), [rnd(rng, 2, 3, 3, dtype="complex64")]),
        ("lu complex", lambda m, t: m.lu(t), [rnd(rng, 2, 3, 3, dtype="complex64")]),
        ("triangular complex", lambda m, a, b: m.triangular_solve(a, b, upper=False),
         [wellcond(rng, 3, 3, dtype="complex64"), rnd(rng, 3, 2, dtype="complex64")]),
        ("solve", lambda m, a, b: m.solve(a, b), [wellcond(rng, 2, 4, 4), rnd(rng, 2, 4, 3)]),
        ("solve right", lambda m, a, b: m.solve(a, b, left=False), [wellcond(rng, 2, 4, 4), rnd(rng, 2, 3, 4)]),
        ("triangular upper", lambda m, a, b: m.triangular_solve(a, b), [wellcond(rng, 2, 4, 4), rnd(rng, 2, 4, 3)]),
        ("triangular lower T unit", lambda m, a, b: m.triangular_solve(a, b, upper=False, transpose=True,
                                                                        unitriangular=True),
         [wellcond(rng, 3, 3), rnd(rng, 2, 3, 2)]),
        ("cholesky upper", lambda m, t: m.cholesky(t, upper=True), [spd(rng, 2, 4, 4)]),
        ("cholesky_solve", lambda m, b, f: m.cholesky_solve(b, f),
         [rnd(rng, 2, 3, 2), np.linalg.cholesky(spd(rng, 2, 3, 3)).astype("float32")]),
        ("cholesky_solve upper", lambda m, b, f: m.cholesky_solve(b, f, upper=True),
         [rnd(rng, 3, 4), np.swapaxes(np.linalg.cholesky(spd(rng, 3, 3)), -1, -2).astype("float32")]),
        ("cholesky_inverse", lambda m, f: m.cholesky_inverse(f),
         [np.linalg.cholesky(spd(rng, 4, 4)).astype("float32")]),
        ("cholesky_inverse upper", lambda m, f: m.cholesky_inverse(f, upper=True),
         [np.triu(wellcond(rng, 3, 3))]),
        ("pinv", lambda m, t: m.pinv(t), [rnd(rng, 2, 5, 3)]),
        ("pinv hermitian", lambda m, t: m.pinv(t, hermitian=True), [spd(rng, 2, 3, 3)]),
        ("matrix_power", lambda m, t: m.matrix_power(t, 3), [rnd(rng, 2, 3, 3)]),
        ("matrix_power neg", lambda m, t: m.matrix_power(t, -2), [wellcond(rng, 3, 3)]),
        ("matrix_exp", lambda m, t: m.matrix_exp(t), [0.5 * rnd(rng, 2, 3, 3)]),
        ("svdvals", lambda m, t: m.svdvals(t), [rnd(rng, 2, 5, 3)]),
        ("eigvalsh L", lambda m, t: m.eigvalsh(t), [rnd(rng, 2, 4, 4)]),
        ("eigvalsh U", lambda m, t: m.eigvalsh(t, UPLO="U"), [rnd(rng, 4, 4)]),
        ("eigvalsh complex", lambda m, t: m.eigvalsh(t), [spd(rng, 3, 3, dtype="complex64")]),
        ("cond", lambda m, t: m.cond(t), [rnd(rng, 2, 5, 3)]),
        ("cond -2", lambda m, t: m.cond(t, p=-2), [rnd(rng, 3, 4)]),
        *[(f"cond {p}", lambda m, t, p=p: m.cond(t, p=p), [wellcond(rng, 2, 3, 3)])
          for p in ("fro", "nuc", 1, -1, math.inf, -math.inf)],
        ("cov", lambda m, t: m.cov(t), [rnd(rng, 3, 6)]),
        ("cov cols biased", lambda m, t: m.cov(t, rowvar=False, ddof=False), [rnd(rng, 6, 3)]),
        ("cov 1d", lambda m, t: m.cov(t), [rnd(rng, 7)]),
        ("cov weights", lambda m, t, f, a: m.cov(t, fweights=f, aweights=a),
         [rnd(rng, 3, 5), np.array([1, 2, 1, 3, 1]), rng.random(5).astype("float32")]),
        ("corrcoef", lambda m, t: m.corrcoef(t), [rnd(rng, 3, 6)]),
        ("corrcoef cols", lambda m, t: m.corrcoef(t, rowvar=False), [rnd(rng, 6, 3)]),
        ("vecdot", lambda m, a, b: m.vecdot(a, b), [rnd(rng, 2, 3, 4), rnd(rng, 3, 4)]),
        ("vecdot axis", lambda m, a, b: m.vecdot(a, b, axis=0), [rnd(rng, 4, 3), rnd(rng, 4, 3)]),
        ("vecdot complex", lambda m, a, b: m.vecdot(a, b), [rnd(rng, 2, 3, dtype="complex64"),
                                                             rnd(rng, 2, 3, dtype="complex64")]),
        ("cross", lambda m, a, b: m.cross(a, b), [rnd(rng, 4, 3), rnd(rng, 4, 3)]),
        ("cross axis", lambda m, a, b: m.cross(a, b, axis=-1), [rnd(rng, 3, 2, 3), rnd(rng, 3, 2, 3)]),
        ("matrix_transpose", lambda m, a: m.matrix_transpose(a), [rnd(rng, 2, 3, 5)]),
        ("diagonal", lambda m, a: m.diagonal(a), [rnd(rng, 3, 4, 5)]),
        ("diagonal offset", lambda m, a: m.diagonal(a, offset=-1, axis1=-1, axis2=0), [rnd(rng, 3, 4, 5)]),
        ("multi_dot", lambda m, a, b, c: m.multi_dot([a, b, c]), [rnd(rng, 3), rnd(rng, 3, 5), rnd(rng, 5, 2)]),
        ("multi_dot 4", lambda m, a, b, c, d: m.multi_dot([a, b, c, d]),
         [rnd(rng, 2, 6), rnd(rng, 6, 3), rnd(rng, 3, 4), rnd(rng, 4, 1)]),
        ("matmul", lambda m, a, b: m.matmul(a, b), [rnd(rng, 2, 3, 4), rnd(rng, 4, 2)]),
        ("matrix_rank", lambda m, t: m.matrix_rank(t), [rnd(rng, 2, 5, 3) @ rnd(rng, 3, 4)]),
        ("matrix_rank tol", lambda m, t: m.matrix_rank(t, tol=0.5), [np.diag([3.0, 1.0, 0.2]).astype("float32")]),
        ("matrix_rank hermitian", lambda m, t: m.matrix_rank(t, hermitian=True),
         [np.diag([3.0, -1.0, 0.0, 0.0]).astype("float32")]),
        ("matrix_rank atol rtol", lambda m, t: m.matrix_rank(t, atol=0.3, rtol=0.2),
         [np.diag([3.0, 1.0, 0.4, 0.1]).astype("float32")]),
    ]
    for what, fn, arrays in cases:
        tol = 1e-4 if what.startswith(("cond", "matrix_exp", "pinv", "cholesky_inverse", "matrix_power")) else 1e-5
        if what.startswith("matrix_rank"):
            ours = jax.jit(lambda *a, fn=fn: fn(L, *a))(*[jnp.asarray(a) for a in arrays])
            theirs = fn(paddle.linalg, *[paddle.to_tensor(a) for a in arrays])
            close(ours, _np(theirs).astype(np.int32), what=what)
            continue
        both(paddle, fn, arrays, tol=tol, what=what)
    c = rnd(rng, 3, 4, dtype="complex64")  # Paddle's svdvals has no complex kernel: numpy is the reference
    close(L.svdvals(c), np.linalg.svd(c, compute_uv=False), 1e-5, "svdvals complex")
    # Paddle 3.3.1's complex pinv is the conjugate of the pseudo-inverse: numpy is the reference.
    close(L.pinv(c), np.linalg.pinv(c), 1e-5, "pinv complex")


def test_lstsq_matches_paddle(paddle, rng):
    tall, rhs = rnd(rng, 2, 6, 3), rnd(rng, 2, 6, 2)
    square, srhs = wellcond(rng, 4, 4), rnd(rng, 4, 3)
    deficient = (rnd(rng, 5, 2) @ rnd(rng, 2, 4)).astype("float32")
    drhs = rnd(rng, 5, 2)
    for driver in (None, "gels", "gelsy", "gelsd", "gelss"):
        both(paddle, lambda m, a, b: m.lstsq(a, b, driver=driver), [tall, rhs], tol=1e-4, what=f"tall {driver}",
             jit=False)
        both(paddle, lambda m, a, b: m.lstsq(a, b, driver=driver), [square, srhs], tol=1e-4,
             what=f"square {driver}", jit=False)
    for driver in ("gelsd", "gelss"):  # rank-deficient: the minimum-norm solution
        both(paddle, lambda m, a, b: m.lstsq(a, b, driver=driver), [deficient, drhs], tol=1e-4,
             what=f"deficient {driver}", jit=False)


def test_decompositions_reconstruct_and_match(paddle, rng):
    """Non-unique factors: check the reconstruction, and compare the unique parts with Paddle."""
    for shape, dtype in [((4, 4), "float32"), ((2, 5, 3), "float32"), ((3, 2, 4), "float32"),
                         ((2, 4, 3), "complex64")]:
        x = rnd(rng, *shape, dtype=dtype)
        px = paddle.to_tensor(x)
        outs = run(lambda t: {mode: L.qr(t, mode=mode) for mode in ("reduced", "complete", "r")}
                       | {f"svd{full}": L.svd(t, full_matrices=full) for full in (False, True)}, x)
        for mode in ("reduced", "complete"):
            q, r = outs[mode]
            close(q @ r, x, 1e-5, f"qr {mode} {shape}")
            pq, pr = paddle.linalg.qr(px, mode=mode)
            close(np.abs(r), np.abs(_np(pr)), 1e-4, f"|R| {mode} {shape}")  # R is unique up to row signs
        close(np.abs(outs["r"]), np.abs(_np(paddle.linalg.qr(px, mode="r"))), 1e-4, f"qr r {shape}")
        for full in (False, True):
            u, s, vh = outs[f"svd{full}"]
            pu, ps, pvh = paddle.linalg.svd(px, full_matrices=full)
            close([u.shape, vh.shape], [tuple(pu.shape), tuple(pvh.shape)], what="svd shapes")
            close(s, ps, 1e-5, f"svd values {shape}")
            k = s.shape[-1]
            close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], x, 1e-5,
                  f"svd reconstruct {shape}")

    for shape in [(4, 4), (2, 3, 5, 5)]:
        a = rnd(rng, *shape)
        for uplo in ("L", "U"):
            w, v = run(lambda t, uplo=uplo: L.eigh(t, UPLO=uplo), a)
            pw, pv = paddle.linalg.eigh(paddle.to_tensor(a), UPLO=uplo)
            close(w, pw, 1e-5, f"eigh values {uplo}")
            # Eigenvectors are unique up to sign: compare |v^T pv| with the identity.
            overlap = np.abs(np.swapaxes(v, -1, -2) @ _np(pv))
            close(overlap, np.broadcast_to(np.eye(shape[-1]), overlap.shape), 1e-4, f"eigh vectors {uplo}")

    c = spd(rng, 2, 3, 3, dtype="complex64")
    w, v = run(L.eigh, c)
    close(w, paddle.linalg.eigh(paddle.to_tensor(c))[0], 1e-4, "eigh complex values")
    close(v @ (w[..., None] * np.conj(np.swapaxes(v, -1, -2))), c, 1e-4, "eigh complex reconstruct")

    for x in [rnd(rng, 4, 4), rnd(rng, 2, 3, 3), wellcond(rng, 3, 3, dtype="complex64")]:
        w, v, ev = run(lambda t: (*L.eig(t), L.eigvals(t)), x)
        pw = _np(paddle.linalg.eig(paddle.to_tensor(x))[0])
        order = lambda e: np.lexsort((np.round(e.imag, 4), np.round(e.real, 4)), axis=-1)  # noqa: E731
        ws = np.take_along_axis(w, order(w), -1)
        pws = np.take_along_axis(pw, order(pw), -1)
        close(ws, pws, 1e-4, "eig values (sorted)")
        close(x.astype(np.complex64) @ v, v * w[..., None, :], 1e-4, "eig: x v = v w")
        close(np.linalg.norm(v, axis=-2), np.ones(w.shape), 1e-5, "eig: unit vectors")
        close(np.take_along_axis(ev, order(ev), -1), pws, 1e-4, "eigvals")


def test_lu_family_matches_paddle(paddle, rng):
    for shape in [(4, 4), (2, 3, 3), (5, 3), (2, 3, 5)]:
        x = rnd(rng, *shape)
        ours = run(lambda t: L.lu(t, get_infos=True), x)
        theirs = paddle.linalg.lu(paddle.to_tensor(x), get_infos=True)
        close(ours, theirs, 1e-5, f"lu {shape}")  # partial pivoting is deterministic: same LU and pivots
        close(run(L.lu_unpack, ours[0], ours[1]), paddle.linalg.lu_unpack(theirs[0], theirs[1]), 1e-5,
              f"lu_unpack {shape}")
        p, lo, up = run(L.lu_unpack, *ours[:2])
        close(p @ lo @ up, x, 1e-5, f"P L U = x {shape}")
    x = wellcond(rng, 2, 4, 4)
    lu_, piv = run(L.lu, x)
    plu, ppiv = paddle.linalg.lu(paddle.to_tensor(x))
    b = rnd(rng, 2, 4, 3)
    for trans in ("N", "T", "C"):
        close(run(lambda *a, trans=trans: L.lu_solve(*a, trans=trans), b, lu_, piv), paddle.linalg.lu_solve(paddle.to_tensor(b), plu, ppiv, trans=trans),
              1e-4, f"lu_solve {trans}")
    # Paddle's CPU LU has no unpivoted mode: check the factors themselves.
    lu_np, piv_np = run(lambda t: L.lu(t, pivot=False), x)
    _, lo, up = run(L.lu_unpack, lu_np, piv_np)
    close(lo @ up, x, 1e-5, "unpivoted L U = x")
    close(piv_np, np.broadcast_to(np.arange(1, 5, dtype=np.int32), (2, 4)), what="unpivoted pivots")
    singular = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    close(run(lambda t: L.lu(t, get_infos=True), singular)[2], paddle.linalg.lu(paddle.to_tensor(singular), get_infos=True)[2],
          what="lu infos")


def test_householder_and_ormqr_match_paddle(paddle, rng):
    for xs, ts in [((5, 3), (3,)), ((2, 4, 4), (2, 3)), ((4, 2), (1,))]:
        x, tau = rnd(rng, *xs), rng.random(ts).astype("float32")
        both(paddle, lambda m, a, t: m.householder_product(a, t), [x, tau], tol=1e-5, what=f"householder {xs}")
    # complex: reflectors from LAPACK's geqrf (scipy's raw QR) rebuild the same Q in both
    z = rnd(rng, 4, 3, dtype="complex64")
    (raw, tau), _ = scipy.linalg.qr(z, mode="raw")
    both(paddle, lambda m, a, t: m.householder_product(a, t), [raw.astype("complex64"), tau.astype("complex64")],
         tol=1e-5, what="householder complex")
    thin, thin_tau = rnd(rng, 2, 4, 3), rng.random((2, 3)).astype("float32")
    square, square_tau = rnd(rng, 2, 4, 4), rng.random((2, 4)).astype("float32")
    # Paddle multiplies by the thin Q = householder_product(x, tau); its checks only admit a
    # square x when multiplying from the right.
    for left, transpose, ys, x, tau in [(True, False, (2, 3, 5), thin, thin_tau), (True, True, (2, 4, 2), thin, thin_tau),
                                        (False, False, (2, 5, 4), square, square_tau),
                                        (False, True, (2, 5, 4), square, square_tau)]:
        y = rnd(rng, *ys)
        both(paddle, lambda m, a, t, b: m.ormqr(a, t, b, left=left, transpose=transpose), [x, tau, y], tol=1e-4,
             what=f"ormqr left={left} transpose={transpose}")


def test_lowrank_recovers_low_rank_input(paddle, rng):
    """Randomized: on an exactly rank-q input both libraries find the same singular values and subspace."""
    x = (rnd(rng, 2, 8, 3) @ rnd(rng, 2, 3, 6)).astype("float32")
    key = jax.random.key(0)
    u, s, v = map(np.asarray, L.svd_lowrank(x, q=3, key=key))
    pu, ps, pv = paddle.linalg.svd_lowrank(paddle.to_tensor(x), q=3)
    close(s, ps, 1e-4, "svd_lowrank values")
    close((u * s[..., None, :]) @ np.swapaxes(v, -1, -2), x, 1e-4, "svd_lowrank reconstruct")
    close([u.shape, v.shape], [tuple(pu.shape), tuple(pv.shape)], what="svd_lowrank shapes")
    wide = np.swapaxes(x, -1, -2)
    u, s, v = map(np.asarray, L.svd_lowrank(wide, q=3, key=key, M=np.zeros_like(wide)))
    close((u * s[..., None, :]) @ np.swapaxes(v, -1, -2), wide, 1e-4, "svd_lowrank wide")
    u, s, v = map(np.asarray, L.pca_lowrank(x, q=3, key=key))
    pu, ps, pv = paddle.linalg.pca_lowrank(paddle.to_tensor(x), q=3)
    close(s, ps, 1e-4, "pca_lowrank values")
    centered = x - x.mean(-2, keepdims=True)
    close((u * s[..., None, :]) @ np.swapaxes(v, -1, -2), centered, 1e-4, "pca reconstruct")
    u2, _, _ = L.svd_lowrank(x, q=2, key=key)
    assert u2.shape == (2, 8, 2)
    with pytest.raises(RuntimeError, match="key"):
        jax.jit(lambda t: L.svd_lowrank(t, q=2))(x)


def test_gradients_match_paddle(paddle, rng):
    cases = [
        ("det", lambda m, a: m.det(a), [wellcond(rng, 2, 3, 3)]),
        ("inv", lambda m, a: m.inv(a), [wellcond(rng, 3, 3)]),
        ("solve", lambda m, a, b: m.solve(a, b), [wellcond(rng, 2, 3, 3), rnd(rng, 2, 3, 2)]),
        ("norm fro", lambda m, a: m.norm(a, p="fro", axis=[-2, -1]), [rnd(rng, 2, 3, 4)]),
        ("vector_norm 3", lambda m, a: m.vector_norm(a, p=3, axis=-1), [rnd(rng, 3, 4)]),
        ("matrix_norm nuc", lambda m, a: m.matrix_norm(a, p="nuc"), [rnd(rng, 4, 3)]),
        ("eigh values", lambda m, a: m.eigh(a)[0], [rnd(rng, 3, 3)]),  # read from one triangle
        ("eigh vectors", lambda m, a: m.eigh(a, UPLO="U")[1] ** 2, [rnd(rng, 2, 3, 3)]),  # sign-free loss
        ("svd vectors", lambda m, a: m.svd(a)[0] ** 2 + m.svd(a)[2] ** 2, [rnd(rng, 3, 3)]),
        ("svdvals", lambda m, a: m.svdvals(a), [rnd(rng, 2, 4, 3)]),
        ("slogdet", lambda m, a: m.slogdet(a)[1], [wellcond(rng, 3, 3)]),
        ("cholesky", lambda m, a: m.cholesky(a), [spd(rng, 3, 3)]),
        ("triangular_solve", lambda m, a, b: m.triangular_solve(a, b, upper=False),
         [np.tril(wellcond(rng, 3, 3)), rnd(rng, 3, 2)]),
        ("matrix_exp", lambda m, a: m.matrix_exp(a), [0.3 * rnd(rng, 3, 3)]),
        ("pinv", lambda m, a: m.pinv(a), [rnd(rng, 4, 3)]),
        ("cov", lambda m, a: m.cov(a), [rnd(rng, 3, 5)]),
    ]
    for what, fn, arrays in cases:
        jarrs = [jnp.asarray(a) for a in arrays]
        out = jax.eval_shape(lambda *a: fn(L, *a), *jarrs)
        cot = rng.standard_normal(out.shape).astype(np.float32)
        ours = jax.jit(jax.grad(lambda *a: jnp.sum(fn(L, *a) * cot), argnums=tuple(range(len(arrays)))))(*jarrs)
        ts = [paddle.to_tensor(a, stop_gradient=False) for a in arrays]
        (fn(paddle.linalg, *ts) * paddle.to_tensor(cot)).sum().backward()
        for i, g in enumerate(ours):
            close(g, ts[i].grad, 1e-4 if what not in ("pinv", "matrix_exp") else 2e-4, f"grad {what} input {i}")
    # Paddle 3.3.1's eigenvalue gradient is wrong for batched input: compare a batch with Paddle per matrix.
    cot = rng.standard_normal((2, 3)).astype(np.float32)
    for what, fn, a in [("eigh", lambda t: L.eigh(t)[0], rnd(rng, 2, 3, 3)),
                        ("eigvalsh", L.eigvalsh, spd(rng, 2, 3, 3))]:
        ours = jax.jit(jax.grad(lambda t, fn=fn: jnp.sum(fn(t) * cot)))(jnp.asarray(a))
        for k in range(2):
            t = paddle.to_tensor(a[k], stop_gradient=False)
            (paddle.linalg.eigh(t)[0] * paddle.to_tensor(cot[k])).sum().backward()
            close(ours[k], t.grad, 1e-4, f"grad batched {what} [{k}]")


def test_bad_input_names_the_argument():
    square, rect = jnp.ones((3, 3)), jnp.ones((2, 3))
    checks = [
        (lambda: L.inv(rect), "`x`"),
        (lambda: L.det(rect), "`x`"),
        (lambda: L.slogdet(rect), "`x`"),
        (lambda: L.eigh(rect), "`x`"),
        (lambda: L.eigh(square, UPLO="X"), "`UPLO`"),
        (lambda: L.norm(square, p="bad"), "`p`"),
        (lambda: L.matrix_norm(square, p="bad"), "`p`"),
        (lambda: L.matrix_norm(square, axis=[0]), "`axis`"),
        (lambda: L.vector_norm(square, p="fro"), "`p`"),
        (lambda: L.cond(square, p="bad"), "`p`"),
        (lambda: L.cond(rect, p=1), "`x`"),
        (lambda: L.lstsq(square, square, driver="qr"), "`driver`"),
        (lambda: L.lu_solve(square, square, jnp.ones(3, jnp.int32), trans="X"), "`trans`"),
        (lambda: L.cross(square, rect), "x.shape"),
        (lambda: L.cov(jnp.ones((2, 2, 2))), "`x`"),
        (lambda: L.multi_dot([square]), "`x`"),
        (lambda: L.matrix_rank(square, tol=0.1, atol=0.1), "`tol`"),
        (lambda: L.triangular_solve(square, jnp.ones((2, 1))), "y.shape"),
        (lambda: L.svd_lowrank(square, q=5, key=jax.random.key(0)), "`q`"),
    ]
    for call, fragment in checks:
        with pytest.raises(ValueError, match=fragment.replace("(", r"\(")):
            call()


def test_top_level_names_are_the_same_functions():
    assert L.cholesky is pdx.cholesky and L.norm is pdx.norm and L.matmul is pdx.matmul
    assert L.inv is pdx.inverse and L.det is pdx.det and L.solve is pdx.solve
