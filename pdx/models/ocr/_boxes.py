"""Host-side (numpy/scipy) box geometry for DB text detection: targets, post-processing, metrics.

Rendered text is horizontal, so a text region is an axis-aligned box (x0, y0, x1, y1) in pixel
coordinates: pixel (row i, column j) covers [j, j + 1) x [i, i + 1) and is inside a box when its
center (j + 0.5, i + 0.5) is. DB's polygon offsetting (Vatti clipping of the text polygon by
D = A (1 - r^2) / L) becomes moving each side of the box by D, and the distance to the text border
becomes the distance to the box's edges. Rotated or curved text would need real polygons.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np


def _boxes(boxes, *, op: str) -> np.ndarray:
    b = np.asarray(boxes, np.float64).reshape(-1, 4) if np.size(boxes) else np.zeros((0, 4))
    if np.any(b[:, 2] < b[:, 0]) or np.any(b[:, 3] < b[:, 1]):
        raise ValueError(f"{op}: boxes must be (x0, y0, x1, y1) with x1 >= x0 and y1 >= y0; got {b.tolist()}")
    return b


def shrink_offset(boxes, *, shrink_ratio: float = 0.4) -> np.ndarray:
    """DB's offset D = area (1 - r^2) / perimeter of each box, (k,)."""
    b = _boxes(boxes, op="shrink_offset")
    w, h = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    return w * h * (1 - shrink_ratio ** 2) / np.maximum(2 * (w + h), 1e-9)


def shrink_boxes(boxes, *, shrink_ratio: float = 0.4) -> np.ndarray:
    """Boxes with each side moved inwards by DB's offset D (the probability-map target), (k, 4)."""
    b = _boxes(boxes, op="shrink_boxes")
    d = shrink_offset(b, shrink_ratio=shrink_ratio)[:, None]
    return b + np.concatenate([d, d, -d, -d], axis=1)


def unclip_boxes(boxes, *, unclip_ratio: float | None = None, shrink_ratio: float = 0.4) -> np.ndarray:
    """Expand detected (shrunk) boxes back to text size, (k, 4).

    With `unclip_ratio` (DB's rule) each side moves out by area * unclip_ratio / perimeter.
    With None the expansion inverts `shrink_boxes(shrink_ratio)` exactly: for a box w x h shrunk
    by D to (w - 2D) x (h - 2D), D solves (8 - 4c) D^2 + 2 (1 - c)(w' + h') D - c w' h' = 0 with
    c = 1 - r^2 (the shrink equation written in the shrunk sizes w', h').
    """
    b = _boxes(boxes, op="unclip_boxes")
    w, h = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    if unclip_ratio is None:
        c = 1 - shrink_ratio ** 2
        qa, qb, qc = 8 - 4 * c, 2 * (1 - c) * (w + h), -c * w * h
        d = (-qb + np.sqrt(qb ** 2 - 4 * qa * qc)) / (2 * qa)
    else:
        d = w * h * unclip_ratio / np.maximum(2 * (w + h), 1e-9)
    d = d[:, None]
    return b + np.concatenate([-d, -d, d, d], axis=1)


def _distance_to_border(xs, ys, box) -> np.ndarray:
    """Distance from points to the boundary of an axis-aligned box (inside or outside it)."""
    x0, y0, x1, y1 = box
    dx_out = np.maximum(np.maximum(x0 - xs, xs - x1), 0.0)
    dy_out = np.maximum(np.maximum(y0 - ys, ys - y1), 0.0)
    outside = np.hypot(dx_out, dy_out)
    inside = np.minimum(np.minimum(xs - x0, x1 - xs), np.minimum(ys - y0, y1 - ys))
    return np.where((dx_out > 0) | (dy_out > 0), outside, np.maximum(inside, 0.0))


