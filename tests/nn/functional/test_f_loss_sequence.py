"""ctc_loss and rnnt_loss vs paddle (warp-ctc / warp-transducer on CPU) and a numpy lattice reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn.functional as F


def _rnnt_reference(logp, label, t_len, u_len, blank):
    """-log p for one sample by the textbook (T, U) forward recursion; logp [T, U + 1, C]."""
    alpha = np.full((t_len, u_len + 1), -np.inf)
    alpha[0, 0] = 0.0
    for t in range(t_len):
        for u in range(u_len + 1):
            if t == 0 and u == 0:
                continue
            terms = []
            if t > 0:
                terms.append(alpha[t - 1, u] + logp[t - 1, u, blank])
            if u > 0:
                terms.append(alpha[t, u - 1] + logp[t, u - 1, label[u - 1]])
            alpha[t, u] = np.logaddexp.reduce(terms)
    return -(alpha[t_len - 1, u_len] + logp[t_len - 1, u_len, blank])


def _values_and_grads(fns, x, cotangents):
    """[(f(x), d sum(f(x) * cot) / dx) for each f] from one compiled program (one compile, not one per f)."""
    def run(a):
        return [(f(a), jax.grad(lambda z, f=f, c=c: jnp.sum(f(z) * c))(a)) for f, c in zip(fns, cotangents)]
    return jax.jit(run)(jnp.asarray(x))


def _paddle_value_and_grad(oracle, fn, x, cot):
    t = oracle.t(x, grad=True)
    out = fn(t)
    (out * oracle.paddle.to_tensor(cot)).sum().backward()
    return out.numpy(), t.grad.numpy()


def _compare(oracle, rng, ours_fn, ref_fn, x, configs, shapes):
    cots = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    ours = _values_and_grads([lambda a, kw=kw: ours_fn(a, **kw) for kw in configs], x, cots)
    for kw, cot, (value, grad) in zip(configs, cots, ours):
        ref_value, ref_grad = _paddle_value_and_grad(oracle, lambda t, kw=kw: ref_fn(t, **kw), x, cot)
        np.testing.assert_allclose(value, ref_value, rtol=1e-5, atol=1e-5, err_msg=str(kw))
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-4, atol=1e-5, err_msg=f"gradient {kw}")
    return ours


def _ctc_case(rng, steps=7, batch=4, classes=5, width=3, blank=0):
    x = rng.standard_normal((steps, batch, classes)).astype(np.float32)
    labels = rng.integers(0, classes - 1, (batch, width)).astype(np.int32)
    labels = np.where(labels >= blank, labels + 1, labels).astype(np.int32)  # never the blank
    labels[0, 1] = labels[0, 0]  # a repeat needs a blank between the copies
    t_len = rng.integers(width + 2, steps + 1, batch).astype(np.int64)
    t_len[0] = steps
    l_len = rng.integers(1, width + 1, batch).astype(np.int64)
    return x, labels, t_len, l_len


@pytest.mark.parametrize("blank,norm_by_times,reductions", [(0, False, ("none", "sum", "mean")),
                                                            (4, True, ("none", "mean"))])
def test_ctc_loss_matches_paddle_values_and_gradients(oracle, rng, blank, norm_by_times, reductions):
    x, labels, t_len, l_len = _ctc_case(rng, blank=blank)
    t_len[1], l_len[1] = 2, 3  # too short for its labels: zero loss and gradient (warp-ctc), not inf
    configs = [dict(blank=blank, reduction=r, norm_by_times=norm_by_times) for r in reductions]
    shapes = [(4,) if r == "none" else () for r in reductions]
    args = [oracle.t(labels), oracle.t(t_len), oracle.t(l_len)]
    ours = _compare(oracle, rng, lambda a, **kw: F.ctc_loss(a, labels, t_len, l_len, **kw),
                    lambda t, **kw: oracle.F.ctc_loss(t, *args, **kw), x, configs, shapes)
    value, grad = ours[0]
    assert float(value[1]) == 0.0 and not np.any(np.asarray(grad)[:, 1])


def test_ctc_loss_takes_log_probs_too(rng):
    x, labels, t_len, l_len = _ctc_case(rng)
    both = jax.jit(lambda a: (F.ctc_loss(a, labels, t_len, l_len, reduction="none"),
                              F.ctc_loss(jax.nn.log_softmax(a, -1), labels, t_len, l_len, reduction="none")))(x)
    np.testing.assert_allclose(both[0], both[1], rtol=1e-5, atol=1e-5)


def _rnnt_case(rng, batch=3, steps=5, width=4, classes=6, blank=0):
    logp = np.asarray(jax.nn.log_softmax(rng.standard_normal((batch, steps, width + 1, classes)), -1), np.float32)
    label = rng.integers(0, classes - 1, (batch, width))
    label = np.where(label >= blank, label + 1, label).astype(np.int32)  # never the blank
    t_len = rng.integers(1, steps + 1, batch).astype(np.int32)
    t_len[0] = steps
    u_len = rng.integers(0, width + 1, batch).astype(np.int32)
    u_len[0] = width
    return logp, label, t_len, u_len


@pytest.mark.parametrize("blank,configs", [
    (0, [dict(fastemit_lambda=0.001, reduction=r) for r in ("none", "sum", "mean")]),
    (2, [dict(fastemit_lambda=0.5, reduction="sum"), dict(fastemit_lambda=0.0, reduction="none")]),
])
def test_rnnt_loss_matches_paddle_and_numpy_reference(oracle, rng, blank, configs):
    logp, label, t_len, u_len = _rnnt_case(rng, blank=blank)
    shapes = [(3,) if kw["reduction"] == "none" else () for kw in configs]
    args = [oracle.t(label), oracle.t(t_len), oracle.t(u_len)]
    ours = _compare(oracle, rng, lambda a, **kw: F.rnnt_loss(a, label, t_len, u_len, blank=blank, **kw),
                    lambda t, **kw: oracle.F.rnnt_loss(t, *args, blank=blank, **kw), logp, configs, shapes)
    per_sample = next(v for kw, (v, _) in zip(configs, ours) if kw["reduction"] == "none")
    expected = [_rnnt_reference(logp[b], label[b], t_len[b], u_len[b], blank) for b in range(3)]
    np.testing.assert_allclose(per_sample, expected, rtol=1e-5)


def test_sequence_loss_errors():
    x, labels = jnp.zeros((5, 2, 4)), jnp.ones((2, 3), jnp.int32)
    lens, llens = jnp.array([5, 5]), jnp.array([3, 2])
    with pytest.raises(ValueError, match="ctc_loss: reduction='avg'"):
        F.ctc_loss(x, labels, lens, llens, reduction="avg")
    with pytest.raises(TypeError, match="ctc_loss: `labels` must be an integer tensor"):
        F.ctc_loss(x, labels.astype(jnp.float32), lens, llens)
    with pytest.raises(ValueError, match=r"ctc_loss: labels must be \[batch, max_label_length\]"):
        F.ctc_loss(x, jnp.ones((3, 3), jnp.int32), lens, llens)
    with pytest.raises(ValueError, match=r"ctc_loss: `input_lengths` must have shape \[batch\]"):
        F.ctc_loss(x, labels, jnp.array([5, 5, 5]), llens)
    with pytest.raises(ValueError, match=r"ctc_loss: every entry of `input_lengths` must be in \[0, 5\]"):
        F.ctc_loss(x, labels, jnp.array([6, 5]), llens)
    with pytest.raises(ValueError, match=r"ctc_loss: every entry of `label_lengths` must be in \[0, 3\]"):
        F.ctc_loss(x, labels, lens, jnp.array([4, 1]))
    with pytest.raises(ValueError, match="ctc_loss: blank=4"):
        F.ctc_loss(x, labels, lens, llens, blank=4)
    logp = jnp.zeros((2, 5, 4, 6))
    with pytest.raises(ValueError, match=r"rnnt_loss: label must be \[batch, max_label_length\] = \(2, 3\)"):
        F.rnnt_loss(logp, labels[:, :2], lens, jnp.array([1, 1]))
    with pytest.raises(ValueError, match="rnnt_loss: reduction='batchmean'"):
        F.rnnt_loss(logp, labels, lens, llens, reduction="batchmean")
    with pytest.raises(TypeError, match="rnnt_loss: `input_lengths` must be an integer tensor"):
        F.rnnt_loss(logp, labels, lens.astype(jnp.float32), llens)
    with pytest.raises(ValueError, match=r"rnnt_loss: every entry of `label_lengths` must be in \[0, 3\]"):
        F.rnnt_loss(logp, labels, lens, jnp.array([4, 1]))
