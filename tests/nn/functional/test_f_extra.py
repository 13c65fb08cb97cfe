"""pdx.nn.functional's less common ops against paddle.nn.functional: lp/unpool/fractional
pooling, grid_sample/affine_grid, temporal_shift, pdist, diag_embed, sequence_mask,
gather_tree, swiglu; properties of the random ones (gumbel_softmax, class_center_sample)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn.functional as F


def test_lp_pool_matches_paddle(oracle, rng):
    P = oracle.F
    cases = [  # (fn, shape, norm_type, kernel, stride, padding, ceil_mode, data_format)
        ("lp_pool1d", (2, 3, 9), 2, 3, 2, 1, False, "NCL"),
        ("lp_pool1d", (2, 3, 10), 3.0, 3, None, 0, True, "NCL"),
        ("lp_pool1d", (2, 7, 3), 1, 2, 1, 0, False, "NLC"),
        ("lp_pool1d", (1, 2, 8), float("inf"), 3, 2, 0, False, "NCL"),
        ("lp_pool2d", (2, 3, 7, 6), 2, 3, 2, 1, False, "NCHW"),
        ("lp_pool2d", (2, 5, 7, 3), 1.5, [2, 3], [2, 1], 0, True, "NHWC"),
        ("lp_pool2d", (1, 2, 5, 5), 4, 2, None, "SAME", False, "NCHW"),
    ]
    for fn, shape, p, k, s, pad, ceil, fmt in cases:
        x = np.abs(rng.standard_normal(shape)).astype(np.float32) + 0.1
        ours = getattr(F, fn)(x, p, k, s, pad, ceil, fmt)
        ref = getattr(P, fn)(oracle.t(x), p, k, s, pad, ceil, fmt)
        oracle.close(ours, ref)
        if not np.isinf(p):
            oracle.grads(lambda a: getattr(F, fn)(a, p, k, s, pad, ceil, fmt),
                         lambda a: getattr(P, fn)(a, p, k, s, pad, ceil, fmt), [x], [0], rng)


def test_max_unpool_matches_paddle(oracle, rng):
    P = oracle.F
    cases = [  # (n, shape, kernel, stride, padding, output_size)
        (1, (2, 3, 9), 2, 2, 0, None),
        (1, (2, 3, 8), 3, 2, 1, [2, 3, 8]),
        (2, (2, 3, 6, 7), 2, 2, 0, [6, 7]),
        (2, (1, 2, 7, 5), 3, 2, 1, [7, 5]),
        (3, (1, 2, 4, 5, 4), 2, 2, 0, [4, 5, 4]),
    ]
    for i, (n, shape, k, s, pad, out_size) in enumerate(cases):
        pool, unpool = f"max_pool{n}d", f"max_unpool{n}d"
        x = rng.standard_normal(shape).astype(np.float32)
        y_ref, m_ref = getattr(P, pool)(oracle.t(x), k, s, pad, return_mask=True)
        y, m = y_ref.numpy(), m_ref.numpy()
        ours = getattr(F, unpool)(y, m, k, s, pad, output_size=out_size)
        ref = getattr(P, unpool)(y_ref, m_ref, k, s, pad, output_size=out_size)
        oracle.close(ours, ref)
        if i in (1, 3):  # overlapping windows: a shared max gets every copy's gradient
            oracle.grads(lambda a: getattr(F, unpool)(a, jnp.asarray(m), k, s, pad, output_size=out_size),
                         lambda a: getattr(P, unpool)(a, oracle.t(m), k, s, pad, output_size=out_size), [y], [0],
                         rng)
        if i in (2, 4):  # pdx's own mask round-trips too
            ours_y, ours_m = getattr(F, pool)(x, k, s, pad, return_mask=True)
            oracle.close(getattr(F, unpool)(ours_y, ours_m, k, s, pad, output_size=out_size), ref)
    with pytest.raises(ValueError, match="output_size"):
        F.max_unpool2d(jnp.ones((1, 1, 2, 2)), jnp.zeros((1, 1, 2, 2), jnp.int32), 2, output_size=[9, 9])
    with pytest.raises(ValueError, match="data_format"):
        F.max_unpool2d(jnp.ones((1, 1, 2, 2)), jnp.zeros((1, 1, 2, 2), jnp.int32), 2, data_format="NHWC")
    with pytest.raises(ValueError, match="indices.shape"):
        F.max_unpool1d(jnp.ones((1, 1, 2)), jnp.zeros((1, 1, 3), jnp.int32), 2)


def test_fractional_max_pool_matches_paddle_for_fixed_u(oracle, rng):
    P = oracle.F
    cases = [  # (n, shape, output_size, kernel_size, u)
        (2, (2, 3, 7, 7), 3, None, 0.3),
        (2, (1, 2, 10, 9), [4, 5], None, 0.7),
        (2, (1, 2, 11, 6), [5, None], None, 0.01),
        (2, (1, 3, 9, 9), [4, 4], [3, 2], 0.2),
        (3, (1, 2, 7, 6, 5), [3, 4, 2], None, 0.4),
        (3, (1, 1, 6, 6, 6), 3, 2, 0.9),
    ]
    for n, shape, out, k, u in cases:
        fn = f"fractional_max_pool{n}d"
        x = rng.standard_normal(shape).astype(np.float32)
        y, m = getattr(F, fn)(x, out, k, u, return_mask=True)
        y_ref, m_ref = getattr(P, fn)(oracle.t(x), out, k, u, return_mask=True)
        oracle.close(y, y_ref)
        np.testing.assert_array_equal(np.asarray(m), m_ref.numpy())
        if k is not None or n == 3:
            oracle.grads(lambda a: getattr(F, fn)(a, out, k, u), lambda a: getattr(P, fn)(a, out, k, u), [x], [0],
                         rng)


def test_fractional_max_pool_random_u_properties(rng):
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    run = jax.jit(lambda x, key: F.fractional_max_pool2d(x, [4, 3], return_mask=True, key=key))
    outs = set()
    for seed in range(6):
        y, m = run(x, jax.random.key(seed))
        assert y.shape == (2, 3, 4, 3) and m.shape == (2, 3, 4, 3)
        # each output is the input value its mask points at: a real element of its plane
        flat = x.reshape(2, 3, -1)
        np.testing.assert_array_equal(np.take_along_axis(flat, np.asarray(m).reshape(2, 3, -1), axis=-1),
                                      np.asarray(y).reshape(2, 3, -1))
        # masks increase along each output row/column (windows are ordered and disjoint)
        rows, cols = np.asarray(m) // 8, np.asarray(m) % 8
        assert (np.diff(rows, axis=2) > 0).all() and (np.diff(cols, axis=3) > 0).all()
        outs.add(np.asarray(y).tobytes())
    assert len(outs) > 1, "different keys should give different pooling regions"
    y1 = F.fractional_max_pool2d(x, 3, key=jax.random.key(1))
    np.testing.assert_array_equal(y1, F.fractional_max_pool2d(x, 3, key=jax.random.key(1)))
    with pytest.raises(ValueError, match="random_u"):
        F.fractional_max_pool2d(x, 3, random_u=1.5)
    with pytest.raises(ValueError, match="output_size"):
        F.fractional_max_pool2d(x, [20, 3], random_u=0.5)


def test_grid_sample_and_affine_grid_match_paddle(oracle, rng):
    P = oracle.F
    for n, align in ((2, True), (3, False)):
        theta = rng.standard_normal((2, n, n + 1)).astype(np.float32)
        out_shape = [2, 3, 4, 5] if n == 2 else [2, 3, 3, 4, 5]
        oracle.close(F.affine_grid(theta, out_shape, align), P.affine_grid(oracle.t(theta), out_shape, align))
        oracle.grads(lambda t: F.affine_grid(t, out_shape, align),
                     lambda t: P.affine_grid(t, out_shape, align), [theta], [0], rng)
    oracle.close(F.affine_grid(theta, out_shape, True), P.affine_grid(oracle.t(theta), out_shape, True))
    cases = [(2, m, p, a) for m, a0 in (("bilinear", True), ("nearest", False))
             for p, a in zip(("zeros", "border", "reflection"), (a0, not a0, a0))]
    cases += [(3, "bilinear", "zeros", True), (3, "bilinear", "reflection", False), (3, "nearest", "border", False)]
    grad_cases = {(2, "bilinear", "border", False), (2, "bilinear", "reflection", True), (3, "bilinear", "zeros", True)}
    for n, mode, pad, align in cases:
        spatial = (5, 6) if n == 2 else (3, 4, 5)
        x = rng.standard_normal((2, 3, *spatial)).astype(np.float32)
        grid = rng.uniform(-1.4, 1.4, (2, *((4, 3) if n == 2 else (2, 3, 2)), n)).astype(np.float32)
        oracle.close(F.grid_sample(x, grid, mode, pad, align),
                     P.grid_sample(oracle.t(x), oracle.t(grid), mode, pad, align))
        if (n, mode, pad, align) in grad_cases:
            oracle.grads(lambda a, g: F.grid_sample(a, g, mode, pad, align),
                         lambda a, g: P.grid_sample(a, g, mode, pad, align), [x, grid], [0, 1], rng, atol=1e-4)
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(jnp.ones((1, 1, 2, 2)), jnp.zeros((1, 1, 1, 2)), padding_mode="wrap")
    with pytest.raises(ValueError, match="grid.shape"):
        F.grid_sample(jnp.ones((1, 1, 2, 2)), jnp.zeros((1, 1, 1, 3)))
    with pytest.raises(ValueError, match="theta.shape"):
        F.affine_grid(jnp.ones((1, 2, 3)), [1, 1, 2, 2, 2])


def test_extension_ops_match_paddle(oracle, rng):
    P = oracle.F
    x = rng.standard_normal((6, 8, 2, 3)).astype(np.float32)
    for fmt in ("NCHW", "NHWC"):
        xx = x if fmt == "NCHW" else x.transpose(0, 2, 3, 1)
        for ratio in (0.25, 0.3):
            oracle.close(F.temporal_shift(xx, 3, ratio, data_format=fmt),
                         P.temporal_shift(oracle.t(xx), 3, ratio, data_format=fmt))
    oracle.grads(lambda a: F.temporal_shift(a, 2), lambda a: P.temporal_shift(a, 2), [x], [0], rng)

    x = rng.standard_normal((5, 4)).astype(np.float32)
    for p in (0, 1, 2, 3.5, float("inf")):
        oracle.close(F.pdist(x, p), P.pdist(oracle.t(x), p))
        if p in (2, 3.5):
            oracle.grads(lambda a: F.pdist(a, p), lambda a: P.pdist(a, p), [x], [0], rng)

    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for off, d1, d2 in [(0, -2, -1), (1, 0, 2), (-2, 3, 1), (2, 1, 0)]:
        oracle.close(F.diag_embed(x, off, d1, d2), P.diag_embed(oracle.t(x), off, d1, d2))

    lengths = np.array([[2, 0, 5], [1, 3, 4]])
    oracle.close(F.sequence_mask(lengths, 6), P.sequence_mask(oracle.t(lengths), 6))
    oracle.close(F.sequence_mask(lengths, dtype="float32"), P.sequence_mask(oracle.t(lengths), dtype="float32"))

    ids = rng.integers(0, 10, (5, 3, 4))
    parents = rng.integers(0, 4, (5, 3, 4))
    oracle.close(F.gather_tree(ids, parents), P.gather_tree(oracle.t(ids), oracle.t(parents)))

    x = rng.standard_normal((3, 8)).astype(np.float32)
    y = rng.standard_normal((3, 8)).astype(np.float32)
    oracle.close(F.swiglu(x), P.swiglu(oracle.t(x)))
    oracle.close(F.swiglu(x, y), P.swiglu(oracle.t(x), oracle.t(y)))
    oracle.grads(lambda a, b: F.swiglu(a, b), lambda a, b: P.swiglu(a, b), [x, y], [0, 1], rng)
    oracle.close(F.logsigmoid(x), P.logsigmoid(oracle.t(x)))
    assert F.logsigmoid is F.log_sigmoid

    with pytest.raises(ValueError, match="seg_num"):
        F.temporal_shift(jnp.ones((5, 4, 1, 1)), 2)
    with pytest.raises(ValueError, match="dim1"):
        F.diag_embed(jnp.ones((2, 3)), dim1=0, dim2=-3)
    with pytest.raises(ValueError, match="y.shape"):
        F.swiglu(jnp.ones((2, 4)), jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="maxlen"):
        jax.jit(lambda n: F.sequence_mask(n))(jnp.array([1, 2]))


def test_gumbel_softmax_properties(rng):
    x = jnp.asarray(rng.standard_normal((4, 6)).astype(np.float32))
    key = jax.random.key(3)
    soft = F.gumbel_softmax(x, temperature=0.5, key=key)
    np.testing.assert_allclose(soft.sum(-1), 1.0, rtol=1e-5)
    hard = jax.jit(lambda x, k: F.gumbel_softmax(x, hard=True, axis=0, key=k))(x, key)
    assert set(np.unique(np.asarray(hard))) <= {0.0, 1.0}
    np.testing.assert_array_equal(np.asarray(hard).sum(0), np.ones(6))
    np.testing.assert_array_equal(F.gumbel_softmax(x, key=key), F.gumbel_softmax(x, key=key))
    # hard=True: one-hot forward, the soft sample's gradient (straight-through)
    g_hard, g_soft = jax.jit(lambda x: [jax.grad(lambda x: (F.gumbel_softmax(x, hard=h, key=key) * jnp.arange(6.0))
                                                 .sum())(x) for h in (True, False)])(x)
    np.testing.assert_allclose(g_hard, g_soft, atol=1e-6)
    # sampled classes follow the probabilities
    logits = jnp.log(jnp.array([0.7, 0.2, 0.1]))
    draws = F.gumbel_softmax(jnp.broadcast_to(logits, (4000, 3)), hard=True, key=key)
    np.testing.assert_allclose(np.asarray(draws).mean(0), [0.7, 0.2, 0.1], atol=0.03)
    F.gumbel_softmax(x)  # eager: a key from the global generator
    with pytest.raises(ValueError, match="temperature"):
        F.gumbel_softmax(x, temperature=0.0)
    with pytest.raises(RuntimeError, match="key"):
        jax.jit(lambda x: F.gumbel_softmax(x))(x)


def test_class_center_sample_properties(oracle):
    label = np.array([11, 5, 1, 3, 12, 2, 15, 19, 18, 19])
    for num_samples in (6, 12, 20):
        remapped, centers = F.class_center_sample(label, 20, num_samples, key=jax.random.key(num_samples))
        ref_remapped, ref_centers = oracle.F.class_center_sample(oracle.t(label), 20, num_samples)
        centers = np.asarray(centers)
        positives = np.unique(label)
        assert len(centers) == max(num_samples, len(positives)) == len(ref_centers.numpy())
        np.testing.assert_array_equal(centers[:len(positives)], positives)
        assert len(set(centers.tolist())) == len(centers)
        np.testing.assert_array_equal(np.asarray(remapped), ref_remapped.numpy())
        np.testing.assert_array_equal(centers[np.asarray(remapped)], label)
    with pytest.raises(ValueError, match="label values"):
        F.class_center_sample(np.array([25]), 20, 5)
    with pytest.raises(ValueError, match="group"):
        F.class_center_sample(label, 20, 5, group=object())


def test_inplace_functionals_raise_naming_the_functional_form(paddle):
    names = [n for n in dir(paddle.nn.functional) if n.endswith("_") and not n.startswith("_")]
    assert names, "paddle has in-place functionals"
    for name in names:
        fn = getattr(F, name)
        with pytest.raises(TypeError, match=rf"immutable: use F\.\w+\(.*instead of F\.{name}"):
            fn(jnp.ones(2))
    with pytest.raises(TypeError, match=r"use F\.relu\(x\) instead of F\.relu_\(x\)"):
        F.relu_(jnp.ones(2))


def test_lp_pool_bad_input():
    with pytest.raises(ValueError, match="norm_type"):
        F.lp_pool1d(jnp.ones((1, 1, 4)), 0, 2)
    with pytest.raises(ValueError, match="data_format"):
        F.lp_pool2d(jnp.ones((1, 1, 4, 4)), 2, 2, data_format="NCL")
    with pytest.raises(ValueError, match="kernel_size"):
        F.lp_pool2d(jnp.ones((1, 1, 4, 4)), 2, 9)


def test_flash_attn_qkvpacked_matches_paddle(oracle, rng):
    for causal in (False, True):
        qkv = rng.standard_normal((2, 5, 3, 2, 4)).astype(np.float32)
        out, weights = F.flash_attn_qkvpacked(qkv, causal=causal, return_softmax=True)
        ref_out, ref_weights = oracle.F.flash_attn_qkvpacked(oracle.t(qkv), causal=causal, return_softmax=True)
        oracle.close(out, ref_out)
        oracle.close(weights, ref_weights)
    oracle.grads(lambda a: F.flash_attn_qkvpacked(a, causal=True)[0],
                 lambda a: oracle.F.flash_attn_qkvpacked(a, causal=True)[0], [qkv], [0], rng)
    grouped, none = F.flash_attn_qkvpacked(jnp.ones((1, 3, 4, 2, 8)))
    assert grouped.shape == (1, 3, 4, 8) and none is None
    dropped, _ = F.flash_attn_qkvpacked(qkv, dropout=0.5, key=jax.random.key(0))
    assert not np.allclose(dropped, out)
    with pytest.raises(ValueError, match="qkv.shape"):
        F.flash_attn_qkvpacked(jnp.ones((2, 5, 4, 8)))


def _np_sparse_attention(q, k, v, offset, columns, kpm, am):
    b, h, s, d = q.shape
    out = np.zeros(q.shape, np.float64)
    for bi in range(b):
        for hi in range(h):
            for i in range(s):
                cols = [c for c in columns[bi, hi, offset[bi, hi, i]:offset[bi, hi, i + 1]]
                        if kpm[bi, c] != 0 and am[i, c] != 0]
                if not cols:
                    continue
                logits = q[bi, hi, i] @ k[bi, hi, cols].T / np.sqrt(d)
                w = np.exp(logits - logits.max())
                out[bi, hi, i] = (w / w.sum()) @ v[bi, hi, cols]
    return out


def test_sparse_attention_matches_a_numpy_reference(rng):
    b, h, s, d = 2, 2, 5, 3
    q, k, v = (rng.standard_normal((b, h, s, d)) for _ in range(3))
    keep = rng.random((b, h, s, s)) < 0.5
    keep[..., 0] = True
    offset = np.concatenate([np.zeros((b, h, 1), np.int64), np.cumsum(keep.sum(-1), -1)], -1).astype(np.int32)
    nnz = int(offset[..., -1].max())
    columns = np.zeros((b, h, nnz), np.int32)
    for bi in range(b):
        for hi in range(h):
            cols = np.nonzero(keep[bi, hi])[1]
            columns[bi, hi, :len(cols)] = cols
    kpm = np.ones((b, s))
    kpm[1, 0] = 0
    am = np.tril(np.ones((s, s)))
    f32 = lambda *xs: [np.asarray(x, np.float32) for x in xs]  # noqa: E731
    ours = F.sparse_attention(*f32(q, k, v), offset, columns, *f32(kpm, am))
    np.testing.assert_allclose(ours, _np_sparse_attention(q, k, v, offset, columns, kpm, am), rtol=1e-5, atol=1e-5)
    # gradient in q against central differences of the float64 reference
    cot = rng.standard_normal(q.shape)
    g = jax.jit(jax.grad(lambda q: jnp.sum(F.sparse_attention(q, *f32(k, v), offset, columns, *f32(kpm, am)) * cot)))(
        jnp.asarray(q, jnp.float32))
    eps, num = 1e-6, np.zeros(q.size)
    for i in range(q.size):
        dq = np.zeros(q.size)
        dq[i] = eps
        dq = dq.reshape(q.shape)
        num[i] = np.sum((_np_sparse_attention(q + dq, k, v, offset, columns, kpm, am)
                         - _np_sparse_attention(q - dq, k, v, offset, columns, kpm, am)) * cot) / (2 * eps)
    np.testing.assert_allclose(g, num.reshape(q.shape), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="sparse_csr_offset"):
        F.sparse_attention(*f32(q, k, v), offset[..., :-1], columns)


def _np_flashmask(q, k, v, se, causal, window=None):
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    out = np.zeros(q.shape)
    lse = np.full((b, h, sq), -np.inf)
    for bi in range(b):
        for hi in range(h):
            kh = hi // (h // hk)
            for i in range(sq):
                cols = []
                for j in range(sk):
                    if causal and j > i:
                        continue
                    if window is not None:
                        left, right = (window, window) if isinstance(window, int) else window
                        if j < i - left or (not causal and j > i + right):
                            continue
                    if se is not None:
                        s = se[bi, min(kh, se.shape[1] - 1), j]
                        if len(s) == 1 and i >= s[0]:
                            continue
                        if len(s) == 2 and causal and s[0] <= i < s[1]:
                            continue
                        if len(s) == 2 and not causal and (i >= s[0] or i < s[1]):
                            continue
                        if len(s) == 4 and (s[0] <= i < s[1] or s[2] <= i < s[3]):
                            continue
                    cols.append(j)
                if cols:
                    logits = k[bi, cols, kh] @ q[bi, i, hi] / np.sqrt(d)
                    lse[bi, hi, i] = np.log(np.exp(logits - logits.max()).sum()) + logits.max()
                    out[bi, i, hi] = np.exp(logits - lse[bi, hi, i]) @ v[bi, cols, kh]
    return out, lse


def test_flashmask_attention_matches_a_numpy_reference(rng):
    b, s, h, hk, d = 2, 6, 4, 2, 3
    q = rng.standard_normal((b, s, h, d))
    k, v = rng.standard_normal((b, s, hk, d)), rng.standard_normal((b, s, hk, d))
    f32 = lambda *xs: [np.asarray(x, np.float32) for x in xs]  # noqa: E731
    starts = rng.integers(0, s + 1, (b, hk, s, 1))
    cases = [
        (True, np.maximum(starts, np.arange(s)[:, None] + 1).astype(np.int32), None),
        (True, np.concatenate([starts, starts + 2], -1).astype(np.int32), 3),
        (False, np.concatenate([np.full((b, 1, s, 1), s - 1), np.full((b, 1, s, 1), 1)], -1).astype(np.int32), None),
        (False, np.sort(rng.integers(0, s + 1, (b, hk, s, 4)), -1).astype(np.int32), (2, 1)),
        (False, None, None),
    ]
    for causal, se, window in cases:
        out, lse = F.flashmask_attention(*f32(q, k, v), se, causal=causal, window_size=window,
                                         return_softmax_lse=True)
        ref_out, ref_lse = _np_flashmask(q, k, v, se, causal, window)
        np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.where(np.isinf(ref_lse), 0, lse), np.where(np.isinf(ref_lse), 0, ref_lse),
                                   rtol=1e-5, atol=1e-5)
    # gradient in q against central differences of the float64 reference (the 4-bound case)
    causal, se, window = cases[3]
    cot = rng.standard_normal(q.shape)
    g = jax.jit(jax.grad(lambda q: jnp.sum(F.flashmask_attention(q, *f32(k, v), se, window_size=window) * cot)))(
        jnp.asarray(q, jnp.float32))
    eps, num = 1e-6, np.zeros(q.size)
    for i in range(q.size):
        dq = np.zeros(q.size)
        dq[i] = eps
        dq = dq.reshape(q.shape)
        num[i] = np.sum((_np_flashmask(q + dq, k, v, se, causal, window)[0]
                         - _np_flashmask(q - dq, k, v, se, causal, window)[0]) * cot) / (2 * eps)
    np.testing.assert_allclose(g, num.reshape(q.shape), rtol=1e-4, atol=1e-4)
    zero_blocks = F.flashmask_attention(*f32(q, k, v), block_mask=np.zeros((b, h, 1, 1), np.int32))
    np.testing.assert_array_equal(zero_blocks, 0.0)
    with pytest.raises(ValueError, match="startend_row_indices.shape"):
        F.flashmask_attention(*f32(q, k, v), np.zeros((b, 1, s, 1), np.int32), causal=False)


def _np_varlen(q, k, v, cu_q, cu_k, causal, window, softcap, scale):
    out = np.zeros(q.shape)
    lse = np.full((q.shape[1], q.shape[0]), -np.inf)
    groups = q.shape[1] // k.shape[1]
    for s in range(len(cu_q) - 1):
        lq, lk = cu_q[s + 1] - cu_q[s], cu_k[s + 1] - cu_k[s]
        for i in range(lq):
            diag = i + lk - lq
            cols = [j for j in range(lk) if (not causal or j <= diag) and (window[0] < 0 or j >= diag - window[0])
                    and (window[1] < 0 or j <= diag + window[1])]
            if not cols:
                continue
            for hh in range(q.shape[1]):
                logits = k[cu_k[s] + np.array(cols), hh // groups] @ q[cu_q[s] + i, hh] * scale
                if softcap:
                    logits = softcap * np.tanh(logits / softcap)
                m = logits.max()
                lse[hh, cu_q[s] + i] = np.log(np.exp(logits - m).sum()) + m
                out[cu_q[s] + i, hh] = np.exp(logits - lse[hh, cu_q[s] + i]) @ v[cu_k[s] + np.array(cols), hh // groups]
    return out, lse


def test_flash_attention_v3_varlen_matches_a_numpy_reference(rng):
    cu_q, cu_k = np.array([0, 3, 4, 8], np.int32), np.array([0, 2, 6, 9], np.int32)
    q = rng.standard_normal((9, 4, 3))  # the last query token lies outside every sequence
    k, v = rng.standard_normal((10, 2, 3)), rng.standard_normal((10, 2, 3))
    f32 = lambda *xs: [np.asarray(x, np.float32) for x in xs]  # noqa: E731
    for causal, window, softcap, scale in ((False, (-1, -1), 0.0, None), (True, (-1, -1), 0.0, 0.7),
                                           (False, (1, 0), 2.0, None), (True, (2, -1), 0.0, None)):
        out, lse = F.flash_attention_v3_varlen(*f32(q, k, v), cu_q, cu_k, 4, 4, softmax_scale=scale, causal=causal,
                                               window_size=window, softcap=softcap)
        ref_out, ref_lse = _np_varlen(q, k, v, cu_q, cu_k, causal, window, softcap, scale or 3 ** -0.5)
        np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(lse, ref_lse, rtol=1e-5, atol=1e-5)
    g = jax.jit(jax.grad(lambda k: jnp.sum(F.flash_attention_v3_varlen(
        jnp.asarray(q, jnp.float32), k, jnp.asarray(v, jnp.float32), cu_q, cu_k, 4, 4, causal=True)[0])))(
        jnp.asarray(k, jnp.float32))
    assert np.isfinite(np.asarray(g)).all() and np.abs(np.asarray(g)[9]).max() == 0  # key 9 is in no sequence
    with pytest.raises(ValueError, match="cu_seqlens"):
        F.flash_attention_v3_varlen(*f32(q, k, v), cu_q, cu_k[:-1], 4, 4)


def test_flash_attn_varlen_qkvpacked_layouts(rng):
    lengths, pad = [2, 3], 4
    cu = np.array([0, 2, 5], np.int32)
    packed = rng.standard_normal((5, 3, 2, 3)).astype(np.float32)
    padded = np.zeros((8, 3, 2, 3), np.float32)
    padded[0:2], padded[4:7] = packed[0:2], packed[2:5]
    for causal in (False, True):
        ref, _ = _np_varlen(packed[:, 0], packed[:, 1], packed[:, 2], cu, cu, causal, (-1, -1), 0.0, 0.5)
        out, none = F.flash_attn_varlen_qkvpacked(packed, cu, cu, 3, 3, 0.5, causal=causal, varlen_padded=False)
        assert none is None
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
        out, _ = F.flash_attn_varlen_qkvpacked(padded, cu, cu, pad, pad, 0.5, causal=causal)
        np.testing.assert_allclose(np.asarray(out)[[0, 1, 4, 5, 6]], ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(np.asarray(out)[[2, 3, 7]], 0.0)  # padding rows are zeros
    assert sum(lengths) == 5
    with pytest.raises(ValueError, match="not supported"):
        F.flash_attn_varlen_qkvpacked(packed, cu, cu, 3, 3, 0.5, dropout=0.1)
