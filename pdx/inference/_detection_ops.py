"""Paddle's detection post-processing ops (PaddleDetection's exported heads) as pure JAX functions.

`yolo_box`, `multiclass_nms3` and `matrix_nms` entries of the translator's op registry (`_ops.OPS`). NMS outputs
have a data-dependent row count: they are `PaddedRows`, fixed-size rows per image and the real count of each,
which the predictor trims on the host.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = ["PaddedRows", "matrix_nms", "multiclass_nms3", "yolo_box"]


class PaddedRows(NamedTuple):
    """A value whose row count depends on the data (multiclass_nms3's output), as static shapes: `rows` holds up to
    `rows.shape[1]` rows per image (N, P, ...), of which the first `counts[i]` are real (the rest are zeros).

    `to_numpy()` (host side) gives the array Paddle returns: the real rows of every image, concatenated.
    """

    rows: jax.Array  # (N, P, ...)
    counts: jax.Array  # (N,) int32

    def to_numpy(self) -> np.ndarray:
        rows, counts = np.asarray(self.rows), np.asarray(self.counts).reshape(-1)
        return np.concatenate([rows[i, :int(k)] for i, k in enumerate(counts)] or [rows[:0, 0]], axis=0)


def yolo_box(ins, a):
    """pd_op.yolo_box: YOLOv3 head (N, A*(5+C) [+A IoU channels first], H, W) -> boxes (N, A*H*W, 4), scores
    (N, A*H*W, C), with Paddle's CPU arithmetic; a box whose confidence is below conf_thresh is all zeros."""
    x, img_size = ins
    anchors = [int(v) for v in a["anchors"]]
    an, classes = len(anchors) // 2, int(a["class_num"])
    iou_aware = bool(a.get("iou_aware", False))
    n, c, h, w = x.shape
    if len(anchors) % 2 or c != an * (5 + classes + int(iou_aware)):
        raise ValueError(f"yolo_box: the input has {c} channels; anchors={anchors} (pairs) and class_num={classes} "
                         f"need {an} * (5 + {classes}{' + 1 IoU' if iou_aware else ''}) channels")
    from pdx.vision.ops import yolo_box  # one implementation of Paddle's arithmetic

    return yolo_box(x, img_size, anchors, classes, float(a["conf_thresh"]), int(a["downsample_ratio"]),
                    bool(a.get("clip_bbox", True)), scale_x_y=float(a.get("scale_x_y", 1.0)), iou_aware=iou_aware,
                    iou_aware_factor=float(a.get("iou_aware_factor", 0.5)))


def _pairwise_iou(b, normalized):
    """Paddle's JaccardOverlap between every pair of boxes (..., K, 4) -> (..., K, K) (+1 sizes unnormalized)."""
    one = np.float32(0.0 if normalized else 1.0)
    p, q = b[..., :, None, :], b[..., None, :, :]

    def area(box):
        bw, bh = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
        return jnp.where((box[..., 2] < box[..., 0]) | (box[..., 3] < box[..., 1]), 0, (bw + one) * (bh + one))
    apart = (q[..., 0] > p[..., 2]) | (q[..., 2] < p[..., 0]) | (q[..., 1] > p[..., 3]) | (q[..., 3] < p[..., 1])
    iw = jnp.minimum(p[..., 2], q[..., 2]) - jnp.maximum(p[..., 0], q[..., 0]) + one
    ih = jnp.minimum(p[..., 3], q[..., 3]) - jnp.maximum(p[..., 1], q[..., 1]) + one
    inter = iw * ih
    return jnp.where(apart, 0, inter / (area(p) + area(q) - inter))


class _Nms(NamedTuple):
    """multiclass_nms3's attributes, resolved (hashable: the static argument of the compiled NMS)."""

    score_threshold: float
    nms_threshold: float
    eta: float
    normalized: bool
    background: int
    k1: int  # candidates per class: min(nms_top_k, M), M when nms_top_k is -1
    keep_top_k: int
    width: int  # rows per image in the padded output


def _nms_one_image(boxes, scores, cfg: _Nms):
    """One image's multiclass NMS: (M, 4) boxes, (C, M) scores -> (rows (width, 6), index (width,), count)."""
    c, m = scores.shape
    k1, width = cfg.k1, cfg.width
    valid = scores > np.float32(cfg.score_threshold)
    if 0 <= cfg.background < c:
        valid = valid.at[cfg.background].set(False)
    # per class, the candidates above the threshold by score, descending; ties keep the box order (stable_sort)
    order = jnp.argsort(jnp.where(valid, -scores, jnp.inf), axis=-1, stable=True)[:, :k1]  # (C, K1)
    cand_valid = jnp.take_along_axis(valid, order, axis=-1)
    cand_score = jnp.take_along_axis(scores, order, axis=-1)
    cand_box = boxes[order]  # (C, K1, 4)
    iou = _pairwise_iou(cand_box, cfg.normalized)  # (C, K1, K1)
    eta = np.float32(cfg.eta)

    def step(i, carry):
        kept, thr = carry
        # NaN overlaps (degenerate normalized boxes) fail `overlap <= threshold`, as in Paddle's NMSFast
        ok = cand_valid[:, i] & jnp.all(jnp.where(kept, iou[:, i, :] <= thr[:, None], True), axis=-1)
        kept = kept.at[:, i].set(ok)
        if eta < 1:
            thr = jnp.where(ok & (thr > 0.5), thr * eta, thr)
        return kept, thr
    thr0 = jnp.full((c,), np.float32(cfg.nms_threshold), scores.dtype)
    kept, _ = lax.fori_loop(0, k1, step, (jnp.zeros((c, k1), bool), thr0))
    kept, flat_score = kept.reshape(-1), cand_score.reshape(-1)  # in (label, NMS rank) order, Paddle's output order
    if cfg.keep_top_k > -1:  # the keep_top_k best by score (stable: ties by label, then rank), output in label order
        by_score = jnp.argsort(jnp.where(kept, -flat_score, jnp.inf), stable=True)
        rank = jnp.zeros_like(by_score).at[by_score].set(jnp.arange(by_score.size, dtype=by_score.dtype))
        kept = kept & (rank < cfg.keep_top_k)
    pick = jnp.argsort(~kept, stable=True)[:width]
    count = jnp.sum(kept).astype(jnp.int32)
    real = jnp.arange(width) < count
    label = (pick // k1).astype(scores.dtype)
    rows = jnp.concatenate([label[:, None], flat_score[pick][:, None], cand_box.reshape(-1, 4)[pick]], axis=-1)
    index = order.reshape(-1)[pick].astype(jnp.int32)
    return jnp.where(real[:, None], rows, 0), jnp.where(real, index, 0), count


@partial(jax.jit, static_argnames="cfg")  # compiled once per attribute set, so op-by-op runs reuse it too
def _nms_batch(boxes, scores, cfg: _Nms):
    n, m = boxes.shape[0], boxes.shape[1]
    rows, index, counts = jax.vmap(lambda b, s: _nms_one_image(b, s, cfg))(boxes, scores)
    index = index + (jnp.arange(n, dtype=jnp.int32) * m)[:, None]  # the row in the N * M boxes
    index = jnp.where(jnp.arange(cfg.width)[None, :] < counts[:, None], index, 0)
    return rows, index[..., None], counts


def multiclass_nms3(ins, a):
    """pd_op.multiclass_nms3 on (N, M, 4) boxes and (N, C, M) scores.

    Out (rows of label, score, x1, y1, x2, y2) and Index (the box's row in the N*M boxes) have a data-dependent
    row count: they come back as `PaddedRows` (up to keep_top_k rows per image, or C * min(nms_top_k, M) when
    keep_top_k is -1) with NmsRoisNum, the real rows per image, which the predictor trims to on the host.
    """
    boxes, scores = ins[0], ins[1]
    if len(ins) > 2 and ins[2] is not None or scores.ndim != 3 or boxes.ndim != 3:
        raise ValueError(f"multiclass_nms3: boxes {list(boxes.shape)} and scores {list(scores.shape)} with "
                         f"RoisNum={'given' if len(ins) > 2 and ins[2] is not None else 'none'}: pdx translates "
                         "the batched form only, boxes (N, M, 4) and scores (N, C, M), without RoisNum")
    n, m, size = boxes.shape
    if size != 4 or scores.shape[0] != n or scores.shape[2] != m:
        raise ValueError(f"multiclass_nms3: boxes {list(boxes.shape)} must be (N, M, 4) (polygon boxes of 8, 16 "
                         f"or 24 numbers are not supported) and scores {list(scores.shape)} (N, C, M) for the same "
                         "N and M")
    c = scores.shape[1]
    top_k = int(a.get("nms_top_k", -1))
    k1 = m if top_k < 0 else min(top_k, m)
    keep_top_k = int(a.get("keep_top_k", -1))
    width = c * k1 if keep_top_k < 0 else min(keep_top_k, c * k1)
    if k1 == 0 or width == 0:
        counts = jnp.zeros((n,), jnp.int32)
        return (PaddedRows(jnp.zeros((n, 0, 6), scores.dtype), counts),
                PaddedRows(jnp.zeros((n, 0, 1), jnp.int32), counts), counts)
    cfg = _Nms(float(a["score_threshold"]), float(a.get("nms_threshold", 0.3)), float(a.get("nms_eta", 1.0)),
               bool(a.get("normalized", True)), int(a.get("background_label", 0)), k1, keep_top_k, width)
    rows, index, counts = _nms_batch(boxes, scores, cfg)
    return PaddedRows(rows, counts), PaddedRows(index, counts), counts


def matrix_nms(ins, a):
    """pd_op.matrix_nms on (N, M, 4) boxes and (N, C, M) scores: Out and Index as `PaddedRows` (up to keep_top_k
    rows per image), RoisNum the real rows per image (pdx.vision.ops.matrix_nms_padded, Paddle's arithmetic)."""
    from pdx.vision.ops import matrix_nms_padded  # one implementation with pdx.vision.ops.matrix_nms

    boxes, scores = ins[0], ins[1]
    if boxes.ndim != 3 or scores.ndim != 3:
        raise ValueError(f"matrix_nms: boxes {list(boxes.shape)} must be (N, M, 4) and scores {list(scores.shape)} "
                         "(N, C, M)")
    rows, index, counts = matrix_nms_padded(
        boxes, scores, a["score_threshold"], a["post_threshold"], int(a.get("nms_top_k", -1)),
        int(a.get("keep_top_k", -1)), bool(a.get("use_gaussian", False)), float(a.get("gaussian_sigma", 2.0)),
        int(a.get("background_label", 0)), bool(a.get("normalized", True)))
    return PaddedRows(rows, counts), PaddedRows(index, counts), counts
