"""pdx.autograd (jacobian, hessian, grad, PyLayer, grad mode) against paddle.autograd."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import autograd as A


def _pd(paddle, a):
    t = paddle.to_tensor(np.asarray(a))
    t.stop_gradient = False
    return t


def test_jacobian_matches_paddle(paddle, rng):
    x1 = rng.normal(size=(3,)).astype(np.float32)
    x2 = rng.normal(size=(2,)).astype(np.float32)
    xb = rng.normal(size=(4, 3)).astype(np.float32)
    xs0 = np.float32(0.7)
    cases = [  # (pdx function, paddle expression, inputs, batch_axis)
        (lambda x: jnp.sin(x) * x, lambda p, x: paddle.sin(x) * x, (x1,), None),
        (lambda x: (x ** 3).sum(), lambda p, x: (x ** 3).sum(), (x1,), None),
        (lambda x: x[:2] * jnp.exp(x[1:]), lambda p, x: x[:2] * paddle.exp(x[1:]), (x1,), None),
        (lambda x: jnp.stack([x, x ** 2]), lambda p, x: paddle.stack([x, x ** 2]), (xs0,), None),
        (lambda x: jnp.tanh(x) @ jnp.ones((3, 2)), lambda p, x: paddle.tanh(x) @ paddle.ones([3, 2]), (xb,), 0),
        (lambda x: (x ** 2).sum(1), lambda p, x: (x ** 2).sum(1), (xb,), 0),
    ]
    for f, pf, xs, batch_axis in cases:
        want = paddle.autograd.jacobian(pf(paddle, *(px := [_pd(paddle, x) for x in xs])), px[0], batch_axis=batch_axis)
        got = A.jacobian(f, xs[0], batch_axis=batch_axis)
        assert got.shape == list(want.shape)
        # Paddle's J[:] keeps a size-1 axis for batched 1-D ys ([B, 1, N], its J.shape says [B, N])
        np.testing.assert_allclose(got[:], want[:].numpy().reshape(got.shape), rtol=1e-5, atol=1e-6)
        if len(got.shape) >= 2 and batch_axis is None:
            np.testing.assert_allclose(got[:, 1], want[:, 1].numpy(), rtol=1e-5, atol=1e-6)
    # tuple inputs and tuple outputs: nested as J[i_ys][i_xs]
    px1, px2 = _pd(paddle, x1), _pd(paddle, x2)
    want = paddle.autograd.jacobian((px1 * px2.sum(), px2 ** 2), (px1, px2))
    got = A.jacobian(lambda a, b: (a * b.sum(), b ** 2), (x1, x2))
    for i in range(2):
        for j in range(2):
            assert got[i][j].shape == list(want[i][j].shape)
            np.testing.assert_allclose(got[i][j][:], want[i][j][:].numpy(), rtol=1e-5, atol=1e-6)


def test_hessian_matches_paddle(paddle, rng):
    x1 = rng.normal(size=(3,)).astype(np.float32)
    x2 = rng.normal(size=(2,)).astype(np.float32)
    xb = rng.normal(size=(4, 3)).astype(np.float32)
    px1, px2, pxb = (_pd(paddle, x) for x in (x1, x2, xb))
    want = paddle.autograd.hessian((px1 ** 3).sum() * px1.sum(), px1)
    got = A.hessian(lambda x: (x ** 3).sum() * x.sum(), x1)
    assert type(got).__name__ == "Hessian" and got.shape == list(want.shape)
    np.testing.assert_allclose(got[:], want[:].numpy(), rtol=1e-5, atol=1e-6)
    want = paddle.autograd.hessian((pxb ** 3).sum(1), pxb, batch_axis=0)
    got = A.hessian(lambda x: (x ** 3).sum(1), xb, batch_axis=0)
    assert got.shape == list(want.shape) == [4, 3, 3]
    np.testing.assert_allclose(got[:], want[:].numpy(), rtol=1e-5, atol=1e-5)
    # (Paddle 3.3.1 fails on some second derivatives of pow / x * x; exp and tanh work)
    want = paddle.autograd.hessian(paddle.tanh(px1).sum() * (px2 * px1[:2]).sum(), (px1, px2))
    got = A.hessian(lambda a, b: jnp.tanh(a).sum() * (b * a[:2]).sum(), (x1, x2))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(got[i][j][:], want[i][j][:].numpy(), rtol=1e-5, atol=1e-5)
    jitted = jax.jit(lambda x: A.hessian(lambda x: (jnp.sin(x) * x).sum(), x))(x1)
    np.testing.assert_allclose(jitted[:], A.hessian(lambda x: (jnp.sin(x) * x).sum(), x1)[:], rtol=1e-6)


def test_grad_functional_form_matches_paddle(paddle, rng):
    x = rng.normal(size=(3,)).astype(np.float32)
    w = rng.normal(size=(3,)).astype(np.float32)
    px = _pd(paddle, x)
    (want,) = paddle.autograd.grad(paddle.sin(px) * px, px, grad_outputs=paddle.to_tensor(w))
    (got,) = A.grad(lambda x: jnp.sin(x) * x, [x], grad_outputs=[w])
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)
    # second order by nesting (Paddle: create_graph=True)
    px = _pd(paddle, x)
    (g1,) = paddle.autograd.grad((px ** 3).sum(), px, create_graph=True)
    (g2,) = paddle.autograd.grad(g1.sum(), px)
    got2 = A.grad(lambda x: A.grad(lambda x: (x ** 3).sum(), [x])[0].sum(), [x])[0]
    np.testing.assert_allclose(got2, g2.numpy(), rtol=1e-5)


def test_pylayer_matches_paddle(paddle, rng):
    x = rng.normal(size=(5,)).astype(np.float32) * 2
    w = rng.normal(size=(5,)).astype(np.float32) * 3

    def make(base, lib):
        class Cube(base):
            @staticmethod
            def forward(ctx, x, scale=1.0):
                ctx.save_for_backward(x)
                ctx.scale = scale
                return x ** 3 * scale

            @staticmethod
            def backward(ctx, dy):
                (x,) = ctx.saved_tensor()
                return dy * 3 * x ** 2 * ctx.scale

        class ClipGrad(base):
            @staticmethod
            def forward(ctx, x, bound):
                ctx.bound = bound
                return x * 1.0

            @staticmethod
            def backward(ctx, dy):
                return lib.clip(dy, -ctx.bound, ctx.bound)

        class MulAdd(base):  # two tensor inputs, two outputs
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a * b, a + b

            @staticmethod
            def backward(ctx, d_prod, d_sum):
                a, b = ctx.saved_tensor()
                return d_prod * b + d_sum, d_prod * a + d_sum

        return Cube, ClipGrad, MulAdd

    PCube, PClip, PMulAdd = make(paddle.autograd.PyLayer, paddle)
    Cube, Clip, MulAdd = make(A.PyLayer, jnp)

    px = _pd(paddle, x)
    y = PCube.apply(px, 0.5)
    (y * paddle.to_tensor(w)).sum().backward()
    loss = lambda x: (Cube.apply(x, 0.5) * w).sum()  # noqa: E731
    np.testing.assert_allclose(Cube.apply(x, 0.5), y.numpy(), rtol=1e-6)
    np.testing.assert_allclose(pdx.grad(loss)(x), px.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(jax.jit(jax.grad(loss))(x), px.grad.numpy(), rtol=1e-5)

    px = _pd(paddle, x)
    (PClip.apply(px, 0.5) * paddle.to_tensor(w)).sum().backward()
    clip_loss = lambda x: (Clip.apply(x, 0.5) * w).sum()  # noqa: E731
    np.testing.assert_allclose(jax.jit(jax.grad(clip_loss))(x), px.grad.numpy(), rtol=1e-6)
    assert np.abs(px.grad.numpy()).max() <= 0.5

    pa, pb = _pd(paddle, x), _pd(paddle, w)
    p, s = PMulAdd.apply(pa, pb)
    (p * 2 + s * s).sum().backward()
    f = lambda a, b: (lambda p, s: (p * 2 + s * s).sum())(*MulAdd.apply(a, b))  # noqa: E731
    ga, gb = jax.jit(jax.grad(f, argnums=(0, 1)))(x, w)
    np.testing.assert_allclose(ga, pa.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(gb, pb.grad.numpy(), rtol=1e-5)


def test_pylayer_saved_tensors_hooks_and_errors():
    seen = []

    class Square(A.PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensor()
            return 2 * x * dy

    with A.saved_tensors_hooks(lambda t: seen.append("pack") or t * 10, lambda t: seen.append("unpack") or t / 10):
        g = jax.grad(lambda x: Square.apply(x).sum())(jnp.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2.0, 4.0])
    assert seen == ["pack", "unpack"]

    class Wrong(A.PyLayer):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, dy):
            return dy

    with pytest.raises(ValueError, match="one gradient per tensor input"):
        jax.grad(lambda a: Wrong.apply(a, a).sum())(jnp.ones(2))
    with pytest.raises(TypeError, match="apply"):
        Square()


def test_grad_mode_and_errors():
    assert A.is_grad_enabled()
    with A.no_grad():
        assert not A.is_grad_enabled()
        with A.enable_grad():
            assert A.is_grad_enabled()
        assert not A.is_grad_enabled()
    assert A.is_grad_enabled()
    with A.set_grad_enabled(False):
        assert not A.is_grad_enabled()
    assert A.is_grad_enabled()
    A.set_grad_enabled(False)
    assert not A.is_grad_enabled()
    A.set_grad_enabled(True)

    @A.no_grad()
    def frozen(x):
        assert not A.is_grad_enabled()
        return x * 3

    np.testing.assert_allclose(jax.grad(lambda x: (frozen(x) + x).sum())(jnp.ones(2)), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="pdx.grad"):
        A.backward(jnp.ones(()))
    with pytest.raises(TypeError, match="pass the function"):
        A.jacobian(jnp.ones(3), jnp.ones(3))
    with pytest.raises(ValueError, match="batch_axis"):
        A.jacobian(lambda x: x, jnp.ones(3), batch_axis=1)
    with pytest.raises(ValueError, match="xs"):
        A.jacobian(lambda x: x, jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="one element"):
        A.hessian(lambda x: x, jnp.ones(3))
