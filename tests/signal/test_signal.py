"""pdx.signal against the installed paddle.signal: stft/istft arguments, framing, round trips, gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.signal as S


def _np(v):
    return np.asarray(v) if isinstance(v, (jax.Array, np.ndarray)) else np.asarray(v.numpy())


def close(ours, theirs, tol, what):
    a, b = _np(ours), _np(theirs)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs paddle {b.shape}"
    assert a.dtype == jax.dtypes.canonicalize_dtype(b.dtype), f"{what}: dtype {a.dtype} vs paddle {b.dtype}"
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, err_msg=what)


def test_stft_matches_paddle(paddle, rng):
    sig = rng.standard_normal((2, 50)).astype(np.float32)
    mono = rng.standard_normal(37).astype(np.float32)
    cplx = (rng.standard_normal((2, 40)) + 1j * rng.standard_normal((2, 40))).astype(np.complex64)
    hann = np.hanning(12).astype(np.float32)
    cases = [
        (sig, dict(n_fft=16)),
        (sig, dict(n_fft=16, hop_length=5, win_length=12, window=hann)),
        (sig, dict(n_fft=15, hop_length=4, center=False)),
        (sig, dict(n_fft=16, pad_mode="constant", normalized=True)),
        (sig, dict(n_fft=16, onesided=False)),
        (mono, dict(n_fft=8, hop_length=3)),
        (cplx, dict(n_fft=16, hop_length=6)),
    ]
    for x, kw in cases:
        ours = S.stft(jnp.asarray(x), **{k: jnp.asarray(v) if k == "window" else v for k, v in kw.items()})
        theirs = paddle.signal.stft(paddle.to_tensor(x),
                                    **{k: paddle.to_tensor(v) if k == "window" else v for k, v in kw.items()})
        close(ours, theirs, 1e-5, f"stft {x.shape} {kw.keys()}")


def test_istft_matches_paddle_and_inverts(paddle, rng):
    sig = rng.standard_normal((2, 64)).astype(np.float32)
    hann = np.hanning(16).astype(np.float32) + 0.1  # strictly positive: NOLA holds
    cases = [
        dict(n_fft=16),
        dict(n_fft=16, hop_length=4, window=hann, normalized=True),
        dict(n_fft=16, hop_length=8, win_length=16, window=hann, length=50),
        dict(n_fft=16, hop_length=4, center=False),
        dict(n_fft=16, onesided=False),
    ]
    for kw in cases:
        skw = {k: v for k, v in kw.items() if k != "length"}
        spec = S.stft(jnp.asarray(sig), **{k: jnp.asarray(v) if k == "window" else v for k, v in skw.items()})
        ours = S.istft(spec, **{k: jnp.asarray(v) if k == "window" else v for k, v in kw.items()})
        theirs = paddle.signal.istft(paddle.to_tensor(np.asarray(spec)),
                                     **{k: paddle.to_tensor(v) if k == "window" else v for k, v in kw.items()})
        close(ours, theirs, 1e-5, f"istft {kw.keys()}")
        n = ours.shape[-1]
        np.testing.assert_allclose(ours, sig[:, :n], atol=1e-5, err_msg=f"round trip {kw.keys()}")
    # complex signal round trip through the two-sided transform
    c = (rng.standard_normal(48) + 1j * rng.standard_normal(48)).astype(np.complex64)
    spec = S.stft(jnp.asarray(c), n_fft=12, hop_length=3)
    ours = S.istft(spec, n_fft=12, hop_length=3, onesided=False, return_complex=True)
    theirs = paddle.signal.istft(paddle.to_tensor(np.asarray(spec)), n_fft=12, hop_length=3, onesided=False,
                                 return_complex=True)
    close(ours, theirs, 1e-5, "istft complex")
    np.testing.assert_allclose(ours, c, atol=1e-5)


def test_frame_and_overlap_add_match_paddle(paddle, rng):
    x = rng.standard_normal((3, 20)).astype(np.float32)
    close(S.frame(x, 6, 4), paddle.signal.frame(paddle.to_tensor(x), 6, 4), 0, "frame last")
    xt = np.ascontiguousarray(x.T)
    close(S.frame(xt, 5, 3, axis=0), paddle.signal.frame(paddle.to_tensor(xt), 5, 3, axis=0), 0, "frame first")
    f = rng.standard_normal((3, 6, 4)).astype(np.float32)
    close(S.overlap_add(f, 2), paddle.signal.overlap_add(paddle.to_tensor(f), 2), 1e-6, "overlap_add last")
    g = rng.standard_normal((4, 6, 3)).astype(np.float32)
    close(S.overlap_add(g, 3, axis=0), paddle.signal.overlap_add(paddle.to_tensor(g), 3, axis=0), 1e-6,
          "overlap_add first")


def test_stft_gradient_matches_paddle(paddle, rng):
    sig = rng.standard_normal((2, 40)).astype(np.float32)
    spec_shape = S.stft(jnp.asarray(sig), n_fft=16, hop_length=4).shape
    cot_re = rng.standard_normal(spec_shape).astype(np.float32)
    cot_im = rng.standard_normal(spec_shape).astype(np.float32)

    def loss(x):
        spec = S.stft(x, n_fft=16, hop_length=4)
        return jnp.sum(jnp.real(spec) * cot_re + jnp.imag(spec) * cot_im)

    ours = jax.jit(jax.grad(loss))(jnp.asarray(sig))
    t = paddle.to_tensor(sig, stop_gradient=False)
    spec = paddle.signal.stft(t, n_fft=16, hop_length=4)
    (paddle.real(spec) * paddle.to_tensor(cot_re) + paddle.imag(spec) * paddle.to_tensor(cot_im)).sum().backward()
    close(ours, t.grad, 1e-4, "stft grad")


def test_bad_arguments_name_the_argument():
    x = jnp.ones((2, 32))
    spec = S.stft(x, n_fft=8)
    checks = [
        (lambda: S.stft(x, n_fft=64), "`n_fft`"),
        (lambda: S.stft(x, n_fft=8, win_length=9), "`win_length`"),
        (lambda: S.stft(x, n_fft=8, window=jnp.ones(5)), "`window`"),
        (lambda: S.stft(x, n_fft=8, pad_mode="edge"), "`pad_mode`"),
        (lambda: S.stft(jnp.ones((2, 2, 32)), n_fft=8), "`x`"),
        (lambda: S.stft(x.astype(jnp.complex64), n_fft=8, onesided=True), "`onesided`"),
        (lambda: S.istft(spec, n_fft=8, hop_length=9), "`hop_length`"),
        (lambda: S.istft(spec, n_fft=10), "n_fft"),
        (lambda: S.istft(spec, n_fft=8, window=jnp.zeros(8)), "NOLA"),
        (lambda: S.frame(x, 40, 2), "`frame_length`"),
        (lambda: S.frame(x, 4, 2, axis=1), "`axis`"),
    ]
    for call, fragment in checks:
        with pytest.raises(ValueError, match=fragment):
            call()
    with pytest.raises(TypeError, match="`x`"):
        S.istft(jnp.ones((5, 4)), n_fft=8)
