"""Paddle's `nn/functional/extension.py` and friends: sequence_mask, gather_tree,
diag_embed, temporal_shift, class_center_sample, pdist, swiglu, gumbel_softmax.

Random ops (gumbel_softmax, class_center_sample) take a keyword-only `key=`
like dropout: eager calls split one off the global generator (`pdx.seed`),
traced calls must pass one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx._dtype import convert_dtype
from pdx._random import next_key
from pdx.nn.functional._args import array, compiled, error, float_array, is_int, spatial_format
from pdx._args import normalize_axis

__all__ = [
    "class_center_sample", "diag_embed", "gather_tree", "gumbel_softmax", "pdist", "sequence_mask",
    "swiglu", "temporal_shift",
]


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """mask[..., j] = j < x[...]: a [*x.shape, maxlen] mask from lengths.

    Args:
      x: integer lengths, any shape.
      maxlen: mask length; default max(x) (eager only: a data-dependent shape).
      dtype: output dtype (Paddle's default int64 becomes int32 unless x64 is enabled).
      name: ignored (Paddle compatibility).

    Returns:
      A tensor of shape [*x.shape, maxlen].

    Example:
      >>> F.sequence_mask(jnp.array([1, 3]), 4).tolist()
      [[1, 0, 0, 0], [1, 1, 1, 0]]
    """
    x = array(x, op="sequence_mask")
    if maxlen is None:
        if isinstance(x, jax.core.Tracer):
            raise error("sequence_mask", "maxlen=None needs concrete lengths (the output shape depends on max(x)); "
                                         "pass maxlen under jit")
        maxlen = int(jnp.max(x)) if x.size else 0
    elif isinstance(maxlen, (jax.Array, np.ndarray)):
        maxlen = int(np.asarray(maxlen).reshape(()))
    if not is_int(maxlen) or maxlen < 0:
        raise error("sequence_mask", f"maxlen must be a non-negative int or None; got maxlen={maxlen!r}")
    return _sequence_mask(x, int(maxlen), convert_dtype(dtype))


@compiled("x")
def _sequence_mask(x, maxlen, dtype):
    return (jnp.arange(maxlen) < x[..., None]).astype(dtype)


@compiled("ids", "parents")
def gather_tree(ids, parents):
    """Backtrace beam-search ids through their parents into full sequences.

    Args:
      ids: [max_time, batch, beam] selected token ids per step.
      parents: [max_time, batch, beam] the beam each id came from.

    Returns:
      [max_time, batch, beam] token sequences, one per final beam.

    Example:
      >>> ids = jnp.array([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]])
      >>> par = jnp.array([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]])
      >>> F.gather_tree(ids, par)[:, 0].tolist()
      [[2, 2], [3, 3], [0, 1]]
    """
    ids = array(ids, op="gather_tree", name="ids")
    parents = array(parents, op="gather_tree", name="parents")
    if ids.ndim != 3 or tuple(parents.shape) != tuple(ids.shape):
        raise error("gather_tree", f"ids and parents must both be [max_time, batch, beam]; got "
                                   f"ids.shape={tuple(ids.shape)}, parents.shape={tuple(parents.shape)}")
    if not jnp.issubdtype(parents.dtype, jnp.integer):
        raise error("gather_tree", f"parents must be an integer tensor; got parents.dtype={parents.dtype}")
    beam = jnp.broadcast_to(jnp.arange(ids.shape[2], dtype=parents.dtype), ids.shape[1:])

    def step(beam, t):
        token = jnp.take_along_axis(ids[t], beam, axis=1)
        return jnp.take_along_axis(parents[t], beam, axis=1), token

    _, tokens = jax.lax.scan(step, beam, jnp.arange(ids.shape[0] - 1, -1, -1))
    return tokens[::-1]


@compiled("input")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002  (Paddle's name)
    """Put the last axis of `input` on a diagonal of new dims `dim1`, `dim2`.

    Args:
      input: [..., n] values.
      offset: diagonal offset (> 0 above the main diagonal).
      dim1, dim2: the two output dims holding the matrix.

    Returns:
      A tensor of rank input.ndim + 1 with [n + |offset|, n + |offset|] matrices.

    Example:
      >>> F.diag_embed(jnp.array([1.0, 2.0])).tolist()
      [[1.0, 0.0], [0.0, 2.0]]
    """
    x = array(input, op="diag_embed", name="input")
    if x.ndim < 1:
        raise error("diag_embed", f"input must have at least 1 dim; got input.shape={tuple(x.shape)}")
    rank = x.ndim + 1
    d1 = normalize_axis(dim1, rank, op="nn.functional.diag_embed")
    d2 = normalize_axis(dim2, rank, op="nn.functional.diag_embed")
    if d1 == d2:
        raise error("diag_embed", f"dim1={dim1} and dim2={dim2} name the same dim of the rank-{rank} output")
    n = x.shape[-1]
    m = n + abs(int(offset))
    rows = np.arange(n) + max(-int(offset), 0)
    cols = np.arange(n) + max(int(offset), 0)
    out = jnp.zeros((*x.shape[:-1], m, m), x.dtype).at[..., rows, cols].set(x)
    # out is [..., m(dim1), m(dim2)]: move the two matrix dims to dim1 and dim2.
    return jnp.moveaxis(out, (-2, -1), (d1, d2))


@compiled("x")
def temporal_shift(x, seg_num, shift_ratio=0.25, name=None, data_format="NCHW"):
    """Temporal Shift Module: shift a fraction of channels one frame back and forward in time.

    x holds N clips of seg_num frames as [N * seg_num, C, H, W]. Channels
    [0, C * r) take the previous frame's values, [C * r, 2 * C * r) the next
    frame's (zeros at the clip's edges), the rest are unchanged.

    Args:
      x: [N * seg_num, C, H, W] (or NHWC).
      seg_num: frames per clip.
      shift_ratio: r, the fraction shifted each way.
      name: ignored (Paddle compatibility).
      data_format: 'NCHW' or 'NHWC'.

    Returns:
      A tensor like x.

    Example:
      >>> F.temporal_shift(jnp.ones((4, 4, 1, 1)), seg_num=2).shape
      (4, 4, 1, 1)
    """
    x = array(x, op="temporal_shift")
    is_last = spatial_format(data_format, 2, op="temporal_shift")
    if not is_int(seg_num) or seg_num < 1:
        raise error("temporal_shift", f"seg_num must be a positive int; got seg_num={seg_num!r}")
    if not 0 <= shift_ratio <= 0.5:
        raise error("temporal_shift", f"shift_ratio must be in [0, 0.5]; got shift_ratio={shift_ratio!r}")
    if x.ndim != 4 or x.shape[0] % seg_num:
        raise error("temporal_shift", f"x must be 4-D with x.shape[0] divisible by seg_num={seg_num}; "
                                      f"got x.shape={tuple(x.shape)}")
    if is_last:
        x = jnp.moveaxis(x, -1, 1)
    nt, c, h, w = x.shape
    v = x.reshape(nt // seg_num, seg_num, c, h, w)
    c1 = int(c * shift_ratio)
    c2 = int(c * 2 * shift_ratio)
    zero = jnp.zeros_like(v[:, :1])
    from_prev = jnp.concatenate([zero, v[:, :-1]], axis=1)
    from_next = jnp.concatenate([v[:, 1:], zero], axis=1)
    out = jnp.concatenate([from_prev[:, :, :c1], from_next[:, :, c1:c2], v[:, :, c2:]], axis=2).reshape(nt, c, h, w)
    return jnp.moveaxis(out, 1, -1) if is_last else out


def class_center_sample(label, num_classes, num_samples, group=None, *, key=None):
    """Sample class centers for partial-FC training (single device).

    Keeps every class present in `label` (sorted) and adds randomly chosen
    other classes until `num_samples` classes are kept; labels are remapped
    to their position in the kept list. Eager only: the number of kept classes
    depends on the labels' values.

    Args:
      label: [N] int class ids in [0, num_classes).
      num_classes: total number of classes.
      num_samples: classes to keep (all positives are kept even if more).
      group: must be None or False (model-parallel sampling is not supported).
      key: jax PRNG key for the negatives; from the global generator if None (pdx-only keyword).

    Returns:
      (remapped_label [N], sampled_class_center [max(num_samples, #positives)]).

    Example:
      >>> remapped, centers = F.class_center_sample(jnp.array([3, 7, 3]), 10, 4)
      >>> remapped.tolist(), centers[:2].tolist()
      ([0, 1, 0], [3, 7])
    """
    op = "class_center_sample"
    label = array(label, op=op, name="label")
    if group not in (None, False):
        raise error(op, f"group={group!r}: only single-device sampling is supported (group=None)")
    if isinstance(label, jax.core.Tracer):
        raise error(op, "needs concrete labels: the number of sampled classes depends on their values (eager only)")
    if label.ndim != 1 or not jnp.issubdtype(label.dtype, jnp.integer):
        raise error(op, f"label must be a 1-D int tensor; got label.shape={tuple(label.shape)}, dtype={label.dtype}")
    if not is_int(num_classes) or num_classes < 1 or not is_int(num_samples) or not 0 < num_samples <= num_classes:
        raise error(op, f"need 0 < num_samples <= num_classes; got num_classes={num_classes!r}, "
                        f"num_samples={num_samples!r}")
    values = np.asarray(label)
    if values.size and (values.min() < 0 or values.max() >= num_classes):
        raise error(op, f"label values must lie in [0, {num_classes}); got min {values.min()}, max {values.max()}")
    positives = np.unique(values)
    centers = positives
    extra = num_samples - positives.size
    if extra > 0:
        is_negative = np.ones(num_classes, bool)
        is_negative[positives] = False
        negatives = np.flatnonzero(is_negative)
        pick = jax.random.permutation(next_key(key, op=op), negatives.size)[:extra]
        centers = np.concatenate([positives, negatives[np.asarray(pick)]])
    remapped = np.searchsorted(positives, values)
    return jnp.asarray(remapped, label.dtype), jnp.asarray(centers, label.dtype)


@compiled("x")
def pdist(x, p=2.0, name=None):
    """p-norm distances between all pairs of rows of x: the upper triangle, row by row.

    Args:
      x: [N, M] input.
      p: the norm order (>= 0; inf for the max norm).
      name: ignored (Paddle compatibility).

    Returns:
      [N * (N - 1) / 2] distances, pairs (0, 1), (0, 2), ..., (1, 2), ...

    Example:
      >>> F.pdist(jnp.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
      [5.0, 1.0, 4.242640495300293]
    """
    x = float_array(x, op="pdist")
    if x.ndim != 2:
        raise error("pdist", f"expects a 2-D x [N, M]; got x.shape={tuple(x.shape)}")
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) or p < 0:
        raise error("pdist", f"p must be a number >= 0; got p={p!r}")
    i, j = np.triu_indices(x.shape[0], k=1)
    diff = jnp.abs(x[i] - x[j])
    if p == 0:
        return jnp.sum((diff != 0).astype(x.dtype), axis=-1)
    if np.isinf(p):
        return jnp.max(diff, axis=-1)
    if p == 2:
        # Safe at zero distance: the gradient of sqrt(0) would be NaN.
        sq = jnp.sum(diff * diff, axis=-1)
        safe = jnp.where(sq > 0, sq, 1.0)
        return jnp.where(sq > 0, jnp.sqrt(safe), 0.0)
    total = jnp.sum(diff ** p, axis=-1)
    safe = jnp.where(total > 0, total, 1.0)
    return jnp.where(total > 0, safe ** (1.0 / p), 0.0)


@compiled("x", "y")
def swiglu(x, y=None, name=None):
    """SwiGLU: silu(x) * y; with y None, x is split in half on the last axis.

    Args:
      x: gate input (or [..., 2 * d] holding gate and value).
      y: value input shaped like x, or None.
      name: ignored (Paddle compatibility).

    Returns:
      silu(x) * y, or [..., d] when y is None.

    Example:
      >>> F.swiglu(jnp.zeros((1, 4))).tolist()
      [[0.0, 0.0]]
    """
    x = float_array(x, op="swiglu")
    if y is None:
        if x.shape[-1] % 2:
            raise error("swiglu", f"with y=None the last dim of x must be even; got x.shape={tuple(x.shape)}")
        x, y = jnp.split(x, 2, axis=-1)
    else:
        y = float_array(y, op="swiglu", name="y")
        if tuple(y.shape) != tuple(x.shape):
            raise error("swiglu", f"x.shape={tuple(x.shape)} and y.shape={tuple(y.shape)} must match")
    return jax.nn.silu(x) * y


def gumbel_softmax(x, temperature=1.0, hard=False, axis=-1, name=None, *, key=None):
    """Softmax of (x + Gumbel noise) / temperature; `hard` gives one-hot samples.

    With hard=True the forward value is the one-hot of the argmax and the
    gradient is the soft sample's (straight-through), as in Paddle.

    Args:
      x: unnormalized log-probabilities.
      temperature: > 0; lower is closer to one-hot.
      hard: return one-hot vectors.
      axis: the class axis.
      name: ignored (Paddle compatibility).
      key: jax PRNG key for the noise; from the global generator if None, required under jit
        (pdx-only keyword).

    Returns:
      A tensor like x whose slices along `axis` sum to 1.

    Example:
      >>> y = F.gumbel_softmax(jnp.zeros((2, 3)), hard=True, key=jax.random.key(0))
      >>> y.sum(axis=-1).tolist()
      [1.0, 1.0]
    """
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.integer, np.floating)) \
            or not temperature > 0:
        raise error("gumbel_softmax", f"temperature must be a number > 0; got temperature={temperature!r}")
    return _gumbel_softmax(x, next_key(key, op="gumbel_softmax"), float(temperature), bool(hard), axis)


@compiled("x", "key")
def _gumbel_softmax(x, key, temperature, hard, axis):
    x = float_array(x, op="gumbel_softmax")
    ax = normalize_axis(axis, max(x.ndim, 1), op="nn.functional.gumbel_softmax")
    noise = jax.random.gumbel(key, x.shape, x.dtype)
    soft = jax.nn.softmax((x + noise) / temperature, axis=ax)
    if not hard:
        return soft
    one_hot = (jnp.arange(x.shape[ax]).reshape([-1] + [1] * (x.ndim - 1 - ax))
               == jnp.expand_dims(jnp.argmax(soft, axis=ax), ax)).astype(x.dtype)
    return one_hot - jax.lax.stop_gradient(soft) + soft
