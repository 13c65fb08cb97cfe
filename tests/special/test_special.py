"""pdx.special against the installed paddle.special."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.special as S


def test_special_matches_paddle(paddle, rng):
    cases = [
        (lambda m, t: m.softmax(t), rng.standard_normal(5)),
        (lambda m, t: m.softmax(t), rng.standard_normal((3, 4))),
        (lambda m, t: m.softmax(t), rng.standard_normal((2, 3, 4))),
        (lambda m, t: m.softmax(t), rng.standard_normal((2, 3, 4, 2))),
        (lambda m, t: m.softmax(t, dim=-1), rng.standard_normal((2, 3, 4))),
        (lambda m, t: m.softmax(t, -2, "float32"), rng.standard_normal((4, 3))),
        (lambda m, t: m.logsumexp(t, axis=1, keepdim=True), rng.standard_normal((3, 4))),
        (lambda m, t: m.logsumexp(t), rng.standard_normal((3, 4))),
        (lambda m, t: m.expm1(t), rng.standard_normal((3, 4)) * 1e-3),
    ]
    for i, (fn, x) in enumerate(cases):
        x = x.astype(np.float32)
        ours = np.asarray(fn(S, jnp.asarray(x)))
        theirs = fn(paddle.special, paddle.to_tensor(x)).numpy()
        assert ours.shape == theirs.shape, i
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=f"case {i}")
    x = rng.standard_normal((3, 4)).astype(np.float32)
    cot = rng.standard_normal((3, 4)).astype(np.float32)
    ours = jax.grad(lambda t: jnp.sum(S.softmax(t, dim=0) * cot))(jnp.asarray(x))
    t = paddle.to_tensor(x, stop_gradient=False)
    (paddle.special.softmax(t, dim=0) * paddle.to_tensor(cot)).sum().backward()
    np.testing.assert_allclose(ours, t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_special_reuses_top_level_and_checks_arguments():
    assert S.logsumexp is pdx.logsumexp and S.expm1 is pdx.expm1
    with pytest.raises(ValueError, match="`dim`"):
        S.softmax(jnp.ones((2, 3)), dim=2)
    with pytest.raises(TypeError, match="`input`"):
        S.softmax(jnp.ones((2, 3), jnp.int32))
    with pytest.raises(TypeError, match="out="):
        S.softmax(jnp.ones(3), out=jnp.ones(3))