class DBTargets(NamedTuple):
    """Training targets of one image (each (H, W) float32)."""

    prob: np.ndarray          # 1 inside the shrunk boxes
    prob_mask: np.ndarray     # where the probability / binary losses count (all 1: no ignored text)
    thresh: np.ndarray        # thresh_min + (thresh_max - thresh_min) * (1 - distance to border / D)
    thresh_mask: np.ndarray   # 1 inside the expanded boxes (the border region the L1 loss sees)


def db_targets(boxes, *, height: int, width: int, shrink_ratio: float = 0.4, thresh_min: float = 0.3,
               thresh_max: float = 0.7) -> DBTargets:
    """DB's four target maps for the text boxes of one image.

    Args:
      boxes: (k, 4) x0, y0, x1, y1 in pixels.
      height, width: the map size (the image size).
      shrink_ratio: r in D = A (1 - r^2) / L.
      thresh_min, thresh_max: range of the threshold map (high on the text border).

    Returns:
      DBTargets.

    Example:
      >>> t = db_targets([[10, 10, 50, 22]], height=32, width=64)
      >>> int(t.prob.sum()), float(t.thresh.max()) <= 0.7
      (168, True)
    """
    b = _boxes(boxes, op="db_targets")
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64) + 0.5
    prob = np.zeros((height, width), np.float32)
    canvas = np.zeros((height, width), np.float64)
    thresh_mask = np.zeros((height, width), np.float32)
    offsets = shrink_offset(b, shrink_ratio=shrink_ratio)
    for box, inner, d in zip(b, shrink_boxes(b, shrink_ratio=shrink_ratio), offsets):
        prob[(xs >= inner[0]) & (xs < inner[2]) & (ys >= inner[1]) & (ys < inner[3])] = 1.0
        outer = box + np.array([-d, -d, d, d])
        ring = (xs >= outer[0]) & (xs < outer[2]) & (ys >= outer[1]) & (ys < outer[3])
        thresh_mask[ring] = 1.0
        near = 1.0 - np.clip(_distance_to_border(xs, ys, box) / max(d, 1e-6), 0.0, 1.0)
        canvas = np.maximum(canvas, np.where(ring, near, 0.0))
    thresh = (thresh_min + (thresh_max - thresh_min) * canvas).astype(np.float32)
    return DBTargets(prob, np.ones_like(prob), thresh, thresh_mask)


def stack_targets(boxes_per_image: Sequence, *, height: int, width: int, **kwargs) -> DBTargets:
    """`db_targets` of a batch, each map stacked to (N, H, W)."""
    per = [db_targets(b, height=height, width=width, **kwargs) for b in boxes_per_image]
    return DBTargets(*(np.stack(maps) for maps in zip(*per)))


def boxes_from_prob_map(prob, *, thresh: float = 0.3, box_thresh: float = 0.6, unclip_ratio: float | None = 1.5,
                        shrink_ratio: float = 0.4, min_size: int = 2):
    """DB post-processing of one probability map: threshold, connected components, boxes unclipped.

    Pixels with probability > `thresh` are grouped into 8-connected components
    (`scipy.ndimage.label`); each component's bounding box is scored by the mean probability
    inside it (DB's fast box score), kept when the score is >= `box_thresh` and both sides are
    >= `min_size` pixels, then expanded back by `unclip_boxes`.

    Args:
      prob: (H, W) probability map.
      thresh: probability above which a pixel is text.
      box_thresh: lowest mean probability of a kept box.
      unclip_ratio: DB's expansion (area * ratio / perimeter per side). A trained map is wider
        than the shrunk box where it crosses `thresh`, so DB's 1.5 fits better than None (the
        exact inverse of `shrink_boxes`, right for a map that is exactly the shrunk boxes).
      shrink_ratio: the targets' shrink ratio (used when unclip_ratio is None).
      min_size: smallest side, in pixels, of a kept component.

    Returns:
      (boxes (k, 4) float32 x0, y0, x1, y1; scores (k,) float32).

    Example:
      >>> p = np.zeros((32, 64)); p[14:18, 12:48] = 0.9
      >>> boxes_from_prob_map(p)[0].round(1)      # doctest: +SKIP
    """
    from scipy import ndimage

    p = np.asarray(prob, np.float32)
    if p.ndim != 2:
        raise ValueError(f"boxes_from_prob_map: prob must be one (H, W) map; got shape {p.shape}")
    labels, _ = ndimage.label(p > thresh, structure=np.ones((3, 3)))
    boxes, scores = [], []
    for sl in ndimage.find_objects(labels):
        if sl is None:
            continue
        rows, cols = sl
        if rows.stop - rows.start < min_size or cols.stop - cols.start < min_size:
            continue
        score = float(p[sl].mean())
        if score < box_thresh:
            continue
        boxes.append((cols.start, rows.start, cols.stop, rows.stop))
        scores.append(score)
    if not boxes:
        return np.zeros((0, 4), np.float32), np.zeros((0,), np.float32)
    out = unclip_boxes(np.asarray(boxes, np.float64), unclip_ratio=unclip_ratio, shrink_ratio=shrink_ratio)
    out[:, 0::2] = np.clip(out[:, 0::2], 0, p.shape[1])
    out[:, 1::2] = np.clip(out[:, 1::2], 0, p.shape[0])
    return out.astype(np.float32), np.asarray(scores, np.float32)


