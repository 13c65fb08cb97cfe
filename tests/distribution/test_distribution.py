"""pdx.distribution values against the installed paddle: log_prob/prob/entropy/mean/variance/cdf/icdf,
every KL pair Paddle registers, and every transform's forward/inverse/log-det-Jacobian/shapes.

Each test loops over many cases so the whole file is a handful of test functions.
"""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import pdx.distribution as D

RTOL = ATOL = 1e-5
SHAPE = (2, 3)


def _close(got, want, what, rtol=RTOL, atol=ATOL):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != paddle's {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what, equal_nan=True)


def _pos(rng, shape=SHAPE, lo=0.5, hi=3.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _unit(rng, shape=SHAPE, lo=0.05, hi=0.95):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _normal(rng, shape=SHAPE):
    return rng.normal(size=shape).astype(np.float32)


def _spd(rng, batch, n):
    a = rng.normal(size=batch + (n, n)).astype(np.float32)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=np.float32)).astype(np.float32)


def _cases(rng, P):
    """(label, pdx dist, paddle dist, {method: args as numpy}) for every distribution."""
    t = P.to_tensor
    PD = P.distribution
    cases = []

    def add(label, ours, theirs, **methods):
        cases.append((label, ours, theirs, methods))

    loc, scale, x = _normal(rng), _pos(rng), _normal(rng)
    add("Normal", D.Normal(loc, scale), PD.Normal(t(loc), t(scale)),
        log_prob=x, probs=x, prob=x, entropy=None, mean=None, variance=None)
    add("Normal-floats", D.Normal(0.5, 2.0), PD.Normal(0.5, 2.0), log_prob=x, entropy=None)
    cloc = (loc + 1j * _normal(rng)).astype(np.complex64)
    cx = (x + 1j * _normal(rng)).astype(np.complex64)
    add("Normal-complex", D.Normal(cloc, scale), PD.Normal(t(cloc), t(scale)),
        log_prob=cx, probs=cx, entropy=None, mean=None, variance=None)
    lo, width = _normal(rng), _pos(rng)
    xs = lo + width * rng.uniform(-0.2, 1.2, SHAPE).astype(np.float32)
    add("Uniform", D.Uniform(lo, lo + width), PD.Uniform(t(lo), t(lo + width)),
        log_prob=xs, probs=xs, entropy=None)
    add("Cauchy", D.Cauchy(loc, scale), PD.Cauchy(t(loc), t(scale)),
        log_prob=x, prob=x, cdf=x, entropy=None)
    u = _unit(rng)
    add("Laplace", D.Laplace(loc, scale), PD.Laplace(t(loc), t(scale)),
        log_prob=x, prob=x, cdf=x, icdf=u, entropy=None, mean=None, variance=None, stddev=None)
    add("Gumbel", D.Gumbel(loc, scale), PD.Gumbel(t(loc), t(scale)),
        log_prob=x, prob=x, cdf=x, entropy=None, mean=None, variance=None, stddev=None)
    xp = _pos(rng, lo=0.1, hi=4.0)
    add("LogNormal", D.LogNormal(loc, scale), PD.LogNormal(t(loc), t(scale)),
        log_prob=xp, probs=xp, entropy=None, mean=None, variance=None)
    df = np.array([[0.5, 1.5, 2.5], [3.0, 5.0, 9.0]], np.float32)  # covers mean nan, variance nan/inf
    add("StudentT", D.StudentT(df, loc, scale), PD.StudentT(t(df), t(loc), t(scale)),
        log_prob=x, prob=x, entropy=None, mean=None, variance=None)
    rate = _pos(rng)
    add("Exponential", D.Exponential(rate), PD.Exponential(t(rate)),
        log_prob=xp, prob=xp, cdf=xp, icdf=u, entropy=None, mean=None, variance=None)
    conc = _pos(rng)
    add("Gamma", D.Gamma(conc, rate), PD.Gamma(t(conc), t(rate)),
        log_prob=xp, prob=xp, entropy=None, mean=None, variance=None)
    add("Chi2", D.Chi2(conc * 2), PD.Chi2(t(conc * 2)),
        log_prob=xp, prob=xp, entropy=None, mean=None, variance=None)
    add("Beta", D.Beta(conc, rate), PD.Beta(t(conc), t(rate)),
        log_prob=u, prob=u, entropy=None, mean=None, variance=None)
    cb = np.array([[0.1, 0.4995, 0.5], [0.3, 0.7, 0.95]], np.float32)  # both sides of the Taylor region
    add("ContinuousBernoulli", D.ContinuousBernoulli(cb), PD.ContinuousBernoulli(t(cb)),
        log_prob=u, prob=u, cdf=u, icdf=u, entropy=None, mean=None, variance=None)
    p = _unit(rng)
    b = (rng.uniform(size=SHAPE) < 0.5).astype(np.float32)
    add("Bernoulli", D.Bernoulli(p), PD.Bernoulli(t(p)),
        log_prob=b, prob=b, cdf=b, entropy=None, mean=None, variance=None)
    n = rng.integers(1, 12, SHAPE).astype(np.float32)
    k = np.floor(n * rng.uniform(size=SHAPE)).astype(np.float32)
    add("Binomial", D.Binomial(n, p), PD.Binomial(t(n), t(p)),
        log_prob=k, prob=k, entropy=None, mean=None, variance=None)
    logits = _pos(rng, (2, 4))
    add("Categorical-2d", D.Categorical(logits), PD.Categorical(t(logits)),
        probs=np.array([0, 3, 1], np.int64), log_prob=np.array([[0, 3], [2, 1]], np.int64), entropy=None)
    add("Categorical-1d", D.Categorical(logits[0]), PD.Categorical(t(logits[0])),
        probs=np.array([[0, 3], [2, 1]], np.int64), log_prob=np.array([1, 2, 0], np.int64), entropy=None)
    add("Geometric", D.Geometric(p), PD.Geometric(t(p)),
        pmf=k, log_pmf=k, cdf=k, entropy=None, mean=None, variance=None, stddev=None)
    probs = _pos(rng, (2, 4))
    counts = np.array([[2, 0, 1, 3], [0, 0, 6, 0]], np.float32)
    add("Multinomial", D.Multinomial(6, probs), PD.Multinomial(6, t(probs)),
        log_prob=counts, prob=counts, entropy=None, mean=None, variance=None)
    add("Poisson", D.Poisson(rate * 3), PD.Poisson(t(rate * 3)),
        log_prob=k, prob=k, entropy=None, mean=None, variance=None)
    alpha = _pos(rng, (2, 4))
    simplex = rng.dirichlet(np.ones(4), size=2).astype(np.float32)
    add("Dirichlet", D.Dirichlet(alpha), PD.Dirichlet(t(alpha)),
        log_prob=simplex, prob=simplex, entropy=None, mean=None, variance=None)
    mloc, cov = _normal(rng, (2, 3)), _spd(rng, (2,), 3)
    mx = _normal(rng, (4, 2, 3))
    tril = np.linalg.cholesky(cov).astype(np.float32)
    prec = np.linalg.inv(cov).astype(np.float32)
    for label, kw in (("cov", "covariance_matrix"), ("prec", "precision_matrix"), ("tril", "scale_tril")):
        m = {"cov": cov, "prec": prec, "tril": tril}[label]
        add(f"MultivariateNormal-{label}", D.MultivariateNormal(mloc, **{kw: m}),
            PD.MultivariateNormal(t(mloc), **{kw: t(m)}),
            log_prob=mx, prob=mx, entropy=None, mean=None, variance=None)
    # covariance batched over a loc without batch dims (broadcast)
    add("MultivariateNormal-bcast", D.MultivariateNormal(mloc[0], covariance_matrix=cov),
        PD.MultivariateNormal(t(mloc[0]), covariance_matrix=t(cov)), log_prob=mx, entropy=None, variance=None)
    corr_l = np.linalg.cholesky(np.corrcoef(rng.normal(size=(3, 10)))).astype(np.float32)
    lkj_c = np.array([0.5, 2.0], np.float32)
    add("LKJCholesky", D.LKJCholesky(3, lkj_c), PD.LKJCholesky(3, t(lkj_c)),
        log_prob=np.stack([corr_l, corr_l]))
    add("Independent", D.Independent(D.Normal(loc, scale), 1), PD.Independent(PD.Normal(t(loc), t(scale)), 1),
        log_prob=x, prob=x, entropy=None, mean=None, variance=None)
    add("Transformed-affine-exp",
        D.TransformedDistribution(D.Normal(loc, scale), [D.AffineTransform(0.5, 2.0), D.ExpTransform()]),
        PD.TransformedDistribution(PD.Normal(t(loc), t(scale)),
                                   [PD.AffineTransform(t(0.5), t(2.0)), PD.ExpTransform()]),
        log_prob=xp, prob=xp)
    zeros3, ones3 = np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)
    add("Transformed-stickbreaking",
        D.TransformedDistribution(D.Normal(zeros3, ones3), [D.StickBreakingTransform()]),
        PD.TransformedDistribution(PD.Normal(t(zeros3), t(ones3)), [PD.StickBreakingTransform()]),
        log_prob=rng.dirichlet(np.ones(4), size=2).astype(np.float32))
    return cases


