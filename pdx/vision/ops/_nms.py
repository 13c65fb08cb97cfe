"""Non-maximum suppression: nms and matrix_nms (Paddle's `paddle.vision.ops`).

Both return as many boxes as survive, as Paddle does, so their outputs are
sized by the data: they run eagerly. The suppression itself is a fixed-shape
JAX computation (`nms_keep_mask`-style masks over sorted boxes); under
`pdx.jit` use `pdx.models.detection.nms`, which returns a fixed number of
indices padded with -1.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pdx.vision.ops._common import float_array, is_concrete

__all__ = ["nms", "matrix_nms", "matrix_nms_padded"]

_EAGER = ("{op} returns as many boxes as survive suppression, a size known only from the values, so it runs "
          "eagerly (outside pdx.jit); inside a compiled function use pdx.models.detection.nms, which returns "
          "a fixed number of indices padded with -1")


def _iou_matrix(a, b, normalized=True):
    """IoU [len(a), len(b)] of corner boxes; un-normalized boxes count both end pixels."""
    one = 0.0 if normalized else 1.0
    area = lambda t: (t[:, 2] - t[:, 0] + one) * (t[:, 3] - t[:, 1] + one)  # noqa: E731
    lt = jnp.maximum(a[:, None, :2], b[None, :, :2])
    rb = jnp.minimum(a[:, None, 2:], b[None, :, 2:])
    # Boxes apart on an axis do not overlap, even when the +1 of pixel boxes would bridge the gap.
    apart = jnp.any(rb < lt, axis=-1)
    wh = jnp.maximum(rb - lt + one, 0.0)
    inter = jnp.where(apart, 0.0, wh[..., 0] * wh[..., 1])
    union = area(a)[:, None] + area(b)[None, :] - inter
    return jnp.where(union > 0, inter / jnp.where(union > 0, union, 1.0), 0.0)


def _greedy_keep(suppresses):
    """Greedy NMS over boxes already in priority order: keep[i] unless a kept box
    j < i suppresses it (`suppresses[j, i]`)."""
    n = suppresses.shape[0]

    def body(i, state):
        keep, removed = state
        k = ~removed[i]
        keep = keep.at[i].set(k)
        removed = removed | (suppresses[i] & k)
        return keep, removed

    keep0 = jnp.zeros((n,), bool)
    return jax.lax.fori_loop(0, n, body, (keep0, jnp.zeros((n,), bool)))[0]


@jax.jit
def _nms_keep(sorted_boxes, cats, valid, iou_threshold):
    """Keep mask of greedy NMS over sorted boxes, suppressing within a category when `cats` is given."""
    suppresses = _iou_matrix(sorted_boxes, sorted_boxes) > iou_threshold
    if cats is not None:
        suppresses = suppresses & (cats[:, None] == cats[None, :]) & valid[:, None]
    keep = _greedy_keep(suppresses)
    return keep if valid is None else keep & valid


def _require_eager(op, *xs):
    if not is_concrete(*xs):
        raise ValueError(_EAGER.format(op=op))


def nms(boxes, iou_threshold=0.3, scores=None, category_idxs=None, categories=None, top_k=None):
    """Greedy non-maximum suppression (Paddle's `paddle.vision.ops.nms`).

    Without `scores` boxes are taken in input order; with `scores`, best first.
    With `category_idxs` and `categories`, suppression happens within each
    category (boxes of categories not listed are dropped) and `top_k` limits the
    result. As in Paddle, `top_k` only applies together with `category_idxs`.

    Args:
      boxes: [N, 4] corner boxes (x1, y1, x2, y2).
      iou_threshold: a box overlapping a kept one by more than this is dropped. Default 0.3.
      scores: optional [N] scores.
      category_idxs: optional [N] int category of each box.
      categories: the category ids to keep (needed with category_idxs).
      top_k: optional cap on the number of returned boxes.

    Returns:
      int64 indices of the kept boxes (best score first when scores are given);
      eager only (the count depends on the values).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import nms
      >>> b = jnp.array([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]])
      >>> nms(b, 0.5, jnp.array([0.9, 0.8, 0.7])).tolist()
      [0, 2]
    """
    op = "nms"
    boxes = float_array(boxes, op, "boxes", ndim=2, last=4)
    _require_eager(op, boxes, scores, category_idxs)
    n = boxes.shape[0]
    if scores is None:
        order = jnp.arange(n)
    else:
        scores = float_array(scores, op, "scores", ndim=1)
        if scores.shape[0] != n:
            raise ValueError(f"nms: scores must have one value per box ({n}); got shape {tuple(scores.shape)}")
        order = jnp.argsort(-scores, stable=True)
    cats, valid = None, None
    if scores is not None and category_idxs is not None:
        if categories is None:
            raise ValueError("nms: category_idxs needs categories, the list of category ids to keep")
        if top_k is not None and top_k > n:
            raise ValueError(f"nms: top_k={top_k} must be at most the number of boxes ({n})")
        cats = jnp.asarray(category_idxs).reshape(-1)[order]
        valid = jnp.isin(cats, jnp.asarray(list(categories), cats.dtype))
    keep = _nms_keep(boxes[order], cats, valid, float(iou_threshold))
    kept = order[np.flatnonzero(np.asarray(keep))]
    if scores is not None and category_idxs is not None and top_k is not None:
        kept = kept[:top_k]
    return kept.astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)


def _matrix_decay(boxes, scores, nms_top_k, score_threshold, use_gaussian, gaussian_sigma, normalized):
    """Matrix-NMS decayed scores for one image and class: boxes [M, 4], scores [M]
    -> (order [k], decayed [k], valid [k]) over the top-k candidates."""
    k = scores.shape[0] if nms_top_k < 0 else min(nms_top_k, scores.shape[0])
    masked = jnp.where(scores > score_threshold, scores, -jnp.inf)
    order = jnp.argsort(-masked, stable=True)[:k]
    s = masked[order]
    valid = jnp.isfinite(s)
    iou = _iou_matrix(boxes[order], boxes[order], normalized)
    upper = jnp.triu(jnp.ones((k, k), bool), 1) & valid[:, None] & valid[None, :]
    iou = jnp.where(upper, iou, 0.0)  # iou[j, i] for j < i
    iou_max = iou.max(axis=0)  # largest overlap of each box with a better one
    if use_gaussian:
        decay = jnp.exp((iou_max[:, None] ** 2 - iou ** 2) * gaussian_sigma)
    else:
        decay = (1.0 - iou) / (1.0 - iou_max[:, None])
    decay = jnp.where(upper, decay, 1.0).min(axis=0)
    return order, jnp.where(valid, s * decay, -jnp.inf), valid


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5, 6))
def _matrix_decay_all(bboxes, scores, nms_top_k, score_threshold, use_gaussian, gaussian_sigma, normalized):
    """Decayed scores for every image and class: bboxes [N, M, 4], scores [N, C, M]."""
    one = lambda b, s: _matrix_decay(b, s, nms_top_k, score_threshold, use_gaussian, gaussian_sigma,  # noqa: E731
                                     normalized)[:2]
    return jax.vmap(jax.vmap(one, (None, 0)))(bboxes, scores)


def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k, use_gaussian=False,
               gaussian_sigma=2.0, background_label=0, normalized=True, return_index=False, return_rois_num=True,
               name=None):
    """Matrix NMS (SOLOv2; Paddle's `paddle.vision.ops.matrix_nms`): every box's score
    decays by its overlap with better boxes of its class, in parallel.

    Args:
      bboxes: [N, M, 4] boxes per image.
      scores: [N, C, M] class scores.
      score_threshold: candidates need a score above it.
      post_threshold: detections need a decayed score above it.
      nms_top_k: candidates kept per class before decay (-1: all).
      keep_top_k: detections kept per image (-1: all).
      use_gaussian, gaussian_sigma: Gaussian instead of linear decay.
      background_label: class skipped (-1: none). Default 0.
      normalized: boxes in [0, 1] (no +1 in widths). Default True.
      return_index, return_rois_num: what else to return.

    Returns:
      (out [K, 6] rows (label, score, x1, y1, x2, y2), rois_num [N] or None,
      index [K, 1] into the flattened N * M boxes or None); eager only.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import matrix_nms
      >>> boxes = jnp.array([[[0.0, 0, 1, 1], [0, 0, 0.9, 1]]])
      >>> out, num, _ = matrix_nms(boxes, jnp.array([[[0.1, 0.1], [0.9, 0.8]]]), 0.05, 0.3, -1, -1)
      >>> out.shape, num.tolist()
      ((1, 6), [1])
    """
    op = "matrix_nms"
    bboxes = float_array(bboxes, op, "bboxes", ndim=3, last=4)
    scores = float_array(scores, op, "scores", ndim=3).astype(bboxes.dtype)
    _require_eager(op, bboxes, scores)
    rows, index, counts = matrix_nms_padded(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k,
                                            use_gaussian, gaussian_sigma, background_label, normalized)
    rows, index, counts = np.asarray(rows), np.asarray(index), np.asarray(counts)
    out = jnp.asarray(np.concatenate([rows[i, :c] for i, c in enumerate(counts)]) if len(counts) else
                      np.zeros((0, 6)), bboxes.dtype)
    num = jnp.asarray(counts, jnp.int32) if return_rois_num else None
    idx = jnp.asarray(np.concatenate([index[i, :c] for i, c in enumerate(counts)]) if len(counts) else
                      np.zeros((0, 1), np.int32)) if return_index else None
    return out, num, idx


def matrix_nms_padded(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k, use_gaussian=False,
                      gaussian_sigma=2.0, background_label=0, normalized=True):
    """`matrix_nms` with fixed shapes, for compiled code: (rows [N, W, 6], index [N, W, 1], counts [N]).

    Image i's detections are `rows[i, :counts[i]]` (the rest are zeros); W is the number of candidates (each
    class but the background's min(nms_top_k, M)), at most keep_top_k. `matrix_nms` is this, trimmed on the
    host. pdx's (no Paddle name).

    Example:
      >>> import jax.numpy as jnp
      >>> boxes = jnp.array([[[0.0, 0, 1, 1], [0, 0, 0.9, 1]]])
      >>> rows, index, counts = matrix_nms_padded(boxes, jnp.array([[[0.1, 0.1], [0.9, 0.8]]]), 0.05, 0.3, -1, 4)
      >>> rows.shape, counts.tolist()
      ((1, 2, 6), [1])
    """
    op = "matrix_nms_padded"
    bboxes = float_array(bboxes, op, "bboxes", ndim=3, last=4)
    scores = float_array(scores, op, "scores", ndim=3).astype(bboxes.dtype)
    n, m = bboxes.shape[:2]
    if scores.shape[0] != n or scores.shape[2] != m:
        raise ValueError(f"{op}: scores must be [N, C, M] = [{n}, C, {m}]; got {tuple(scores.shape)}")
    classes = tuple(c for c in range(scores.shape[1]) if c != background_label)
    return _matrix_nms_rows(bboxes, scores, classes, float(score_threshold), float(post_threshold), int(nms_top_k),
                            int(keep_top_k), bool(use_gaussian), float(gaussian_sigma), bool(normalized))


@functools.partial(jax.jit, static_argnums=tuple(range(2, 10)))
def _matrix_nms_rows(bboxes, scores, classes, score_threshold, post_threshold, nms_top_k, keep_top_k, use_gaussian,
                     gaussian_sigma, normalized):
    n, m = bboxes.shape[:2]
    k = m if nms_top_k < 0 else min(nms_top_k, m)
    total = len(classes) * k
    width = total if keep_top_k < 0 else min(keep_top_k, total)
    if width == 0:
        return (jnp.zeros((n, 0, 6), bboxes.dtype), jnp.zeros((n, 0, 1), jnp.int32), jnp.zeros((n,), jnp.int32))
    order, decayed = _matrix_decay_all(bboxes, scores[:, jnp.asarray(classes, jnp.int32)], nms_top_k,
                                       score_threshold, use_gaussian, gaussian_sigma, normalized)
    flat, order = decayed.reshape(n, total), order.reshape(n, total)
    valid = flat > post_threshold
    # every image's detections by decayed score, descending; ties keep (class, candidate) order
    sel = jnp.argsort(jnp.where(valid, -flat, jnp.inf), axis=-1, stable=True)[:, :width]
    counts = jnp.minimum(valid.sum(-1), width).astype(jnp.int32)
    real = jnp.arange(width)[None, :] < counts[:, None]
    box = jnp.take_along_axis(order, sel, axis=-1)
    labels = jnp.asarray(classes, bboxes.dtype)[sel // k]
    rows = jnp.concatenate([labels[..., None], jnp.take_along_axis(flat, sel, axis=-1)[..., None],
                            jax.vmap(lambda b, i: b[i])(bboxes, box)], axis=-1)
    index = box.astype(jnp.int32) + (jnp.arange(n, dtype=jnp.int32) * m)[:, None]
    return jnp.where(real[..., None], rows, 0), jnp.where(real, index, 0)[..., None], counts