def _box_iou(a, b) -> np.ndarray:
    """Pairwise IoU of boxes a (n, 4) and b (m, 4): (n, m), on the host (pdx.models.detection.box_iou is the jnp one)."""
    a, b = _boxes(a, op="box_iou"), _boxes(b, op="box_iou")
    x0 = np.maximum(a[:, None, 0], b[None, :, 0])
    y0 = np.maximum(a[:, None, 1], b[None, :, 1])
    x1 = np.minimum(a[:, None, 2], b[None, :, 2])
    y1 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = lambda z: (z[:, 2] - z[:, 0]) * (z[:, 3] - z[:, 1])  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    return inter / np.maximum(union, 1e-12)


class DetectionMetrics(NamedTuple):
    """recall = matched ground-truth boxes / all; precision = matched detections / all detections."""

    recall: float
    precision: float
    hmean: float
    ground_truth: int
    detections: int


def detection_metrics(predictions: Sequence, ground_truth: Sequence, *, iou_threshold: float = 0.5) -> DetectionMetrics:
    """Recall and precision at an IoU threshold, with one-to-one matching (highest IoU first) per image.

    Example:
      >>> detection_metrics([np.array([[0, 0, 10, 10]])], [np.array([[0, 0, 10, 12], [20, 20, 30, 30]])])
      DetectionMetrics(recall=0.5, precision=1.0, hmean=0.6666666666666666, ground_truth=2, detections=1)
    """
    if len(predictions) != len(ground_truth):
        raise ValueError(f"detection_metrics: {len(predictions)} images of predictions, {len(ground_truth)} of "
                         "ground truth; pass one box array per image for both")
    matched = n_gt = n_pred = 0
    for pred, gt in zip(predictions, ground_truth):
        pred, gt = _boxes(pred, op="detection_metrics"), _boxes(gt, op="detection_metrics")
        n_gt, n_pred = n_gt + len(gt), n_pred + len(pred)
        if not len(gt) or not len(pred):
            continue
        iou = _box_iou(gt, pred)
        used_gt, used_pred = set(), set()
        for flat in np.argsort(-iou, axis=None):
            g, p = divmod(int(flat), iou.shape[1])
            if iou[g, p] < iou_threshold:
                break
            if g not in used_gt and p not in used_pred:
                used_gt.add(g)
                used_pred.add(p)
        matched += len(used_gt)
    recall = matched / max(n_gt, 1)
    precision = matched / max(n_pred, 1)
    hmean = 2 * recall * precision / max(recall + precision, 1e-12)
    return DetectionMetrics(recall, precision, hmean, n_gt, n_pred)