def _call(dist, method, arg, to):
    attr = getattr(dist, method)
    if arg is None:
        return attr() if callable(attr) else attr
    return attr(to(arg))


def test_values_match_paddle(paddle, rng):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = _cases(rng, paddle)
        for label, ours, theirs, methods in cases:
            if hasattr(theirs, "_batch_shape"):  # Paddle's Categorical never sets its shapes
                assert tuple(ours.batch_shape) == tuple(theirs.batch_shape), f"{label}: batch_shape"
                assert tuple(ours.event_shape) == tuple(theirs.event_shape), f"{label}: event_shape"
            for method, arg in methods.items():
                want = _call(theirs, method, arg, paddle.to_tensor).numpy()
                got = _call(ours, method, arg, jnp.asarray)
                _close(got, want, f"{label}.{method}")


def test_kl_matches_paddle(paddle, rng):
    t = paddle.to_tensor
    PD = paddle.distribution
    a, b, c, d = (_pos(rng) for _ in range(4))
    la, lb = _normal(rng), _normal(rng)
    pa, pb = _unit(rng), _unit(rng)
    n = rng.integers(1, 10, SHAPE).astype(np.float32)
    ka, kb = _pos(rng, (2, 4)), _pos(rng, (2, 4))
    cov_a, cov_b = _spd(rng, (2,), 3), _spd(rng, (2,), 3)
    pairs = [
        ("Normal", D.Normal(la, a), D.Normal(lb, b), PD.Normal(t(la), t(a)), PD.Normal(t(lb), t(b))),
        ("Normal-complex", D.Normal(la + 1j * lb, a), D.Normal(lb - 0.5j * la, b),
         PD.Normal(t((la + 1j * lb).astype(np.complex64)), t(a)),
         PD.Normal(t((lb - 0.5j * la).astype(np.complex64)), t(b))),
        ("LogNormal", D.LogNormal(la, a), D.LogNormal(lb, b), PD.LogNormal(t(la), t(a)), PD.LogNormal(t(lb), t(b))),
        ("Cauchy", D.Cauchy(la, a), D.Cauchy(lb, b), PD.Cauchy(t(la), t(a)), PD.Cauchy(t(lb), t(b))),
        ("Laplace", D.Laplace(la, a), D.Laplace(lb, b), PD.Laplace(t(la), t(a)), PD.Laplace(t(lb), t(b))),
        ("Exponential", D.Exponential(a), D.Exponential(b), PD.Exponential(t(a)), PD.Exponential(t(b))),
        ("Gamma", D.Gamma(a, b), D.Gamma(c, d), PD.Gamma(t(a), t(b)), PD.Gamma(t(c), t(d))),
        ("Chi2", D.Chi2(a), D.Chi2(b), PD.Chi2(t(a)), PD.Chi2(t(b))),
        ("Beta", D.Beta(a, b), D.Beta(c, d), PD.Beta(t(a), t(b)), PD.Beta(t(c), t(d))),
        ("Bernoulli", D.Bernoulli(pa), D.Bernoulli(pb), PD.Bernoulli(t(pa)), PD.Bernoulli(t(pb))),
        ("ContinuousBernoulli", D.ContinuousBernoulli(pa), D.ContinuousBernoulli(pb),
         PD.ContinuousBernoulli(t(pa)), PD.ContinuousBernoulli(t(pb))),
        ("Geometric", D.Geometric(pa), D.Geometric(pb), PD.Geometric(t(pa)), PD.Geometric(t(pb))),
        ("Binomial", D.Binomial(n, pa), D.Binomial(n, pb), PD.Binomial(t(n), t(pa)), PD.Binomial(t(n), t(pb))),
        ("Poisson", D.Poisson(a * 3), D.Poisson(b * 3), PD.Poisson(t(a * 3)), PD.Poisson(t(b * 3))),
        ("Categorical", D.Categorical(ka), D.Categorical(kb), PD.Categorical(t(ka)), PD.Categorical(t(kb))),
        ("Dirichlet", D.Dirichlet(ka), D.Dirichlet(kb), PD.Dirichlet(t(ka)), PD.Dirichlet(t(kb))),
        ("MultivariateNormal", D.MultivariateNormal(la, covariance_matrix=cov_a),
         D.MultivariateNormal(lb, covariance_matrix=cov_b),
         PD.MultivariateNormal(t(la), covariance_matrix=t(cov_a)),
         PD.MultivariateNormal(t(lb), covariance_matrix=t(cov_b))),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, p, q, pp, pq in pairs:
            want = PD.kl_divergence(pp, pq).numpy()
            _close(D.kl_divergence(p, q), want, f"kl({label})")
            _close(p.kl_divergence(q), want, f"{label}.kl_divergence")
    # Paddle registers (Uniform, Uniform) but its Uniform has no kl_divergence; check the closed form.
    lo, w1, w2 = _normal(rng), a, a + b
    kl = D.kl_divergence(D.Uniform(lo, lo + w1), D.Uniform(lo - 0.5 * b, lo + w1 + 0.5 * b))
    _close(kl, np.log(w2 / w1), "kl(Uniform)")
    assert np.isinf(np.asarray(D.kl_divergence(D.Uniform(0.0, 2.0), D.Uniform(0.0, 1.0))))


def test_exponential_family_fallbacks():
    """Generic Bregman KL and natural-parameter entropy of a user ExponentialFamily."""

    class MyExponential(D.ExponentialFamily):
        def __init__(self, rate):
            self.rate = jnp.asarray(rate, jnp.float32)
            super().__init__(self.rate.shape)

        @property
        def _natural_parameters(self):
            return (-self.rate,)

        def _log_normalizer(self, x):
            return -jnp.log(-x)

        @property
        def _mean_carrier_measure(self):
            return 0.0

    r1, r2 = np.array([0.5, 2.0, 3.0], np.float32), np.array([1.5, 0.7, 3.0], np.float32)
    _close(D.kl_divergence(MyExponential(r1), MyExponential(r2)),
           D.kl_divergence(D.Exponential(r1), D.Exponential(r2)), "bregman kl")
    _close(MyExponential(r1).entropy(), 1 - np.log(r1), "exp-family entropy")
    with pytest.raises(NotImplementedError, match="register"):
        D.kl_divergence(MyExponential(r1), D.Exponential(r2))


def _transform_cases(rng, P):
    t = P.to_tensor
    PD = P.distribution
    x, xp = _normal(rng, (2, 3)), _pos(rng, (2, 3))
    loc, scale, power = _normal(rng, (3,)), _pos(rng, (3,)), _pos(rng, (3,))
    simplex = rng.dirichlet(np.ones(4), size=2).astype(np.float32)
    return [
        ("Affine", D.AffineTransform(loc, scale), PD.AffineTransform(t(loc), t(scale)), x, x),
        ("Exp", D.ExpTransform(), PD.ExpTransform(), x, xp),
        ("Power", D.PowerTransform(power), PD.PowerTransform(t(power)), xp, xp),
        ("Sigmoid", D.SigmoidTransform(), PD.SigmoidTransform(), x, _unit(rng, (2, 3))),
        ("Tanh", D.TanhTransform(), PD.TanhTransform(), x, _unit(rng, (2, 3), -0.9, 0.9)),
        ("StickBreaking", D.StickBreakingTransform(), PD.StickBreakingTransform(), x, simplex),
        ("Chain", D.ChainTransform([D.AffineTransform(loc, scale), D.ExpTransform()]),
         PD.ChainTransform([PD.AffineTransform(t(loc), t(scale)), PD.ExpTransform()]), x, xp),
        ("Independent", D.IndependentTransform(D.ExpTransform(), 1),
         PD.IndependentTransform(PD.ExpTransform(), 1), x, xp),
        ("Reshape", D.ReshapeTransform((3,), (3, 1)), PD.ReshapeTransform((3,), (3, 1)), x, xp.reshape(2, 3, 1)),
        ("Stack", D.StackTransform([D.ExpTransform(), D.TanhTransform(), D.SigmoidTransform()], axis=1),
         PD.StackTransform([PD.ExpTransform(), PD.TanhTransform(), PD.SigmoidTransform()], axis=1),
         x, _unit(rng, (2, 3))),
    ]


def test_transforms_match_paddle(paddle, rng):
    t = paddle.to_tensor
    for label, ours, theirs, x, y in _transform_cases(rng, paddle):
        _close(ours.forward(x), theirs.forward(t(x)).numpy(), f"{label}.forward")
        _close(ours(jnp.asarray(x)), theirs(t(x)).numpy(), f"{label}.__call__")
        _close(ours.inverse(y), theirs.inverse(t(y)).numpy(), f"{label}.inverse")
        want = theirs.forward_log_det_jacobian(t(x)).numpy()
        got = ours.forward_log_det_jacobian(x)
        if label == "Affine":  # pdx broadcasts log|scale| to x's shape (Paddle: scale's shape)
            want = np.broadcast_to(want, np.shape(got))
        _close(got, want, f"{label}.forward_log_det_jacobian")
        want = theirs.inverse_log_det_jacobian(t(y)).numpy()
        got = ours.inverse_log_det_jacobian(y)
        if label == "Affine":
            want = np.broadcast_to(want, np.shape(got))
        _close(got, want, f"{label}.inverse_log_det_jacobian")
        shape = list(np.shape(x))
        assert tuple(ours.forward_shape(shape)) == tuple(theirs.forward_shape(shape)), label
        if label != "Chain":  # Paddle's ChainTransform.inverse_shape walks the chain forwards
            yshape = list(np.shape(y))
            assert tuple(ours.inverse_shape(yshape)) == tuple(theirs.inverse_shape(yshape)), label
    # the non-injective ones
    x = _normal(rng, (2, 3))
    neg, pos = D.AbsTransform().inverse(np.abs(x))
    pneg, ppos = paddle.distribution.AbsTransform().inverse(t(np.abs(x)))
    _close(neg, pneg.numpy(), "Abs.inverse[0]")
    _close(pos, ppos.numpy(), "Abs.inverse[1]")
    _close(D.AbsTransform().forward(x), np.abs(x), "Abs.forward")
    with pytest.raises(NotImplementedError):
        D.AbsTransform().forward_log_det_jacobian(x)
    sm = D.SoftmaxTransform()
    _close(sm.forward(x), paddle.distribution.SoftmaxTransform().forward(t(x)).numpy(), "Softmax.forward")
    _close(sm.inverse(np.abs(x)), np.log(np.abs(x)), "Softmax.inverse")
    with pytest.raises(NotImplementedError):
        sm.forward_log_det_jacobian(x)
    chained = D.ExpTransform()(D.AffineTransform(0.0, 2.0))
    assert isinstance(chained, D.ChainTransform)
    assert isinstance(D.ExpTransform()(D.Normal(0.0, 1.0)), D.TransformedDistribution)
