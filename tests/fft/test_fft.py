"""pdx.fft against the installed paddle.fft: every transform, n/s, axis/axes, norm, dtypes, gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.fft as F


def _np(v):
    return np.asarray(v) if isinstance(v, (jax.Array, np.ndarray)) else np.asarray(v.numpy())


def close(ours, theirs, tol, what):
    a, b = _np(ours), _np(theirs)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs paddle {b.shape}"
    assert a.dtype == jax.dtypes.canonicalize_dtype(b.dtype), f"{what}: dtype {a.dtype} vs paddle {b.dtype}"
    scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)  # sums of n terms: relative to the peak
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, err_msg=what)


def rnd(rng, *shape, complex_=False):
    x = rng.standard_normal(shape)
    if complex_:
        x = x + 1j * rng.standard_normal(shape)
        return x.astype(np.complex64)
    return x.astype(np.float32)


NORMS = ("backward", "ortho", "forward")


def test_transforms_match_paddle(paddle, rng):
    real3, cplx3 = rnd(rng, 2, 5, 6), rnd(rng, 3, 4, 5, complex_=True)
    half = rnd(rng, 2, 3, 4, complex_=True)
    cases = []
    for norm in NORMS:
        kw = {"norm": norm}
        cases += [
            ("fft", real3, kw), ("fft", cplx3, dict(kw, n=7, axis=-2)), ("ifft", cplx3, dict(kw, n=3, axis=0)),
            ("rfft", real3, dict(kw, axis=1)), ("rfft", real3, dict(kw, n=9)),
            ("irfft", half, kw), ("irfft", half, dict(kw, n=5, axis=-2)),
            ("hfft", half, dict(kw, n=7)), ("ihfft", real3, dict(kw, axis=-2)),
            ("fft2", cplx3, kw), ("ifft2", real3, dict(kw, s=[3, 7], axes=[0, -1])),
            ("rfft2", real3, dict(kw, axes=(0, 1))), ("irfft2", half, dict(kw, s=(4, 5))),
            ("hfft2", half, kw), ("ihfft2", real3, dict(kw, s=[4, 5])),
            ("fftn", cplx3, kw), ("fftn", real3, dict(kw, s=[3, 4])), ("ifftn", cplx3, dict(kw, axes=[0, 2])),
            ("rfftn", real3, kw), ("irfftn", half, dict(kw, s=[2, 3, 7])), ("irfftn", half, dict(kw, axes=[1])),
            ("hfftn", half, dict(kw, axes=[-1, 0])), ("ihfftn", real3, dict(kw, s=[4, 4], axes=[0, 2])),
            # axes=None: the 2-D transforms act as the n-D ones (every axis, or the last len(s))
            ("rfft2", real3, dict(kw, axes=None)), ("fft2", cplx3, dict(kw, s=[2, 3], axes=None)),
            ("ihfft2", real3, dict(kw, s=[1, 2], axes=None)),
        ]
    cases += [("fft", np.arange(6).astype(np.int32), {}), ("rfft", np.arange(7).astype(np.int32), {"n": 4})]
    for name, x, kw in cases:
        ours = jax.jit(lambda t, name=name, kw=kw: getattr(F, name)(t, **kw))(x)
        theirs = getattr(paddle.fft, name)(paddle.to_tensor(x), **kw)
        close(ours, theirs, 1e-5, f"{name} {x.shape} {kw}")


def test_frequencies_and_shifts_match_paddle(paddle, rng):
    for n, d in [(5, 1.0), (8, 0.25), (1, 2.0)]:
        close(F.fftfreq(n, d), paddle.fft.fftfreq(n, d), 1e-6, f"fftfreq {n}")
        close(F.rfftfreq(n, d), paddle.fft.rfftfreq(n, d), 1e-6, f"rfftfreq {n}")
    x = rnd(rng, 3, 4, 5)
    for axes in (None,):
        close(F.fftshift(x, axes=axes), paddle.fft.fftshift(paddle.to_tensor(x), axes=axes), 0, f"fftshift {axes}")
        close(F.ifftshift(x, axes=axes), paddle.fft.ifftshift(paddle.to_tensor(x), axes=axes), 0,
              f"ifftshift {axes}")
    # Paddle 3.3.1's shifts fail whenever `axes` is given (its roll gets one shift for several
    # axes): numpy is the reference there.
    for axes in (1, [-1], (0, 2), [-1, 1]):
        np.testing.assert_array_equal(F.fftshift(x, axes=axes), np.fft.fftshift(x, axes=axes))
        np.testing.assert_array_equal(F.ifftshift(x, axes=axes), np.fft.ifftshift(x, axes=axes))


def test_gradients_match_paddle(paddle, rng):
    x, c = rnd(rng, 3, 6), rnd(rng, 3, 4, complex_=True)
    cases = [  # real-valued losses of the transforms, so both libraries agree on the cotangent convention
        ("fft", lambda m, t: (m.real(m.fft.fft(t, norm="ortho")) * 1.5 + m.imag(m.fft.fft(t))), x),
        ("rfft", lambda m, t: m.real(m.fft.rfft(t, n=8)) + 2 * m.imag(m.fft.rfft(t, n=8)), x),
        ("irfft", lambda m, t: m.fft.irfft(t, n=6, norm="forward"), x),
        ("fft2", lambda m, t: m.real(m.fft.fft2(t)) - m.imag(m.fft.fft2(t)), x),
        ("hfft", lambda m, t: m.fft.hfft(t, n=5), x),
    ]
    import pdx

    for what, fn, arr in cases:
        out_shape = jax.eval_shape(lambda t: fn(pdx, t), arr).shape
        cot = rng.standard_normal(out_shape).astype(np.float32)
        ours = jax.jit(jax.grad(lambda t: jnp.sum(fn(pdx, t) * cot)))(jnp.asarray(arr))
        t = paddle.to_tensor(arr, stop_gradient=False)
        (fn(paddle, t) * paddle.to_tensor(cot)).sum().backward()
        close(ours, t.grad, 1e-4, f"grad {what}")
    # Complex input: d/dx of a real loss; JAX returns the conjugate of the gradient Paddle reports
    # (Wirtinger convention), so compare against its conjugate.
    cot = rng.standard_normal((3, 4)).astype(np.float32)
    ours = jax.grad(lambda t: jnp.sum(F.fft(t).real * cot))(jnp.asarray(c))
    t = paddle.to_tensor(c, stop_gradient=False)
    (paddle.fft.fft(t).real() * paddle.to_tensor(cot)).sum().backward()
    grad = _np(t.grad)
    assert np.allclose(ours, grad, atol=1e-4) or np.allclose(ours, np.conj(grad), atol=1e-4), "complex fft grad"


def test_bad_arguments_name_the_argument():
    x = jnp.ones((4, 4))
    checks = [
        (lambda: F.fft(x, norm="bad"), ValueError, "`norm`"),
        (lambda: F.fft2(x, norm="unit"), ValueError, "`norm`"),
        (lambda: F.fft(x, n=0), ValueError, "`n`"),
        (lambda: F.fft(x, axis=2), ValueError, "`axis`"),
        (lambda: F.fft2(x, axes=[0]), ValueError, "`axes`"),
        (lambda: F.fftn(x, s=[2, 2], axes=[0]), ValueError, "`s`"),
        (lambda: F.fftn(x, axes=[0, 0]), ValueError, "`axes`"),
        (lambda: F.rfft(x.astype(jnp.complex64)), TypeError, "`x`"),
        (lambda: F.fftfreq(4, dtype="int32"), ValueError, "`dtype`"),
    ]
    checks.append((lambda: F.fft(x, out=x), TypeError, "out="))
    for call, exc, fragment in checks:
        with pytest.raises(exc, match=fragment):
            call()
