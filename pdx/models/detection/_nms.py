"""Greedy non-maximum suppression with fixed output shapes (jit- and export-friendly).

The output is always `max_output_size` indices padded with -1 plus a count, so
NMS compiles once, runs inside a jitted or exported program, and lowers to
plain StableHLO (a sort, an IoU matrix and a `while` loop).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from pdx.models.detection._boxes import box_iou

__all__ = ["NMSResult", "nms", "batched_nms"]


class NMSResult(NamedTuple):
    """Kept boxes: `indices` (max_output_size,) int32 into the input, best score first,
    padded with -1 after the first `count` (a scalar int32)."""

    indices: jax.Array
    count: jax.Array


def _check(boxes, scores, op, iou_threshold, max_output_size):
    boxes = jnp.asarray(boxes)
    scores = jnp.asarray(scores)
    if boxes.ndim != 2 or boxes.shape[-1] != 4:
        raise ValueError(f"{op}: boxes must be (N, 4) corner boxes; got shape {boxes.shape}")
    if scores.shape != boxes.shape[:1]:
        raise ValueError(f"{op}: scores must be (N,) with N={boxes.shape[0]} (one per box); got shape {scores.shape}")
    if not 0.0 <= float(iou_threshold) <= 1.0:
        raise ValueError(f"{op}: iou_threshold={iou_threshold!r} must be in [0, 1]")
    n = boxes.shape[0]
    max_output_size = n if max_output_size is None else int(max_output_size)
    if max_output_size < 1:
        raise ValueError(f"{op}: max_output_size={max_output_size!r} must be >= 1 (or None for all boxes)")
    return boxes.astype(jnp.float32), scores.astype(jnp.float32), max_output_size


def nms(boxes, scores, *, iou_threshold: float = 0.5, max_output_size: int | None = None,
        score_threshold: float | None = None) -> NMSResult:
    """Greedy NMS: keep the best box, drop boxes with IoU > `iou_threshold` to it, repeat.

    Equal scores are taken in input order (a stable sort), so results are
    deterministic. Boxes with a score <= `score_threshold` (or a NaN / -inf
    score) are never kept.

    Args:
      boxes: (N, 4) corner boxes (x1, y1, x2, y2).
      scores: (N,) scores.
      iou_threshold: boxes overlapping a kept box by more than this are suppressed.
      max_output_size: the fixed output length (default N); NMS stops once this many are kept.
      score_threshold: optional lower bound (exclusive) on kept scores.

    Returns:
      `NMSResult(indices, count)`: (max_output_size,) int32 indices, best first,
      padded with -1, and the number kept.

    Example:
      >>> b = jnp.array([[0.0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]])
      >>> r = nms(b, jnp.array([0.9, 0.8, 0.7]), iou_threshold=0.5)
      >>> r.indices.tolist(), int(r.count)
      ([0, 2, -1], 2)
    """
    boxes, scores, max_out = _check(boxes, scores, "nms", iou_threshold, max_output_size)
    n = boxes.shape[0]
    order = jnp.argsort(-scores, stable=True)
    sorted_boxes = boxes[order]
    sorted_scores = scores[order]
    valid = sorted_scores > (-jnp.inf if score_threshold is None else score_threshold)
    overlaps = box_iou(sorted_boxes, sorted_boxes) > iou_threshold   # (N, N), row i: what box i suppresses

    def cond(carry):
        i, _, kept, _ = carry
        return (i < n) & (kept < max_out)

    def body(carry):
        i, alive, kept, out = carry
        take = alive[i]
        alive = alive & ~(take & overlaps[i])
        out = jnp.where(take, out.at[kept].set(order[i].astype(jnp.int32), mode="drop"), out)
        return i + 1, alive, kept + take.astype(jnp.int32), out

    init = (jnp.int32(0), valid, jnp.int32(0), jnp.full((max_out,), -1, jnp.int32))
    _, _, count, indices = jax.lax.while_loop(cond, body, init)
    return NMSResult(indices, count)


def batched_nms(boxes, scores, labels, *, iou_threshold: float = 0.5, max_output_size: int | None = None,
                score_threshold: float | None = None) -> NMSResult:
    """Per-class NMS: boxes suppress only boxes of the same label.

    Each class's boxes are shifted by a class-dependent offset larger than
    every coordinate so different classes never overlap, then one `nms` runs;
    the result equals running `nms` per class and merging by score.

    Args:
      boxes: (N, 4) corner boxes.
      scores: (N,) scores.
      labels: (N,) integer class ids (>= 0).
      iou_threshold, max_output_size, score_threshold: as in `nms`.

    Returns:
      `NMSResult(indices, count)` as `nms`.

    Example:
      >>> b = jnp.array([[0.0, 0, 10, 10], [1, 1, 10, 10]])
      >>> batched_nms(b, jnp.array([0.9, 0.8]), jnp.array([0, 1])).indices.tolist()
      [0, 1]
    """
    boxes, scores, _ = _check(boxes, scores, "batched_nms", iou_threshold, max_output_size)
    labels = jnp.asarray(labels)
    if labels.shape != scores.shape:
        raise ValueError(f"batched_nms: labels must be (N,) like scores {scores.shape}; got shape {labels.shape}")
    finite = jnp.where(jnp.isfinite(boxes), boxes, 0.0)
    span = jnp.max(jnp.abs(finite)) * 2 + 1
    shifted = boxes + (labels.astype(jnp.float32) * span)[:, None]
    return nms(shifted, scores, iou_threshold=iou_threshold, max_output_size=max_output_size,
               score_threshold=score_threshold)
