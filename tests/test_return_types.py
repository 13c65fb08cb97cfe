"""Ops give a Tensor where Paddle gives a Tensor, and a Python value where Paddle does.

Reductions, `numel`, `rank`, comparisons such as `equal_all` / `allclose`, `is_empty`,
norms and losses return 0-d tensors in Paddle 3 (`paddle.Tensor` of shape []); ported
code calls `.item()`, `.numpy()` or tensor methods on them. Predicates of the dtype
(`is_complex`, `is_tensor`) and `x.dim()` / `x.item()` are Python values there. Each
case runs in paddle and pdx and must agree on the kind, the shape and the value.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

import pdx

RNG = np.random.default_rng(0)
X = (RNG.random((2, 3)) * 0.8 + 0.1).astype(np.float32)
Y = X[::-1].copy()
SQ = (np.eye(3) * 2 + 0.1).astype(np.float32)
LABEL = np.array([0, 1], np.int64)

CASES = {
    "numel": lambda m, t: m.numel(t(X)), "rank": lambda m, t: m.rank(t(X)),
    "equal_all": lambda m, t: m.equal_all(t(X), t(X)), "allclose": lambda m, t: m.allclose(t(X), t(Y)),
    "is_empty": lambda m, t: m.is_empty(t(X)), "isclose": lambda m, t: m.isclose(t(X), t(Y)),
    "dist": lambda m, t: m.dist(t(X), t(Y)), "count_nonzero": lambda m, t: m.count_nonzero(t(X)),
    "shape": lambda m, t: m.shape(t(X)), "x.dim": lambda m, t: t(X).dim(), "x.numel": lambda m, t: t(X).numel(),
    "x.element_size": lambda m, t: t(X).element_size(), "x.rank": lambda m, t: t(X).rank(),
    "x.is_empty": lambda m, t: t(X).is_empty(), "x.equal_all": lambda m, t: t(X).equal_all(t(X)),
    "x.allclose": lambda m, t: t(X).allclose(t(X)), "is_tensor": lambda m, t: m.is_tensor(t(X)),
    "x.item": lambda m, t: t(X).item(0), "x.tolist": lambda m, t: t(X).tolist(),
    "linalg.det": lambda m, t: m.linalg.det(t(SQ)), "linalg.matrix_rank": lambda m, t: m.linalg.matrix_rank(t(SQ)),
    "linalg.norm": lambda m, t: m.linalg.norm(t(X)), "linalg.cond": lambda m, t: m.linalg.cond(t(SQ)),
    "linalg.slogdet": lambda m, t: m.linalg.slogdet(t(SQ)), "trace": lambda m, t: m.trace(t(SQ)),
    "sum": lambda m, t: m.sum(t(X)), "mean": lambda m, t: m.mean(t(X)), "max": lambda m, t: m.max(t(X)),
    "argmax": lambda m, t: m.argmax(t(X)), "median": lambda m, t: m.median(t(X)),
    "quantile": lambda m, t: m.quantile(t(X), 0.5), "std": lambda m, t: m.std(t(X)), "var": lambda m, t: m.var(t(X)),
    "all": lambda m, t: m.all(t(X) > 0), "any": lambda m, t: m.any(t(X) > 0),
    "logsumexp": lambda m, t: m.logsumexp(t(X)), "nansum": lambda m, t: m.nansum(t(X)),
    "nanmean": lambda m, t: m.nanmean(t(X)), "amax": lambda m, t: m.amax(t(X)), "prod": lambda m, t: m.prod(t(X)),
    "kthvalue": lambda m, t: m.kthvalue(t(X).flatten(), 2), "mode": lambda m, t: m.mode(t(X).flatten()),
    "dot": lambda m, t: m.dot(t(X[0]), t(Y[0])), "inner": lambda m, t: m.inner(t(X[0]), t(Y[0])),
    "trapezoid": lambda m, t: m.trapezoid(t(X[0])),
    "F.cross_entropy": lambda m, t: m.nn.functional.cross_entropy(t(X), t(LABEL)),
    "F.mse_loss": lambda m, t: m.nn.functional.mse_loss(t(X), t(Y)),
    "F.kl_div": lambda m, t: m.nn.functional.kl_div(t(X), t(Y)),
    "metric.accuracy": lambda m, t: m.metric.accuracy(t(X), t(LABEL[:, None])),
    "is_complex": lambda m, t: m.is_complex(t(X)), "is_floating_point": lambda m, t: m.is_floating_point(t(X)),
    "is_integer": lambda m, t: m.is_integer(t(X)), "x.is_complex": lambda m, t: t(X).is_complex(),
    "x.is_same_shape": lambda m, t: t(X).is_same_shape(t(Y)), "x.ndim": lambda m, t: t(X).ndim,
    "broadcast_shape": lambda m, t: m.broadcast_shape([2, 1], [1, 3]),
    "in_dynamic_mode": lambda m, t: m.in_dynamic_mode(),
}


def _kind(v, tensor_types):
    if isinstance(v, tensor_types):
        return ("Tensor", tuple(v.shape))
    if isinstance(v, (list, tuple)):
        return ("sequence", tuple(_kind(a, tensor_types) for a in v))
    return (type(v).__name__, ())


def _values(v, paddle):
    if isinstance(v, paddle.Tensor):
        return v.numpy()
    if isinstance(v, (list, tuple)):
        return [_values(a, paddle) for a in v]
    return np.asarray(v)


def test_tensor_or_python_value_as_paddle(paddle):
    failures = []
    for what, call in CASES.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = call(paddle, paddle.to_tensor)
        got = call(pdx, jnp.asarray)
        kg, kw = _kind(got, jax.Array), _kind(want, paddle.Tensor)
        if kg != kw:
            failures.append(f"{what}: pdx gives {kg}, paddle {kw}")
            continue
        try:
            jax.tree.map(lambda g, w: np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                                                 rtol=1e-5, atol=1e-5),
                         _values(got, paddle) if not isinstance(got, jax.Array) else np.asarray(got),
                         _values(want, paddle))
        except AssertionError as e:
            failures.append(f"{what}: values differ: {str(e)[:200]}")
    assert not failures, "\n".join(failures)
