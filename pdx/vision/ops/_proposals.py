"""Region proposals: generate_proposals and distribute_fpn_proposals (Paddle's
`paddle.vision.ops`). Both return data-sized outputs, so they run eagerly; the
per-box arithmetic (decoding, clipping, IoU, level assignment) is JAX."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from pdx.vision.ops._common import float_array
from pdx.vision.ops._nms import _iou_matrix, _require_eager

__all__ = ["generate_proposals", "distribute_fpn_proposals"]

_BBOX_CLIP = math.log(1000.0 / 16.0)  # largest log-scale a delta may apply (Detectron's bound)


def _decode(anchors, deltas, variances, offset):
    w = anchors[:, 2] - anchors[:, 0] + offset
    h = anchors[:, 3] - anchors[:, 1] + offset
    cx, cy = anchors[:, 0] + 0.5 * w, anchors[:, 1] + 0.5 * h
    d = deltas * variances
    pcx, pcy = d[:, 0] * w + cx, d[:, 1] * h + cy
    pw = jnp.exp(jnp.minimum(d[:, 2], _BBOX_CLIP)) * w
    ph = jnp.exp(jnp.minimum(d[:, 3], _BBOX_CLIP)) * h
    return jnp.stack([pcx - pw / 2, pcy - ph / 2, pcx + pw / 2 - offset, pcy + ph / 2 - offset], -1)


@functools.partial(jax.jit, static_argnums=(5, 6, 7))
def _candidates(scores, deltas, anchors, variances, img_size, top_n, pixel_offset, min_size):
    """One image's best `top_n` anchors decoded and clipped, their scores, and which are big enough."""
    offset = 1.0 if pixel_offset else 0.0
    s = jnp.transpose(scores, (1, 2, 0)).reshape(-1)
    d = jnp.transpose(deltas, (1, 2, 0)).reshape(-1, 4)
    order = jnp.argsort(-s, stable=True)[:top_n]
    props = _decode(anchors[order], d[order], variances[order], offset)
    im_h, im_w = img_size[0], img_size[1]
    props = jnp.stack([jnp.clip(props[:, 0], 0, im_w - offset), jnp.clip(props[:, 1], 0, im_h - offset),
                       jnp.clip(props[:, 2], 0, im_w - offset), jnp.clip(props[:, 3], 0, im_h - offset)], -1)
    ws = props[:, 2] - props[:, 0] + offset
    hs = props[:, 3] - props[:, 1] + offset
    keep = (ws >= min_size) & (hs >= min_size)
    if pixel_offset:
        keep &= (props[:, 0] + ws / 2 <= im_w) & (props[:, 1] + hs / 2 <= im_h)
    return props, s[order], keep


@functools.partial(jax.jit, static_argnums=(3,))
def _adaptive_nms(boxes, threshold, eta, normalized):
    """Greedy NMS over boxes in priority order; with eta < 1 the threshold shrinks
    by eta after each kept box while above 0.5 (Paddle's adaptive NMS)."""
    iou = _iou_matrix(boxes, boxes, normalized)
    n = boxes.shape[0]

    def body(i, state):
        kept, thr = state
        ok = jnp.all(~kept | (iou[i] <= thr))
        kept = kept.at[i].set(ok)
        thr = jnp.where(ok & (eta < 1.0) & (thr > 0.5), thr * eta, thr)
        return kept, thr

    return jax.lax.fori_loop(0, n, body, (jnp.zeros((n,), bool), jnp.asarray(threshold, boxes.dtype)))[0]


