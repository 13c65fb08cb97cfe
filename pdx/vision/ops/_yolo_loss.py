"""YOLOv3 loss (Paddle's `paddle.vision.ops.yolo_loss`), a fixed-shape JAX
composition: jit-able and differentiable with respect to `x`."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from pdx.vision.ops._common import float_array

__all__ = ["yolo_loss"]


def _sce(x, label):
    """Sigmoid cross-entropy with logits."""
    return jnp.maximum(x, 0.0) - x * label + jnp.log1p(jnp.exp(-jnp.abs(x)))


def _center_iou(b1, b2):
    """IoU of center-size boxes (..., 4) = (cx, cy, w, h), broadcasting."""
    def overlap(c1, w1, c2, w2):
        return jnp.minimum(c1 + w1 / 2, c2 + w2 / 2) - jnp.maximum(c1 - w1 / 2, c2 - w2 / 2)

    iw = overlap(b1[..., 0], b1[..., 2], b2[..., 0], b2[..., 2])
    ih = overlap(b1[..., 1], b1[..., 3], b2[..., 1], b2[..., 3])
    inter = jnp.where((iw < 0) | (ih < 0), 0.0, iw * ih)
    return inter / (b1[..., 2] * b1[..., 3] + b2[..., 2] * b2[..., 3] - inter)


def yolo_loss(x, gt_box, gt_label, anchors, anchor_mask, class_num, ignore_thresh, downsample_ratio, gt_score=None,
              use_label_smooth=True, name=None, scale_x_y=1.0):
    """YOLOv3 loss per image (Paddle's `paddle.vision.ops.yolo_loss`).

    Each ground-truth box is assigned to the anchor (over all anchors) whose shape
    fits it best; when that anchor is in `anchor_mask`, the cell holding the box
    center gets the location loss (sigmoid cross-entropy on x/y, L1 on log w/h,
    weighted by 2 - w*h), the class loss and a positive objectness target.
    Predictions overlapping any ground truth by more than `ignore_thresh` get no
    negative objectness loss.

    Args:
      x: [N, len(anchor_mask) * (5 + class_num), H, W] head output.
      gt_box: [N, B, 4] (cx, cy, w, h) relative to the input image; a box with
        w or h <= 0 is padding.
      gt_label: [N, B] int class ids.
      anchors: [w0, h0, w1, h1, ...] all anchors in pixels.
      anchor_mask: indices of the anchors this head predicts.
      class_num: number of classes.
      ignore_thresh: IoU above which a prediction is not a negative.
      downsample_ratio: input size / feature size.
      gt_score: optional [N, B] weights (mixup); default 1.
      use_label_smooth: class targets 1 - s / s with s = min(1 / class_num, 1 / 40). Default True.
      scale_x_y: center scaling of the predicted boxes used for the ignore test. Default 1.0.

    Returns:
      [N] loss per image; jit-able, differentiable in x. When two ground truths
      fall into the same cell and anchor, the later one sets the objectness target.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import yolo_loss
      >>> x = jnp.zeros((1, 2 * 7, 4, 4))
      >>> gt = jnp.array([[[0.5, 0.5, 0.3, 0.4]]])
      >>> yolo_loss(x, gt, jnp.array([[1]]), [10, 13, 16, 30], [0, 1], 2, 0.7, 8).shape
      (1,)
    """
    op = "yolo_loss"
    x = float_array(x, op, "x", ndim=4)
    gt_box = float_array(gt_box, op, "gt_box", ndim=3, last=4).astype(x.dtype)
    gt_label = jnp.asarray(gt_label).astype(jnp.int32)
    anchors = tuple(float(a) for a in anchors)
    anchor_mask = tuple(int(m) for m in anchor_mask)
    n, c, h, w = x.shape
    if len(anchors) % 2 or any(not 0 <= m < len(anchors) // 2 for m in anchor_mask):
        raise ValueError(f"yolo_loss: anchors={list(anchors)} must be (w, h) pairs and anchor_mask="
                         f"{list(anchor_mask)} must index them")
    if c != len(anchor_mask) * (5 + class_num):
        raise ValueError(f"yolo_loss: x has {c} channels; {len(anchor_mask)} masked anchors and class_num="
                         f"{class_num} need {len(anchor_mask) * (5 + class_num)}")
    if gt_box.shape[0] != n or gt_label.shape != gt_box.shape[:2]:
        raise ValueError(f"yolo_loss: gt_box must be [N={n}, B, 4] and gt_label [N, B]; got "
                         f"{tuple(gt_box.shape)} and {tuple(gt_label.shape)}")
    score = jnp.ones(gt_label.shape, x.dtype) if gt_score is None else jnp.asarray(gt_score, x.dtype)
    return _yolo_loss(x, gt_box, gt_label, score, anchors, anchor_mask, int(class_num), float(ignore_thresh),
                      int(downsample_ratio), bool(use_label_smooth), float(scale_x_y))


@functools.partial(jax.jit, static_argnums=tuple(range(4, 11)))
def _yolo_loss(x, gt_box, gt_label, gt_score, anchors, anchor_mask, class_num, ignore_thresh, downsample_ratio,
               use_label_smooth, scale_x_y):
    n, _, h, w = x.shape
    m, b = len(anchor_mask), gt_box.shape[1]
    input_size = float(downsample_ratio * h)
    p = x.reshape(n, m, 5 + class_num, h, w)
    anc = jnp.asarray(anchors, x.dtype).reshape(-1, 2)
    mask_anc = anc[jnp.asarray(anchor_mask)]
    if use_label_smooth:
        smooth = min(1.0 / class_num, 1.0 / 40)
        label_pos, label_neg = 1.0 - smooth, smooth
    else:
        label_pos, label_neg = 1.0, 0.0
    bias = -0.5 * (scale_x_y - 1.0)

    # Ignore mask: predictions overlapping any real ground truth by more than ignore_thresh.
    gx = jnp.arange(w, dtype=x.dtype)[None, None, None, :]
    gy = jnp.arange(h, dtype=x.dtype)[None, None, :, None]
    pred = jnp.stack([(gx + jax.nn.sigmoid(p[:, :, 0]) * scale_x_y + bias) / w,
                      (gy + jax.nn.sigmoid(p[:, :, 1]) * scale_x_y + bias) / h,
                      jnp.exp(p[:, :, 2]) * mask_anc[None, :, 0, None, None] / input_size,
                      jnp.exp(p[:, :, 3]) * mask_anc[None, :, 1, None, None] / input_size], -1)  # [N, m, H, W, 4]
    real = (gt_box[..., 2] >= 1e-6) & (gt_box[..., 3] >= 1e-6)  # [N, B]
    ious = _center_iou(pred[:, :, :, :, None, :], gt_box[:, None, None, None, :, :])  # [N, m, H, W, B]
    best = jnp.max(jnp.where(real[:, None, None, None, :], ious, 0.0), axis=-1)
    obj_mask = jnp.where(jax.lax.stop_gradient(best) > ignore_thresh, -1.0, 0.0)

    # Anchor assignment by shape alone (both boxes centered at the origin).
    shapes = jnp.concatenate([jnp.zeros_like(gt_box[..., :2]), gt_box[..., 2:]], -1)
    anchor_boxes = jnp.concatenate([jnp.zeros_like(anc), anc / input_size], -1)  # [A, 4]
    best_n = jnp.argmax(_center_iou(anchor_boxes[None, None], shapes[:, :, None]), axis=-1)  # [N, B]
    lookup = jnp.full((anc.shape[0],), -1, jnp.int32).at[jnp.asarray(anchor_mask)].set(jnp.arange(m))
    mask_idx = lookup[best_n]
    assigned = real & (mask_idx >= 0)
    gi = (gt_box[..., 0] * w).astype(jnp.int32)
    gj = (gt_box[..., 1] * h).astype(jnp.int32)
    mi = jnp.maximum(mask_idx, 0)
    rows = jnp.arange(n)[:, None]
    cell = p[rows, mi, :, jnp.clip(gj, 0, h - 1), jnp.clip(gi, 0, w - 1)]  # [N, B, 5 + class_num]

    tx = gt_box[..., 0] * h - gi  # Paddle uses the grid height for both axes
    ty = gt_box[..., 1] * h - gj
    best_anchor = anc[best_n]
    tw = jnp.log(gt_box[..., 2] * input_size / best_anchor[..., 0])
    th = jnp.log(gt_box[..., 3] * input_size / best_anchor[..., 1])
    weight = (2.0 - gt_box[..., 2] * gt_box[..., 3]) * gt_score
    loc = (_sce(cell[..., 0], tx) + _sce(cell[..., 1], ty) + jnp.abs(cell[..., 2] - tw)
           + jnp.abs(cell[..., 3] - th)) * weight
    targets = jnp.where(jax.nn.one_hot(gt_label, class_num, dtype=bool), label_pos, label_neg)
    cls = _sce(cell[..., 5:], targets).sum(-1) * gt_score
    per_box = jnp.where(assigned, jnp.where(jnp.isfinite(loc), loc, 0.0) + cls, 0.0)

    # Positive objectness targets, ground truths applied in order (a later one overwrites).
    for t in range(b):
        current = obj_mask[jnp.arange(n), mi[:, t], gj[:, t].clip(0, h - 1), gi[:, t].clip(0, w - 1)]
        obj_mask = obj_mask.at[jnp.arange(n), mi[:, t], gj[:, t].clip(0, h - 1), gi[:, t].clip(0, w - 1)].set(
            jnp.where(assigned[:, t], gt_score[:, t], current))
    obj = p[:, :, 4]
    obj_loss = jnp.where(obj_mask > 1e-5, _sce(obj, 1.0) * obj_mask, jnp.where(obj_mask > -0.5, _sce(obj, 0.0), 0.0))
    return per_box.sum(-1) + obj_loss.sum((1, 2, 3))
