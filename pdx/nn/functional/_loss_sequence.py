"""Alignment-free sequence losses: CTC and RNN-T, as lax.scan dynamic programs.

Both sum over every alignment of a label sequence with a longer input in log
space. Unreachable lattice cells hold a large finite negative number instead of
-inf so gradients stay finite (an infeasible sample gets zero loss and zero
gradient, as Paddle's warp-ctc kernel gives it).

Paddle behaviours kept on purpose (each checked against paddle 3.3.1 on CPU):
* `ctc_loss` takes unnormalized activations `[T, B, C]` and applies
  log_softmax itself (log_softmax is idempotent, so log-probabilities work
  too); `norm_by_times` divides only the gradient by each input length;
  'mean' averages `loss / label_length`.
* `rnnt_loss` uses `input` `[B, T, U + 1, C]` as log-probabilities as given
  (no normalization); `fastemit_lambda` scales only the gradient of the label
  emissions by `1 + fastemit_lambda`; 'mean' divides the sum by the batch size.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from pdx.nn.functional._args import array, check_reduction, compiled, error, float_array

__all__ = ["ctc_loss", "rnnt_loss"]

# Log-probability of an unreachable lattice cell: finite so that logaddexp and
# its gradient never see -inf - (-inf).
_NEG = -1e30


def _int_array(x, *, op, name):
    x = array(x, op=op, name=name)
    if not jnp.issubdtype(x.dtype, jnp.integer):
        raise TypeError(f"pdx.nn.functional.{op}: `{name}` must be an integer tensor; got {name}.dtype={x.dtype}")
    return x


def _lengths(x, batch, *, op, name):
    """Validate the shape and dtype of a per-sample length vector [B]."""
    x = _int_array(x, op=op, name=name)
    if x.ndim != 1 or x.shape[0] != batch:
        raise error(op, f"`{name}` must have shape [batch]=({batch},); got {name}.shape={tuple(x.shape)}")
    return x.astype(jnp.int32)


def _check_length_values(x, limit, *, op, name, limit_name):
    """Range-check concrete lengths before compiling (traced values cannot be inspected)."""
    if isinstance(x, jax.core.Tracer) or x is None or limit is None:
        return
    values = np.asarray(x)
    if values.size and jnp.issubdtype(values.dtype, jnp.integer) and (values.min() < 0 or values.max() > limit):
        raise error(op, f"every entry of `{name}` must be in [0, {limit}] ({limit_name}); got {values.tolist()}")


def _dim(x, axis):
    shape = np.shape(x)
    return shape[axis] if len(shape) > axis else None


def _with_grad_scale(value, scale):
    """`value` in the forward pass, `scale * d(value)` in the backward pass."""
    return value * scale + lax.stop_gradient(value - value * scale)


# ----------------------------------------------------------------------------- CTC

def _ctc_nll(logp, labels, input_lengths, label_lengths, blank):
    """-log p(labels | logp) per sample: logp [T, B, C] log-probabilities, labels [B, L]."""
    steps, batch, _ = logp.shape
    width = labels.shape[1]
    states = 2 * width + 1
    # Extended label sequence: blank, l1, blank, l2, ..., blank.
    ext = jnp.full((batch, states), blank, jnp.int32).at[:, 1::2].set(labels.astype(jnp.int32))
    prev2 = jnp.concatenate([jnp.full((batch, 2), blank, jnp.int32), ext[:, :-2]], axis=1)
    can_skip = (ext != blank) & (ext != prev2)

    def emit(t):
        return jnp.take_along_axis(logp[t], ext, axis=1)  # (B, S)

    first = emit(0)
    alpha0 = jnp.full((batch, states), _NEG, logp.dtype)
    alpha0 = alpha0.at[:, 0].set(first[:, 0])
    if width:
        alpha0 = alpha0.at[:, 1].set(jnp.where(label_lengths > 0, first[:, 1], _NEG))

    def step(alpha, t):
        shift1 = jnp.concatenate([jnp.full((batch, 1), _NEG, alpha.dtype), alpha[:, :-1]], axis=1)
        shift2 = jnp.concatenate([jnp.full((batch, 2), _NEG, alpha.dtype), alpha[:, :-2]], axis=1)
        merged = jnp.logaddexp(alpha, shift1)
        merged = jnp.where(can_skip, jnp.logaddexp(merged, shift2), merged)
        new = jnp.maximum(merged + emit(t), _NEG)
        return jnp.where((t < input_lengths)[:, None], new, alpha), None

    alpha, _ = lax.scan(step, alpha0, jnp.arange(1, steps))
    last = jnp.take_along_axis(alpha, (2 * label_lengths)[:, None], axis=1)[:, 0]
    before = jnp.take_along_axis(alpha, jnp.maximum(2 * label_lengths - 1, 0)[:, None], axis=1)[:, 0]
    total = jnp.where(label_lengths > 0, jnp.logaddexp(last, before), last)
    # warp-ctc's feasibility rule: each repeated label needs a blank between its copies.
    pos = jnp.arange(width)
    repeats = jnp.sum((labels[:, 1:] == labels[:, :-1]) & (pos[1:] < label_lengths[:, None]), axis=1) \
        if width > 1 else jnp.zeros((batch,), jnp.int32)
    feasible = (label_lengths + repeats <= input_lengths) & (input_lengths > 0)
    return jnp.where(feasible, -total, 0.0)


def ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean", norm_by_times=False,
             zero_infinity=False):
    """Connectionist temporal classification loss (Paddle's `F.ctc_loss`, warp-ctc semantics).

    Args:
      log_probs: [T, B, C] activations, time-major, padded to the longest input.
        log_softmax is applied inside (as Paddle's warp-ctc does), so logits
        and log-probabilities give the same loss.
      labels: [B, L] int label ids, padded (values past label_lengths are ignored).
      input_lengths: [B] int, each <= T.
      label_lengths: [B] int, each <= L.
      blank: the blank class id in [0, C).
      reduction: 'mean' (mean over the batch of loss / label_length), 'sum' or 'none' ([B]).
      norm_by_times: divide each sample's gradient (not its loss) by its input length.
      zero_infinity: set infinite losses to zero (an infeasible alignment already gives 0, as in Paddle).

    Returns:
      The loss: a scalar, or [B] for reduction='none'.

    Example:
      >>> x = jnp.zeros((4, 1, 3))
      >>> round(float(F.ctc_loss(x, jnp.array([[1, 2]]), jnp.array([4]), jnp.array([2]), reduction="sum")), 4)
      1.6864
    """
    op = "ctc_loss"
    _check_length_values(input_lengths, _dim(log_probs, 0), op=op, name="input_lengths",
                         limit_name="log_probs.shape[0]")
    _check_length_values(label_lengths, _dim(labels, 1), op=op, name="label_lengths", limit_name="labels.shape[1]")
    return _ctc_loss(log_probs, labels, input_lengths, label_lengths, blank, reduction, norm_by_times,
                     zero_infinity)


@compiled("log_probs", "labels", "input_lengths", "label_lengths")
def _ctc_loss(log_probs, labels, input_lengths, label_lengths, blank, reduction, norm_by_times, zero_infinity):
    op = "ctc_loss"
    check_reduction(reduction, op=op)
    x = float_array(log_probs, op=op, name="log_probs")
    if x.ndim != 3:
        raise error(op, f"log_probs must be [max_logit_length, batch, num_classes + 1]; got "
                        f"log_probs.shape={tuple(x.shape)}")
    steps, batch, classes = x.shape
    y = _int_array(labels, op=op, name="labels")
    if y.ndim != 2 or y.shape[0] != batch:
        raise error(op, f"labels must be [batch, max_label_length] with batch={batch}; got "
                        f"labels.shape={tuple(y.shape)}")
    if not 0 <= blank < classes:
        raise error(op, f"blank={blank} must be a class id in [0, {classes})")
    t_len = _lengths(input_lengths, batch, op=op, name="input_lengths")
    l_len = _lengths(label_lengths, batch, op=op, name="label_lengths")
    loss = _ctc_nll(jax.nn.log_softmax(x, axis=-1), y, t_len, l_len, blank)
    if norm_by_times:
        loss = _with_grad_scale(loss, 1.0 / jnp.maximum(t_len, 1).astype(loss.dtype))
    if zero_infinity:
        loss = jnp.where(jnp.isinf(loss), 0.0, loss)
    if reduction == "mean":
        return jnp.mean(loss / l_len.astype(loss.dtype))
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


# ----------------------------------------------------------------------------- RNN-T

def _rnnt_nll(lp_blank, lp_emit, input_lengths, label_lengths):
    """-log p(label | lattice) per sample, by a scan over the anti-diagonals t + u = n.

    lp_blank: [B, T, U + 1] log-prob of blank at (t, u); lp_emit: [B, T, U] log-prob
    of emitting label u at (t, u). alpha(t, u) needs (t - 1, u) and (t, u - 1), both
    on the previous diagonal, so one scan step computes a whole diagonal.
    """
    batch, steps, width = lp_blank.shape  # width = U + 1
    u = jnp.arange(width)
    pad_emit = jnp.concatenate([jnp.full((batch, steps, 1), _NEG, lp_emit.dtype), lp_emit], axis=2)  # (B, T, U+1)

    def at(table, t):
        """table[b, t[u], u] for each u, _NEG where t[u] is outside [0, T)."""
        inside = (t >= 0) & (t < steps)
        picked = table[:, jnp.clip(t, 0, steps - 1), u]
        return jnp.where(inside[None, :], picked, _NEG)

    alpha0 = jnp.where(u == 0, 0.0, _NEG).astype(lp_blank.dtype)[None, :].repeat(batch, 0)

    def step(alpha, n):
        from_above = alpha + at(lp_blank, n - 1 - u)  # (t-1, u) -> (t, u) by a blank
        shifted = jnp.concatenate([jnp.full((batch, 1), _NEG, alpha.dtype), alpha[:, :-1]], axis=1)
        from_left = shifted + at(pad_emit, n - u)  # (t, u-1) -> (t, u) by emitting label u-1
        new = jnp.maximum(jnp.logaddexp(from_above, from_left), _NEG)
        return new, new

    _, diagonals = lax.scan(step, alpha0, jnp.arange(1, steps + width - 1))
    diagonals = jnp.concatenate([alpha0[None], diagonals], axis=0)  # (T + U, B, U + 1)
    t_last = jnp.maximum(input_lengths - 1, 0)
    final = diagonals[t_last + label_lengths, jnp.arange(batch), label_lengths]
    last_blank = lp_blank[jnp.arange(batch), t_last, label_lengths]
    return -(final + last_blank)


def rnnt_loss(input, label, input_lengths, label_lengths, blank=0, fastemit_lambda=0.001, reduction="mean",
              name=None):
    """RNN transducer loss (Paddle's `F.rnnt_loss`, warp-transducer semantics).

    Args:
      input: [B, T, U + 1, C] joint-network log-probabilities, used as given
        (Paddle's CPU kernel does not normalize them: apply log_softmax first).
      label: [B, U] int label ids, padded.
      input_lengths: [B] int, each in [1, T].
      label_lengths: [B] int, each <= U.
      blank: the blank class id in [0, C).
      fastemit_lambda: FastEmit regularization: the gradient (not the loss) of
        every label emission is scaled by 1 + fastemit_lambda.
      reduction: 'mean' (sum / batch size), 'sum' or 'none' ([B]).
      name: ignored (Paddle compatibility).

    Returns:
      The loss: a scalar, or [B] for reduction='none'.

    Example:
      >>> lp = jax.nn.log_softmax(jnp.zeros((1, 2, 2, 3)), -1)
      >>> round(float(F.rnnt_loss(lp, jnp.array([[1]]), jnp.array([2]), jnp.array([1]))), 4)
      2.6027
    """
    op = "rnnt_loss"
    _check_length_values(input_lengths, _dim(input, 1), op=op, name="input_lengths", limit_name="input.shape[1]")
    _check_length_values(label_lengths, _dim(label, 1), op=op, name="label_lengths", limit_name="label.shape[1]")
    return _rnnt_loss(input, label, input_lengths, label_lengths, blank, fastemit_lambda, reduction)


@compiled("input", "label", "input_lengths", "label_lengths")
def _rnnt_loss(input, label, input_lengths, label_lengths, blank, fastemit_lambda, reduction):
    op = "rnnt_loss"
    check_reduction(reduction, op=op)
    x = float_array(input, op=op, name="input")
    if x.ndim != 4:
        raise error(op, f"input must be [batch, max_time, max_label_length + 1, num_classes]; got "
                        f"input.shape={tuple(x.shape)}")
    batch, steps, width, classes = x.shape
    y = _int_array(label, op=op, name="label")
    if y.ndim != 2 or y.shape != (batch, width - 1):
        raise error(op, f"label must be [batch, max_label_length] = ({batch}, {width - 1}) to fit "
                        f"input.shape={tuple(x.shape)}; got label.shape={tuple(y.shape)}")
    if not 0 <= blank < classes:
        raise error(op, f"blank={blank} must be a class id in [0, {classes})")
    if fastemit_lambda < 0:
        raise error(op, f"fastemit_lambda must be >= 0; got {fastemit_lambda}")
    t_len = _lengths(input_lengths, batch, op=op, name="input_lengths")
    l_len = _lengths(label_lengths, batch, op=op, name="label_lengths")
    lp_blank = x[..., blank]
    safe = jnp.clip(y, 0, classes - 1).astype(jnp.int32)
    lp_emit = jnp.take_along_axis(x[:, :, :-1, :], safe[:, None, :, None], axis=3)[..., 0]  # (B, T, U)
    if fastemit_lambda:
        lp_emit = _with_grad_scale(lp_emit, 1.0 + fastemit_lambda)
    loss = _rnnt_nll(lp_blank, lp_emit, t_len, l_len)
    if reduction == "mean":
        return jnp.sum(loss) / batch
    if reduction == "sum":
        return jnp.sum(loss)
    return loss
