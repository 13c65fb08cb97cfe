"""pdx.sparse against paddle.sparse (and numpy where Paddle's CPU build has no kernel)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import sparse as S


def _rand(rng, shape, nnz=8, low=None, high=None):
    """A random pattern with exactly `nnz` nonzeros: equal nnz keeps array shapes (and compiled ops) shared."""
    vals = rng.normal(size=nnz) if low is None else rng.uniform(low, high, size=nnz)
    vals = np.where(vals == 0, 1.0, vals)
    d = np.zeros(int(np.prod(shape)))
    d[rng.choice(d.size, nnz, replace=False)] = vals
    return d.reshape(shape).astype(np.float32)


def _pd_sparse(paddle, a, fmt):
    t = paddle.to_tensor(a)
    return t.to_sparse_coo(a.ndim) if fmt == "coo" else t.to_sparse_csr()


def _pdx_sparse(a, fmt):
    return S.to_sparse_coo(a, a.ndim) if fmt == "coo" else S.to_sparse_csr(a)


def _same(got, want, msg="", rtol=1e-5, atol=1e-6):
    """Same format, shape, pattern and values as a paddle sparse tensor."""
    assert S.is_sparse_coo(got) == want.is_sparse_coo(), msg
    assert list(got.shape) == list(want.shape), f"{msg}: {list(got.shape)} vs {list(want.shape)}"
    if want.is_sparse_coo():
        want_idx = want.indices().numpy()  # Paddle's sum over all axes gives 1-D indices [0]
        np.testing.assert_array_equal(np.asarray(S.indices(got)).reshape(want_idx.shape), want_idx, err_msg=msg)
    else:
        np.testing.assert_array_equal(S.crows(got), want.crows().numpy(), err_msg=msg)
        np.testing.assert_array_equal(S.cols(got), want.cols().numpy(), err_msg=msg)
    np.testing.assert_allclose(np.asarray(S.values(got)), want.values().numpy(), rtol=rtol, atol=atol, err_msg=msg)
    np.testing.assert_allclose(np.asarray(S.to_dense(got)), want.to_dense().numpy(), rtol=rtol, atol=atol, err_msg=msg)


CASES = [("coo", (4, 5)), ("csr", (4, 5)), ("coo", (2, 4, 5)), ("csr", (2, 4, 5))]


def test_creation_conversion_and_accessors_match_paddle(paddle, rng):
    # COO with duplicates: kept until coalesce, summed by to_dense
    idx = np.stack([rng.integers(0, 4, 9), rng.integers(0, 5, 9)]).astype(np.int64)
    val = rng.normal(size=9).astype(np.float32)
    want = paddle.sparse.sparse_coo_tensor(paddle.to_tensor(idx), paddle.to_tensor(val), [4, 5])
    got = S.sparse_coo_tensor(idx, val, [4, 5])
    np.testing.assert_array_equal(S.indices(got), idx)
    # duplicates add up (Paddle's to_dense of an uncoalesced tensor keeps one of them; its coalesce adds)
    np.testing.assert_allclose(S.to_dense(got), paddle.sparse.coalesce(want).to_dense().numpy(), rtol=1e-6)
    _same(S.coalesce(got), paddle.sparse.coalesce(want), "coalesce")
    assert S.nnz(got) == want.nnz() == 9
    inferred = S.sparse_coo_tensor([[0, 2], [1, 0]], [1.0, 2.0])
    assert list(inferred.shape) == list(paddle.sparse.sparse_coo_tensor([[0, 2], [1, 0]], [1.0, 2.0]).shape)
    # hybrid COO: values [nnz, 2]
    hv = rng.normal(size=(2, 2)).astype(np.float32)
    h = S.sparse_coo_tensor([[0, 2], [1, 0]], hv, [3, 2, 2])
    hp = paddle.sparse.sparse_coo_tensor([[0, 2], [1, 0]], paddle.to_tensor(hv), [3, 2, 2])
    np.testing.assert_allclose(S.to_dense(h), hp.to_dense().numpy())
    for fmt, shape in CASES:
        a = _rand(rng, shape)
        want = _pd_sparse(paddle, a, fmt)
        got = _pdx_sparse(a, fmt)
        _same(got, want, f"from dense {fmt}{shape}")
        assert S.is_sparse(got) and S.is_sparse_csr(got) == (fmt == "csr") and not S.is_sparse(a)
        assert S.nnz(got) == want.nnz()
        other = "csr" if fmt == "coo" else "coo"
        conv = S.to_sparse_csr(got) if other == "csr" else S.to_sparse_coo(got)
        _same(conv, want.to_sparse_csr() if other == "csr" else want.to_sparse_coo(len(shape)), f"{fmt}->{other}")
        if fmt == "csr":  # rebuild from Paddle's flat crows / cols / values
            rebuilt = S.sparse_csr_tensor(want.crows().numpy(), want.cols().numpy(), want.values().numpy(), shape)
            _same(rebuilt, want, f"sparse_csr_tensor {shape}")
    # to_sparse_coo with dense dims (sparse_dim < ndim)
    a = _rand(rng, (4, 3))
    _same(S.to_sparse_coo(a, 1), paddle.to_tensor(a).to_sparse_coo(1), "sparse_dim=1")


UNARY_POSITIVE = ["sin", "tan", "asin", "atan", "sinh", "tanh", "asinh", "atanh", "sqrt", "square", "log1p",
                  "expm1", "abs", "neg", "rad2deg", "deg2rad", "isnan"]


def test_unary_ops_match_paddle(paddle, rng):
    for fmt, shape in CASES:
        a = _rand(rng, shape, low=0.05, high=0.95)  # inside every op's domain
        s = _rand(rng, shape) * 8  # signed values for the activations
        pa, pxa = _pd_sparse(paddle, a, fmt), _pdx_sparse(a, fmt)
        ps, pxs = _pd_sparse(paddle, s, fmt), _pdx_sparse(s, fmt)
        for name in UNARY_POSITIVE:
            _same(getattr(S, name)(pxa), getattr(paddle.sparse, name)(pa), f"{name} {fmt}{shape}")
        _same(S.pow(pxs, 3), paddle.sparse.pow(ps, 3), f"pow {fmt}")
        _same(S.cast(pxs, value_dtype="float64"), paddle.sparse.cast(ps, value_dtype="float64"), f"cast {fmt}")
        assert S.values(S.cast(pxs, value_dtype="int32")).dtype == jnp.int32
        PF, F = paddle.sparse.nn.functional, S.nn.functional
        _same(F.relu(pxs), PF.relu(ps), f"relu {fmt}")
        _same(F.relu6(pxs), PF.relu6(ps), f"relu6 {fmt}")
        _same(F.leaky_relu(pxs, 0.2), PF.leaky_relu(ps, 0.2), f"leaky_relu {fmt}")
        _same(S.nn.ReLU()(pxs), paddle.sparse.nn.ReLU()(ps), f"ReLU {fmt}")
        _same(S.nn.LeakyReLU(0.3)(pxs), paddle.sparse.nn.LeakyReLU(0.3)(ps), f"LeakyReLU {fmt}")
        _same(S.nn.ReLU6()(pxs), paddle.sparse.nn.ReLU6()(ps), f"ReLU6 {fmt}")


def test_binary_ops_match_paddle(paddle, rng):
    for fmt, shape in CASES:
        a, b = _rand(rng, shape), _rand(rng, shape)
        pa, pb = _pd_sparse(paddle, a, fmt), _pd_sparse(paddle, b, fmt)
        xa, xb = _pdx_sparse(a, fmt), _pdx_sparse(b, fmt)
        for name in ("add", "subtract", "multiply"):
            _same(getattr(S, name)(xa, xb), getattr(paddle.sparse, name)(pa, pb), f"{name} {fmt}{shape}")
        want = paddle.sparse.divide(pa, pb)
        got = S.divide(xa, xb)
        assert list(got.shape) == list(want.shape) and S.nnz(got) == want.nnz()
        np.testing.assert_allclose(S.to_dense(got), want.to_dense().numpy(), rtol=1e-5, equal_nan=True)
        _same(S.multiply(xa, 2.5), paddle.sparse.multiply(pa, 2.5), f"multiply scalar {fmt}")
        _same(S.divide(xa, 4.0), paddle.sparse.divide(pa, 4.0), f"divide scalar {fmt}")
        assert S.is_same_shape(xa, b) == paddle.sparse.is_same_shape(pa, paddle.to_tensor(b))
    with pytest.raises(TypeError, match="`y`"):
        S.add(S.to_sparse_coo(np.eye(2, dtype=np.float32)), np.eye(2, dtype=np.float32))
    with pytest.raises(ValueError, match="same shape"):
        S.add(S.to_sparse_coo(np.eye(2, dtype=np.float32)), S.to_sparse_coo(np.eye(3, dtype=np.float32)))


def test_products_match_dense_numpy(rng):
    # Paddle's CPU build has no sparse matmul/mv/addmm/masked_matmul kernels: compare with numpy.
    for fmt in ("coo", "csr"):
        for shape, yshape in (((4, 5), (5, 3)), ((2, 4, 5), (2, 5, 3))):
            a = _rand(rng, shape)
            y = rng.normal(size=yshape).astype(np.float32)
            xa = _pdx_sparse(a, fmt)
            np.testing.assert_allclose(S.matmul(xa, y), a @ y, rtol=1e-5, atol=1e-5)
            b = _rand(rng, yshape)
            prod = S.matmul(xa, _pdx_sparse(b, fmt))
            assert S.is_sparse_csr(prod) == (fmt == "csr")
            np.testing.assert_allclose(S.to_dense(prod), a @ b, rtol=1e-5, atol=1e-5)
            struct = (a != 0).astype(np.float32) @ (b != 0).astype(np.float32) > 0
            assert S.nnz(prod) == int(struct.sum())
            mask = _rand(rng, shape[:-1] + yshape[-1:])
            dx = rng.normal(size=shape).astype(np.float32)
            sampled = S.masked_matmul(dx, y, _pdx_sparse(mask, fmt))
            np.testing.assert_allclose(S.to_dense(sampled), (dx @ y) * (mask != 0), rtol=1e-5, atol=1e-5)
        a = _rand(rng, (4, 5))
        v = rng.normal(size=5).astype(np.float32)
        np.testing.assert_allclose(S.mv(_pdx_sparse(a, fmt), v), a @ v, rtol=1e-5, atol=1e-5)
        inp = rng.normal(size=(4, 3)).astype(np.float32)
        y = rng.normal(size=(5, 3)).astype(np.float32)
        np.testing.assert_allclose(S.addmm(inp, _pdx_sparse(a, fmt), y, beta=0.5, alpha=2.0),
                                   0.5 * inp + 2.0 * (a @ y), rtol=1e-5, atol=1e-5)
        sp_inp = _rand(rng, (4, 3))
        out = S.addmm(_pdx_sparse(sp_inp, fmt), _pdx_sparse(a, fmt), _pdx_sparse(_rand(rng, (5, 3)), fmt))
        assert S.is_sparse(out)
    # gradient of sum(matmul(x, y) * w) with respect to x's stored values and y
    a = _rand(rng, (4, 5))
    y = rng.normal(size=(5, 3)).astype(np.float32)
    w = rng.normal(size=(4, 3)).astype(np.float32)
    x = S.to_sparse_coo(a)
    rows, cols = np.asarray(S.indices(x))

    def loss(vals, y):
        return (S.matmul(S.sparse_coo_tensor(S.indices(x), vals, [4, 5]), y) * w).sum()

    g_vals, g_y = pdx.grad(loss, argnums=(0, 1))(S.values(x), jnp.asarray(y))
    np.testing.assert_allclose(g_vals, (w[rows] * y[cols]).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g_y, a.T @ w, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="x.shape"):
        S.matmul(x, np.ones((4, 3), np.float32))


def test_pca_lowrank_matches_numpy_svd(rng):
    # Paddle's pca_lowrank is CUDA-only: compare with numpy's SVD of the centered matrix.
    a = _rand(rng, (6, 5), nnz=14)
    for center in (True, False):
        U, Sv, V = S.pca_lowrank(S.to_sparse_csr(a), q=3, center=center)
        c = a - a.mean(0) if center else a
        np.testing.assert_allclose(Sv, np.linalg.svd(c, compute_uv=False)[:3], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(U).T @ np.asarray(U), np.eye(3), atol=1e-5)
        np.testing.assert_allclose((np.asarray(U) * np.asarray(Sv)) @ np.asarray(V).T @ np.asarray(V),
                                   np.asarray(U) * np.asarray(Sv), atol=1e-4)
    assert S.pca_lowrank(S.to_sparse_coo(a))[1].shape == (5,)
    with pytest.raises(ValueError, match="`q`"):
        S.pca_lowrank(S.to_sparse_coo(a), q=9)


def test_manipulation_and_softmax_match_paddle(paddle, rng):
    PF = paddle.sparse.nn.functional
    for fmt, shape in CASES:
        a = _rand(rng, shape)
        pa, xa = _pd_sparse(paddle, a, fmt), _pdx_sparse(a, fmt)
        nd = len(shape)
        sums = [dict(), dict(axis=-1, keepdim=True)]
        if fmt == "coo":
            sums += [dict(axis=0), dict(axis=-1), dict(axis=1, keepdim=True)]
        elif nd == 2:
            sums += [dict(axis=-1)]
        for kw in sums:
            _same(S.sum(xa, **kw), paddle.sparse.sum(pa, **kw), f"sum {kw} {fmt}{shape}")
        _same(S.sum(xa, dtype="float64"), paddle.sparse.sum(pa, dtype="float64"), "sum dtype")
        perm = [1, 0] if nd == 2 else [0, 2, 1]
        _same(S.transpose(xa, perm), paddle.sparse.transpose(pa, perm), f"transpose {fmt}{shape}")
        new_shape = [2, -1] if nd == 2 else [0, 10, -1]
        _same(S.reshape(xa, new_shape), paddle.sparse.reshape(pa, new_shape), f"reshape {fmt}{shape}")
        for axes, starts, ends in (([0], [1], [3]), ([nd - 1, 0], [-3, 0], [10, 1])):
            _same(S.slice(xa, axes, starts, ends), paddle.sparse.slice(pa, axes, starts, ends), f"slice {fmt}{shape}")
        dense = rng.normal(size=shape).astype(np.float32)
        _same(S.mask_as(dense, xa), paddle.sparse.mask_as(paddle.to_tensor(dense), pa), f"mask_as {fmt}")
        _same(S.nn.functional.softmax(xa), PF.softmax(pa), f"softmax {fmt}{shape}")
        _same(S.nn.Softmax()(xa), paddle.sparse.nn.Softmax()(pa), f"Softmax {fmt}")
        if fmt == "coo":
            _same(S.nn.functional.softmax(xa, axis=0), PF.softmax(pa, axis=0), f"softmax axis 0 {shape}")
    # COO transpose keeps the entry order (not re-sorted), as Paddle does
    a = _rand(rng, (3, 4))
    _same(S.transpose(S.to_sparse_coo(a), [1, 0]), paddle.sparse.transpose(_pd_sparse(paddle, a, "coo"), [1, 0]),
          "transpose order")
    with pytest.raises(ValueError, match="axis"):
        S.sum(S.to_sparse_csr(a), axis=0)
    with pytest.raises(ValueError, match="shape"):
        S.reshape(S.to_sparse_coo(a), [5, -1])


def test_jit_pads_and_matches_eager(rng):
    a, b = _rand(rng, (2, 4, 5)), _rand(rng, (2, 4, 5))
    y = rng.normal(size=(2, 5, 3)).astype(np.float32)

    @jax.jit
    def run(a, b, y):
        xa, xb, ca = S.to_sparse_coo(a), S.to_sparse_coo(b), S.to_sparse_csr(a)
        return (S.to_dense(S.add(xa, xb)), S.to_dense(S.multiply(xa, xb)), S.to_dense(S.slice(xa, [1], [1], [3])),
                S.to_dense(S.sum(xa, axis=1)), S.to_dense(S.nn.functional.softmax(ca)), S.matmul(ca, y))

    got = run(a, b, y)
    want = (a + b, a * b, a[:, 1:3], a.sum(1), S.to_dense(S.nn.functional.softmax(S.to_sparse_csr(a))), a @ y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="indices"):
        S.sparse_coo_tensor([0, 1], [1.0, 2.0], [2])
    with pytest.raises(ValueError, match="values"):
        S.sparse_coo_tensor([[0, 1]], [1.0], [2])
    with pytest.raises(ValueError, match="indices"):
        S.sparse_coo_tensor([[0, 5]], [1.0, 2.0], [2])
    with pytest.raises(ValueError, match="crows"):
        S.sparse_csr_tensor([0, 1], [0], [1.0], [2, 2])
    with pytest.raises(TypeError, match="`x` must be a sparse"):
        S.sin(np.ones(3))
    with pytest.raises(TypeError, match="COO"):
        S.indices(S.to_sparse_csr(np.eye(2, dtype=np.float32)))
    with pytest.raises(ValueError, match="sparse_dim"):
        S.to_sparse_coo(np.eye(2, dtype=np.float32), 3)
    with pytest.raises(ValueError, match="mask"):
        S.mask_as(np.ones((3, 3), np.float32), S.to_sparse_coo(np.eye(2, dtype=np.float32)))


def test_sparse_conv_pool_batchnorm_match_paddle(paddle, rng):
    d = np.zeros((2, 4, 4, 4, 2), np.float32)
    for s in rng.choice(2 * 64, 9, replace=False):
        d[s // 64, (s // 16) % 4, (s // 4) % 4, s % 4] = rng.normal(size=2)
    px = paddle.to_tensor(d).to_sparse_coo(4)
    x = S.to_sparse_coo(d, 4)
    w = rng.normal(size=(3, 3, 3, 2, 3)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    PF, F = paddle.sparse.nn.functional, S.nn.functional

    def same_sites(got, want, msg):
        want = paddle.sparse.coalesce(want)
        got = S.coalesce(got)
        np.testing.assert_array_equal(S.indices(got), want.indices().numpy(), err_msg=msg)
        np.testing.assert_allclose(S.values(got), want.values().numpy(), rtol=1e-4, atol=1e-5, err_msg=msg)

    for kw in (dict(padding=1), dict(stride=2, padding=0), dict(padding=[1, 0, 1], dilation=1)):
        same_sites(F.conv3d(x, w, b, **kw), PF.conv3d(px, paddle.to_tensor(w), paddle.to_tensor(b), **kw), f"conv3d {kw}")
    same_sites(F.subm_conv3d(x, w, b, padding=1),
               PF.subm_conv3d(px, paddle.to_tensor(w), paddle.to_tensor(b), padding=1), "subm_conv3d")
    same_sites(F.max_pool3d(x, 2, 2), PF.max_pool3d(px, 2, 2), "max_pool3d")
    same_sites(F.max_pool3d(x, 3, 1, 1), PF.max_pool3d(px, 3, 1, 1), "max_pool3d k3")
    # layers with paddle's weights; batch norm in train mode (statistics over stored sites) and eval mode
    pconv = paddle.sparse.nn.SubmConv3D(2, 3, 3, padding=1)
    conv = S.nn.SubmConv3D(2, 3, 3, padding=1)
    conv.weight.set_value(jnp.asarray(pconv.weight.numpy()))
    conv.bias.set_value(jnp.asarray(pconv.bias.numpy()))
    same_sites(conv(x), pconv(px), "SubmConv3D layer")
    pbn, bn = paddle.sparse.nn.BatchNorm(2), S.nn.BatchNorm(2)
    same_sites(bn(x), pbn(px), "BatchNorm train")
    np.testing.assert_allclose(bn._mean[...], pbn._mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn._variance[...], pbn._variance.numpy(), rtol=1e-5, atol=1e-6)
    # eval uses the running statistics (Paddle 3.3.1's sparse BatchNorm keeps using batch statistics after a
    # training-mode call, since it caches use_global_stats on first use; compare with the formula instead)
    bn.eval()
    vals = S.values(x)
    want = (vals - pbn._mean.numpy()) / np.sqrt(pbn._variance.numpy() + 1e-5) * pbn.weight.numpy() + pbn.bias.numpy()
    np.testing.assert_allclose(S.values(bn(x)), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="stride"):
        F.subm_conv3d(x, w, stride=2, padding=1)
    with pytest.raises(ValueError, match="weight"):
        F.conv3d(x, w[..., :1, :])


def test_attention_matches_numpy(rng):
    # Paddle's sparse attention is CUDA-only: compare with a dense masked softmax in numpy.
    b, h, s, d = 2, 2, 5, 4
    q, k, v = (rng.normal(size=(b, h, s, d)).astype(np.float32) for _ in range(3))
    layout = (rng.uniform(size=(b * h, s, s)) < 0.6) | np.eye(s, dtype=bool)[None]
    kp = np.ones((b, s), np.float32)
    kp[0, 3] = 0
    am = np.tril(np.ones((s, s), np.float32))
    mask = S.to_sparse_csr(layout.astype(np.float32))
    got = S.nn.functional.attention(q, k, v, mask, key_padding_mask=kp, attn_mask=am)
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d)
    allowed = layout.reshape(b, h, s, s) & (kp[:, None, None, :] != 0) & (am[None, None] != 0)
    scores = np.where(allowed, scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    np.testing.assert_allclose(got, p @ v, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="sparse_mask"):
        S.nn.functional.attention(q, k, v, S.to_sparse_csr(layout[:2].astype(np.float32)))
