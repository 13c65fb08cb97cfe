"""Helpers for differential tests of pdx.nn.functional against paddle.nn.functional."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest


class Oracle:
    """Runs the same call through pdx and paddle and compares values and gradients."""

    def __init__(self, paddle):
        self.paddle = paddle
        self.F = paddle.nn.functional

    def t(self, a, grad=False):
        """numpy -> paddle tensor (int64 kept, so Paddle sees its usual label dtype)."""
        a = np.asarray(a)
        t = self.paddle.to_tensor(a)
        t.stop_gradient = not grad
        return t

    @staticmethod
    def np(x):
        if isinstance(x, (tuple, list)):
            return [Oracle.np(v) for v in x]
        return x.numpy() if hasattr(x, "numpy") and not isinstance(x, (np.ndarray, jax.Array)) else np.asarray(x)

    def close(self, ours, ref, rtol=1e-5, atol=1e-5):
        ours, ref = np.asarray(ours), self.np(ref)
        assert ours.shape == tuple(ref.shape), f"shape {ours.shape} != paddle {tuple(ref.shape)}"
        np.testing.assert_allclose(ours, ref, rtol=rtol, atol=atol)

    def grads(self, ours_fn, ref_fn, arrays, argnums, rng, rtol=1e-4, atol=1e-5):
        """Compare d/d(arrays[argnums]) of sum(f(*arrays) * cotangent) between pdx and paddle."""
        jx = [jnp.asarray(a) for a in arrays]
        out = jax.eval_shape(ours_fn, *jx)
        cot = rng.standard_normal(np.shape(out)).astype(np.float32)
        # One compiled program: eager autodiff would compile every primitive separately.
        ours = jax.jit(jax.grad(lambda *xs: jnp.sum(ours_fn(*xs) * cot), argnums=tuple(argnums)))(*jx)
        ts = [self.t(a, grad=i in argnums) for i, a in enumerate(arrays)]
        ref_out = ref_fn(*ts)
        (ref_out * self.paddle.to_tensor(cot)).sum().backward()
        for i, g in zip(argnums, ours):
            ref_g = ts[i].grad
            assert ref_g is not None, f"paddle produced no gradient for input {i}"
            np.testing.assert_allclose(np.asarray(g), ref_g.numpy(), rtol=rtol, atol=atol,
                                       err_msg=f"gradient of input {i}")


@pytest.fixture(scope="session")
def oracle(paddle):
    return Oracle(paddle)