def generate_proposals(scores, bbox_deltas, img_size, anchors, variances, pre_nms_top_n=6000, post_nms_top_n=1000,
                       nms_thresh=0.5, min_size=0.1, eta=1.0, pixel_offset=False, return_rois_num=False, name=None):
    """RPN proposals (Paddle's `paddle.vision.ops.generate_proposals`): decode the
    anchors with the deltas, clip to the image, drop small boxes, NMS, keep the best.

    Args:
      scores: [N, A, H, W] objectness.
      bbox_deltas: [N, 4A, H, W] box deltas.
      img_size: [N, 2] (height, width) of each image.
      anchors, variances: [H, W, A, 4].
      pre_nms_top_n, post_nms_top_n: candidates before / proposals after NMS per image.
      nms_thresh: NMS IoU threshold. Default 0.5.
      min_size: smallest kept width / height (at least 1). Default 0.1.
      eta: adaptive-NMS factor (1: plain NMS).
      pixel_offset: widths count both end pixels (+1). Default False.
      return_rois_num: also return the count per image.

    Returns:
      (rpn_rois [R, 4], rpn_roi_probs [R, 1], rpn_rois_num [N] or None); eager only.
      An image with no box left contributes one all-zero row, as in Paddle.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import generate_proposals
      >>> anchors = jnp.tile(jnp.array([0.0, 0, 8, 8]), (2, 2, 1, 1))
      >>> rois, probs, num = generate_proposals(jnp.ones((1, 1, 2, 2)), jnp.zeros((1, 4, 2, 2)),
      ...     jnp.array([[16.0, 16]]), anchors, jnp.ones_like(anchors), return_rois_num=True)
      >>> rois.shape, num.tolist()
      ((1, 4), [1])
    """
    op = "generate_proposals"
    scores = float_array(scores, op, "scores", ndim=4)
    deltas = float_array(bbox_deltas, op, "bbox_deltas", ndim=4).astype(scores.dtype)
    anchors = float_array(anchors, op, "anchors", last=4).reshape(-1, 4).astype(scores.dtype)
    variances = float_array(variances, op, "variances", last=4).reshape(-1, 4).astype(scores.dtype)
    img_size = float_array(img_size, op, "img_size", ndim=2, last=2).astype(scores.dtype)
    _require_eager(op, scores, deltas, anchors, variances, img_size)
    n, a, h, w = scores.shape
    if deltas.shape != (n, 4 * a, h, w) or anchors.shape[0] != a * h * w or variances.shape != anchors.shape:
        raise ValueError(f"generate_proposals: with scores {tuple(scores.shape)} need bbox_deltas {(n, 4 * a, h, w)} "
                         f"and anchors/variances [{h}, {w}, {a}, 4]; got {tuple(deltas.shape)}, "
                         f"{tuple(anchors.shape)}, {tuple(variances.shape)}")
    min_size = max(float(min_size), 1.0)
    all_rois, all_probs, nums = [], [], []
    top_n = int(pre_nms_top_n) if 0 < pre_nms_top_n < a * h * w else a * h * w
    for i in range(n):
        props, probs, keep = _candidates(scores[i], deltas[i], anchors, variances, img_size[i], top_n,
                                         bool(pixel_offset), min_size)
        keep = np.flatnonzero(np.asarray(keep))
        if keep.size == 0:
            all_rois.append(jnp.zeros((1, 4), scores.dtype))
            all_probs.append(jnp.zeros((1, 1), scores.dtype))
            nums.append(1)
            continue
        props, probs = props[keep], probs[keep]
        if nms_thresh > 0:
            kept = np.flatnonzero(np.asarray(_adaptive_nms(props, float(nms_thresh), float(eta), not pixel_offset)))
            props, probs = props[kept], probs[kept]
        if post_nms_top_n > 0:
            props, probs = props[:post_nms_top_n], probs[:post_nms_top_n]
        all_rois.append(props)
        all_probs.append(probs[:, None])
        nums.append(props.shape[0])
    rois_num = jnp.asarray(nums, jnp.int32) if return_rois_num else None
    return jnp.concatenate(all_rois), jnp.concatenate(all_probs), rois_num


def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale, pixel_offset=False,
                             rois_num=None, name=None):
    """Assign RoIs to FPN levels by scale (Paddle's `paddle.vision.ops.distribute_fpn_proposals`):
    level = floor(refer_level + log2(sqrt(area) / refer_scale)), clamped to [min_level, max_level].

    Args:
      fpn_rois: [R, 4] boxes (x1, y1, x2, y2).
      min_level, max_level: the level range (max > min > 0).
      refer_level, refer_scale: the level a box of side `refer_scale` goes to.
      pixel_offset: widths count both end pixels (+1). Default False.
      rois_num: optional [N] boxes per image; then per-level counts per image are returned.

    Returns:
      (multi_rois: list of [R_l, 4] per level, restore_ind [R, 1] int32 (row of each
      input box in the concatenated levels), rois_num_per_level: list of [N] or None); eager only.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import distribute_fpn_proposals
      >>> rois = jnp.array([[0.0, 0, 10, 10], [0, 0, 300, 300]])
      >>> multi, restore, nums = distribute_fpn_proposals(rois, 2, 5, 4, 224, rois_num=jnp.array([2]))
      >>> [m.shape[0] for m in multi]
      [1, 0, 1, 0]
    """
    op = "distribute_fpn_proposals"
    if not (min_level > 0 and max_level > min_level and max_level - min_level + 1 < 100):
        raise ValueError(f"distribute_fpn_proposals: need 0 < min_level < max_level with fewer than 100 levels; "
                         f"got min_level={min_level}, max_level={max_level}")
    rois = float_array(fpn_rois, op, "fpn_rois", ndim=2, last=4)
    _require_eager(op, rois, rois_num)
    offset = 1.0 if pixel_offset else 0.0
    w = rois[:, 2] - rois[:, 0] + offset
    h = rois[:, 3] - rois[:, 1] + offset
    area = jnp.where((rois[:, 2] < rois[:, 0]) | (rois[:, 3] < rois[:, 1]), 0.0, w * h)
    level = jnp.floor(jnp.log2(jnp.sqrt(area) / refer_scale + 1e-8) + refer_level)
    level = np.asarray(jnp.clip(level, min_level, max_level)).astype(np.int64)
    r = rois.shape[0]
    if rois_num is not None:
        counts = np.asarray(rois_num).astype(np.int64).reshape(-1)
        if counts.sum() != r:
            raise ValueError(f"distribute_fpn_proposals: rois_num={counts.tolist()} sums to {counts.sum()}, but "
                             f"fpn_rois has {r} rows")
        image = np.repeat(np.arange(counts.size), counts)
    multi, order, per_level = [], [], []
    for lvl in range(min_level, max_level + 1):
        idx = np.flatnonzero(level == lvl)
        multi.append(rois[idx])
        order.append(idx)
        if rois_num is not None:
            per_level.append(jnp.asarray(np.bincount(image[idx], minlength=counts.size), jnp.int32))
    restore = np.empty(r, np.int32)
    restore[np.concatenate(order)] = np.arange(r, dtype=np.int32)
    return multi, jnp.asarray(restore[:, None]), per_level if rois_num is not None else None
