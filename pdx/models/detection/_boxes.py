"""Box arithmetic on (x1, y1, x2, y2) boxes: IoU, GIoU loss, point-distance encoding.

Boxes are corner-format arrays whose last axis holds (x1, y1, x2, y2) in
pixels, with x2 >= x1 and y2 >= y1; areas are (x2 - x1) * (y2 - y1) (no +1).
"""

from __future__ import annotations

import jax.numpy as jnp

__all__ = ["box_area", "box_iou", "giou_loss", "distance_to_box", "box_to_distance"]

_REDUCTIONS = ("none", "mean", "sum")


def _check_boxes(boxes, op: str, name: str):
    boxes = jnp.asarray(boxes)
    if boxes.ndim < 1 or boxes.shape[-1] != 4:
        raise ValueError(f"{op}: {name} must have a last axis of 4 (x1, y1, x2, y2); got shape {boxes.shape}")
    if not jnp.issubdtype(boxes.dtype, jnp.floating):
        boxes = boxes.astype(jnp.float32)
    return boxes


def box_area(boxes):
    """Areas of (..., 4) corner boxes: (x2 - x1) * (y2 - y1).

    Example:
      >>> float(box_area(jnp.array([0.0, 0.0, 2.0, 3.0])))
      6.0
    """
    boxes = _check_boxes(boxes, "box_area", "boxes")
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def box_iou(boxes1, boxes2):
    """Pairwise IoU of two sets of corner boxes.

    Args:
      boxes1: (N, 4) boxes.
      boxes2: (M, 4) boxes.

    Returns:
      (N, M) IoU; 0 where both boxes are empty.

    Example:
      >>> box_iou(jnp.array([[0.0, 0, 2, 2]]), jnp.array([[1.0, 0, 3, 2]])).tolist()
      [[0.3333333432674408]]
    """
    boxes1 = _check_boxes(boxes1, "box_iou", "boxes1")
    boxes2 = _check_boxes(boxes2, "box_iou", "boxes2")
    a = boxes1[..., :, None, :]
    b = boxes2[..., None, :, :]
    wh = jnp.clip(jnp.minimum(a[..., 2:], b[..., 2:]) - jnp.maximum(a[..., :2], b[..., :2]), 0)
    inter = wh[..., 0] * wh[..., 1]
    union = box_area(a) + box_area(b) - inter
    return jnp.where(union > 0, inter / jnp.where(union > 0, union, 1), 0.0)


def giou_loss(pred, target, *, reduction: str = "none", eps: float = 1e-7):
    """Generalized IoU loss, 1 - GIoU, of matching pairs of corner boxes.

    GIoU = IoU - (|C| - |A u B|) / |C|, C the smallest box enclosing both; the
    loss is in [0, 2] and has a gradient even for disjoint boxes.

    Args:
      pred: (..., 4) predicted boxes.
      target: (..., 4) target boxes, same shape.
      reduction: 'none' (per pair, shape (...)), 'mean' or 'sum'.
      eps: added to the union and the enclosing area.

    Returns:
      The loss, reduced as `reduction` says.

    Example:
      >>> float(giou_loss(jnp.array([0.0, 0, 1, 1]), jnp.array([2.0, 0, 3, 1])))
      1.3333333730697632
    """
    op = "giou_loss"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction={reduction!r} must be one of {_REDUCTIONS}")
    pred = _check_boxes(pred, op, "pred")
    target = _check_boxes(target, op, "target")
    if pred.shape != target.shape:
        raise ValueError(f"{op}: pred.shape={pred.shape} and target.shape={target.shape} must be equal "
                         "(pairs of boxes); use box_iou for all pairs")
    lo = jnp.maximum(pred[..., :2], target[..., :2])
    hi = jnp.minimum(pred[..., 2:], target[..., 2:])
    wh = jnp.clip(hi - lo, 0)
    inter = wh[..., 0] * wh[..., 1]
    union = box_area(pred) + box_area(target) - inter
    iou = inter / (union + eps)
    c = jnp.maximum(pred[..., 2:], target[..., 2:]) - jnp.minimum(pred[..., :2], target[..., :2])
    enclosing = c[..., 0] * c[..., 1]
    loss = 1 - (iou - (enclosing - union) / (enclosing + eps))
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def distance_to_box(points, distances):
    """Boxes from points and their (left, top, right, bottom) distances: FCOS's decoding.

    Args:
      points: (..., 2) (x, y) locations.
      distances: (..., 4) non-negative distances to the four sides.

    Returns:
      (..., 4) corner boxes.
    """
    return jnp.concatenate([points - distances[..., :2], points + distances[..., 2:]], axis=-1)


def box_to_distance(points, boxes):
    """(left, top, right, bottom) distances from points to box sides; negative outside the box.

    Args:
      points: (P, 2) (x, y) locations.
      boxes: (M, 4) corner boxes.

    Returns:
      (P, M, 4) distances, the inverse of `distance_to_box`.
    """
    p = points[:, None, :]
    b = boxes[None, :, :]
    return jnp.concatenate([p - b[..., :2], b[..., 2:] - p], axis=-1)
