"""COCO-style box mAP in numpy: AP at IoU 0.5:0.95 with 101-point interpolated precision.

Follows the COCO evaluation protocol for boxes (area range "all", no crowd
regions): per image and class the detections are sorted by score (stable)
and cut to `max_dets`; each is matched greedily to the unmatched ground truth
of highest IoU >= the threshold; precision is made monotone and read at 101
recall points; AP averages them; classes without ground truth are left out
of the mean.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

__all__ = ["DetectionMetrics", "coco_map"]

IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
RECALL_POINTS = np.linspace(0.0, 1.0, 101)


class DetectionMetrics(NamedTuple):
    """mAP@[.5:.95], mAP@0.5, mAP@0.75 and the per-class AP@[.5:.95] (NaN: class without ground truth)."""

    map: float
    map50: float
    map75: float
    per_class: np.ndarray


def _iou_xyxy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    wh = np.clip(np.minimum(a[:, None, 2:], b[None, :, 2:]) - np.maximum(a[:, None, :2], b[None, :, :2]), 0, None)
    inter = wh[..., 0] * wh[..., 1]
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def _match(ious: np.ndarray, threshold: float) -> np.ndarray:
    """Greedy matching of score-sorted detections (rows) to ground truth (columns): 1 where a row matched."""
    n_det, n_gt = ious.shape
    taken = np.zeros(n_gt, bool)
    matched = np.zeros(n_det, bool)
    cap = min(threshold, 1 - 1e-10)
    for d in range(n_det):
        best, best_iou = -1, cap
        for g in range(n_gt):
            # ">=" on ties, so the last ground truth of the best IoU wins, as in COCO's evaluator
            if not taken[g] and ious[d, g] >= best_iou:
                best, best_iou = g, ious[d, g]
        if best >= 0:
            taken[best] = True
            matched[d] = True
    return matched


def _average_precision(scores: np.ndarray, hits: np.ndarray, n_gt: int) -> float:
    order = np.argsort(-scores, kind="mergesort")
    tp = np.cumsum(hits[order])
    fp = np.cumsum(~hits[order])
    recall = tp / n_gt
    precision = tp / np.maximum(tp + fp, np.spacing(1))
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    idx = np.searchsorted(recall, RECALL_POINTS, side="left")
    values = np.where(idx < len(precision), precision[np.minimum(idx, len(precision) - 1)], 0.0) if len(precision) \
        else np.zeros_like(RECALL_POINTS)
    return float(values.mean())


def _as_list(value, name: str, n: int | None):
    value = list(value)
    if n is not None and len(value) != n:
        raise ValueError(f"coco_map: {name} has {len(value)} images, the predictions have {n}; pass one entry per image")
    return value


def coco_map(pred_boxes: Sequence, pred_scores: Sequence, pred_labels: Sequence, gt_boxes: Sequence,
             gt_labels: Sequence, *, num_classes: int | None = None, max_dets: int = 100) -> DetectionMetrics:
    """COCO box mAP over a set of images (numpy; boxes are corner format x1, y1, x2, y2).

    Args:
      pred_boxes: per image, (D, 4) predicted boxes.
      pred_scores: per image, (D,) scores.
      pred_labels: per image, (D,) integer classes.
      gt_boxes: per image, (G, 4) ground-truth boxes.
      gt_labels: per image, (G,) integer classes.
      num_classes: classes 0..num_classes-1 (default: 1 + the largest label seen).
      max_dets: detections per image and class kept (highest scores), COCO's 100.

    Returns:
      `DetectionMetrics(map, map50, map75, per_class)`.

    Example:
      >>> box = [np.array([[0.0, 0, 10, 10]])]
      >>> coco_map(box, [np.array([0.9])], [np.array([0])], box, [np.array([0])]).map
      1.0
    """
    pred_boxes = _as_list(pred_boxes, "pred_boxes", None)
    n = len(pred_boxes)
    pred_scores = _as_list(pred_scores, "pred_scores", n)
    pred_labels = _as_list(pred_labels, "pred_labels", n)
    gt_boxes = _as_list(gt_boxes, "gt_boxes", n)
    gt_labels = _as_list(gt_labels, "gt_labels", n)
    seen = [int(np.max(x)) for x in list(pred_labels) + list(gt_labels) if np.size(x)]
    if num_classes is None:
        num_classes = max(seen, default=-1) + 1
    elif seen and max(seen) >= num_classes:
        raise ValueError(f"coco_map: a label {max(seen)} is >= num_classes={num_classes}; labels must be 0..num_classes-1")

    ap = np.full((num_classes, len(IOU_THRESHOLDS)), np.nan)
    for c in range(num_classes):
        scores, hits, n_gt = [], [], 0
        for i in range(n):
            gl = np.asarray(gt_labels[i]).reshape(-1)
            gb = np.asarray(gt_boxes[i], np.float64).reshape(-1, 4)[gl == c]
            pl = np.asarray(pred_labels[i]).reshape(-1)
            keep = pl == c
            pb = np.asarray(pred_boxes[i], np.float64).reshape(-1, 4)[keep]
            ps = np.asarray(pred_scores[i], np.float64).reshape(-1)[keep]
            order = np.argsort(-ps, kind="mergesort")[:max_dets]
            pb, ps = pb[order], ps[order]
            n_gt += len(gb)
            ious = _iou_xyxy(pb, gb)
            scores.append(ps)
            hits.append(np.stack([_match(ious, t) for t in IOU_THRESHOLDS]) if len(ps)
                        else np.zeros((len(IOU_THRESHOLDS), 0), bool))
        if n_gt == 0:
            continue
        scores = np.concatenate(scores)
        hits = np.concatenate(hits, axis=1)
        ap[c] = [_average_precision(scores, hits[t], n_gt) for t in range(len(IOU_THRESHOLDS))]
    has_gt = ~np.isnan(ap[:, 0])
    if not has_gt.any():
        return DetectionMetrics(float("nan"), float("nan"), float("nan"), np.full(num_classes, np.nan))
    return DetectionMetrics(map=float(ap[has_gt].mean()), map50=float(ap[has_gt, 0].mean()),
                            map75=float(ap[has_gt, 5].mean()), per_class=ap.mean(axis=1))
