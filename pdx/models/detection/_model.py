"""FCOS: a small anchor-free one-stage detector (backbone, FPN, shared head), its targets, loss and decoding."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import pdx.nn.functional as F
from pdx import nn
from pdx._random import as_rngs
from pdx.models.detection._boxes import box_area, box_to_distance, distance_to_box, giou_loss
from pdx.models.detection._config import PRESETS, FCOSConfig
from pdx.models.detection._nms import batched_nms

__all__ = ["FCOS", "FCOSOutput", "FCOSTargets", "FCOSLosses", "Detections", "fcos_targets"]


class FCOSOutput(NamedTuple):
    """Raw head outputs over all P locations of all levels (level by level, row-major):
    cls_logits (B, P, C), distances (B, P, 4) (left, top, right, bottom) in pixels,
    centerness (B, P) logits."""

    cls_logits: jax.Array
    distances: jax.Array
    centerness: jax.Array


class FCOSTargets(NamedTuple):
    """Per-location targets of one image: labels (P,) int32 (-1: background), boxes (P, 4)
    of the assigned object, centerness (P,) (0 on background)."""

    labels: jax.Array
    boxes: jax.Array
    centerness: jax.Array


class FCOSLosses(NamedTuple):
    """The three loss terms (each normalized) and their sum."""

    total: jax.Array
    cls: jax.Array
    box: jax.Array
    centerness: jax.Array


class Detections(NamedTuple):
    """Fixed-size detections per image: boxes (B, K, 4), scores (B, K), labels (B, K) int32
    (-1 in unused slots), count (B,) int32 (slots in use, best first)."""

    boxes: jax.Array
    scores: jax.Array
    labels: jax.Array
    count: jax.Array


def fcos_targets(points, point_strides, lower, upper, gt_boxes, gt_labels, *, center_radius: float = 1.5) -> FCOSTargets:
    """FCOS target assignment for one image: center sampling plus per-level scale ranges.

    A location is a positive for an object when it lies within
    `center_radius * stride` of the box center (and inside the box), and the
    largest of its four distances to the box sides is within its level's
    [lower, upper]. A location claimed by several objects takes the smallest.

    Args:
      points: (P, 2) location centers (x, y) in pixels.
      point_strides: (P,) the stride of each location's level.
      lower, upper: (P,) the level's regression range for each location.
      gt_boxes: (M, 4) object boxes (padding rows are ignored).
      gt_labels: (M,) int classes, -1 for padding.
      center_radius: the sampling radius in strides.

    Returns:
      `FCOSTargets(labels, boxes, centerness)`.
    """
    gt_boxes = jnp.asarray(gt_boxes, jnp.float32)
    dist = box_to_distance(points, gt_boxes)                               # (P, M, 4)
    centers = (gt_boxes[:, :2] + gt_boxes[:, 2:]) / 2                      # (M, 2)
    radius = (point_strides * center_radius)[:, None, None]                # (P, 1, 1)
    lo = jnp.maximum(centers[None] - radius, gt_boxes[None, :, :2])        # (P, M, 2)
    hi = jnp.minimum(centers[None] + radius, gt_boxes[None, :, 2:])
    in_center = jnp.all(points[:, None] > lo, -1) & jnp.all(points[:, None] < hi, -1)
    reach = dist.max(-1)
    in_range = (reach >= lower[:, None]) & (reach <= upper[:, None])
    candidate = in_center & in_range & (gt_labels >= 0)[None]
    area = jnp.where(candidate, box_area(gt_boxes)[None], jnp.inf)
    owner = jnp.argmin(area, axis=1)                                       # (P,)
    positive = candidate.any(axis=1)
    d = jnp.take_along_axis(dist, owner[:, None, None], axis=1)[:, 0]      # (P, 4)
    lr, tb = d[:, 0::2], d[:, 1::2]
    ratio = (lr.min(-1) / jnp.maximum(lr.max(-1), 1e-6)) * (tb.min(-1) / jnp.maximum(tb.max(-1), 1e-6))
    centerness = jnp.where(positive, jnp.sqrt(jnp.clip(ratio, 0, 1)), 0.0)
    labels = jnp.where(positive, gt_labels[owner], -1).astype(jnp.int32)
    return FCOSTargets(labels, gt_boxes[owner], centerness)


def _conv_gn_relu(cin, cout, stride, groups, rngs, init=None):
    return nn.Sequential(
        nn.Conv2D(cin, cout, 3, stride, 1, weight_attr=init, bias_attr=False, data_format="NHWC", rngs=rngs),
        nn.GroupNorm(groups, cout, data_format="NHWC"),
        nn.ReLU(),
    )


class FCOS(nn.Layer):
    """A small FCOS-style anchor-free detector.

    images (B, 3, H, W) -> backbone (stem + stride-2 stages, GroupNorm) -> FPN
    (1x1 laterals, nearest top-down, 3x3 outputs) -> one head shared by all
    levels: a class tower -> C sigmoid logits per location; a box tower ->
    (l, t, r, b) = stride * exp(scale_level * x) and a centerness logit.
    Computation runs channels-last internally; inputs are Paddle's NCHW.

    Args:
      config: an `FCOSConfig` or a preset name ("tiny", "small").
      rngs: keyword-only seed / key / `nnx.Rngs` for the initial weights
        (default: the global generator, `pdx.seed`).
      **overrides: keyword-only `FCOSConfig` fields replacing the config's.

    Example:
      >>> model = FCOS("tiny", num_classes=2, rngs=0)
      >>> out = model(jnp.zeros((1, 3, 64, 64)))
      >>> out.cls_logits.shape, model.detect(jnp.zeros((1, 3, 64, 64))).boxes.shape
      ((1, 336, 2), (1, 20, 4))
    """

    def __init__(self, config: FCOSConfig | str = "tiny", *, rngs=None, **overrides):
        super().__init__()
        if isinstance(config, str):
            if config not in PRESETS:
                raise ValueError(f"FCOS: config={config!r} is not a preset; choose from {sorted(PRESETS)} "
                                 "or pass an FCOSConfig")
            config = PRESETS[config]
        if not isinstance(config, FCOSConfig):
            raise TypeError(f"FCOS: config must be an FCOSConfig or a preset name; got {type(config).__name__}")
        fields = {f.name for f in dataclasses.fields(FCOSConfig)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise ValueError(f"FCOS: unknown config field(s) {unknown}; FCOSConfig fields are {sorted(fields)}")
        # JSON round trips (zoo save/load) turn tuples into lists
        overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
        self.config = cfg = dataclasses.replace(config, **overrides)
        rngs = as_rngs(rngs)
        g, ch, width = cfg.norm_groups, cfg.backbone_channels, cfg.fpn_channels
        self.stem = _conv_gn_relu(cfg.in_channels, ch[0], 2, g, rngs)
        self.stages = nn.LayerList([
            nn.Sequential(_conv_gn_relu(ch[i], ch[i + 1], 2, g, rngs), _conv_gn_relu(ch[i + 1], ch[i + 1], 1, g, rngs))
            for i in range(len(ch) - 1)])
        self.lateral = nn.LayerList([nn.Conv2D(c, width, 1, data_format="NHWC", rngs=rngs) for c in ch[1:]])
        self.fpn_out = nn.LayerList([nn.Conv2D(width, width, 3, 1, 1, data_format="NHWC", rngs=rngs) for _ in ch[1:]])
        head_init = nn.initializer.Normal(0.0, 0.01)
        self.cls_tower = nn.Sequential(*[_conv_gn_relu(width, width, 1, g, rngs, head_init) for _ in range(cfg.head_convs)])
        self.box_tower = nn.Sequential(*[_conv_gn_relu(width, width, 1, g, rngs, head_init) for _ in range(cfg.head_convs)])
        prior = float(-np.log((1 - cfg.prior_prob) / cfg.prior_prob))
        self.cls_logits = nn.Conv2D(width, cfg.num_classes, 3, 1, 1, weight_attr=head_init,
                                    bias_attr=nn.initializer.Constant(prior), data_format="NHWC", rngs=rngs)
        self.box_pred = nn.Conv2D(width, 4, 3, 1, 1, weight_attr=head_init, data_format="NHWC", rngs=rngs)
        self.ctr_pred = nn.Conv2D(width, 1, 3, 1, 1, weight_attr=head_init, data_format="NHWC", rngs=rngs)
        self.scales = self.create_parameter([len(cfg.strides)], default_initializer=nn.initializer.Constant(1.0))

    def _check_images(self, images, op):
        images = jnp.asarray(images)
        cfg = self.config
        step = cfg.strides[-1]
        if images.ndim != 4 or images.shape[1] != cfg.in_channels:
            raise ValueError(f"FCOS.{op}: images must be (B, {cfg.in_channels}, H, W) (NCHW); got shape {images.shape}")
        if images.shape[2] % step or images.shape[3] % step:
            raise ValueError(f"FCOS.{op}: image height and width must be multiples of the largest stride {step}; "
                             f"got {images.shape[2:]}: pad or resize the images")
        return images.astype(jnp.float32)

    def points(self, height: int, width: int):
        """Location centers and their level data for an H x W input (numpy constants).

        Returns:
          (points (P, 2), strides (P,), lower (P,), upper (P,)), level by level, row-major.
        """
        pts, strides, lower, upper = [], [], [], []
        bounds = self.config.regress_bounds
        for level, s in enumerate(self.config.strides):
            ys, xs = np.mgrid[0:height // s, 0:width // s]
            p = np.stack([xs.ravel(), ys.ravel()], -1).astype(np.float32) * s + s // 2
            pts.append(p)
            strides.append(np.full(len(p), s, np.float32))
            lower.append(np.full(len(p), bounds[level], np.float32))
            upper.append(np.full(len(p), bounds[level + 1], np.float32))
        return tuple(np.concatenate(a) for a in (pts, strides, lower, upper))

    def forward(self, images) -> FCOSOutput:
        images = self._check_images(images, "forward")
        x = self.stem(jnp.transpose(images, (0, 2, 3, 1)))
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        laterals = [lat(f) for lat, f in zip(self.lateral, feats)]
        for i in range(len(laterals) - 2, -1, -1):
            up = jnp.repeat(jnp.repeat(laterals[i + 1], 2, axis=1), 2, axis=2)
            laterals[i] = laterals[i] + up
        cls, dist, ctr = [], [], []
        for level, (out_conv, lat) in enumerate(zip(self.fpn_out, laterals)):
            p = out_conv(lat)
            b = p.shape[0]
            c = self.cls_logits(self.cls_tower(p))
            t = self.box_tower(p)
            raw = jnp.clip(self.box_pred(t) * self.scales[level], -10.0, 10.0)
            cls.append(c.reshape(b, -1, c.shape[-1]))
            dist.append((jnp.exp(raw) * self.config.strides[level]).reshape(b, -1, 4))
            ctr.append(self.ctr_pred(t).reshape(b, -1))
        return FCOSOutput(jnp.concatenate(cls, 1), jnp.concatenate(dist, 1), jnp.concatenate(ctr, 1))

    def loss_terms(self, images, gt_boxes, gt_labels) -> FCOSLosses:
        """Focal loss (classes), centerness-weighted GIoU loss (boxes), BCE (centerness).

        Args:
          images: (B, 3, H, W).
          gt_boxes: (B, M, 4) corner boxes in pixels, any padding rows.
          gt_labels: (B, M) int classes, -1 for padding rows.

        Returns:
          `FCOSLosses(total, cls, box, centerness)`; cls and centerness are divided by
          the number of positive locations, box by their summed centerness targets.
        """
        images = self._check_images(images, "loss")
        gt_boxes, gt_labels = jnp.asarray(gt_boxes, jnp.float32), jnp.asarray(gt_labels)
        if gt_boxes.ndim != 3 or gt_boxes.shape[-1] != 4 or gt_labels.shape != gt_boxes.shape[:2]:
            raise ValueError(f"FCOS.loss: gt_boxes must be (B, M, 4) and gt_labels (B, M); got "
                             f"{gt_boxes.shape} and {gt_labels.shape}")
        out = self(images)
        cfg = self.config
        points, strides, lower, upper = self.points(images.shape[2], images.shape[3])
        targets = jax.vmap(lambda b, l: fcos_targets(points, strides, lower, upper, b, l,
                                                     center_radius=cfg.center_radius))(gt_boxes, gt_labels)
        positive = targets.labels >= 0
        num_pos = jnp.maximum(positive.sum(), 1).astype(jnp.float32)
        onehot = jax.nn.one_hot(targets.labels, cfg.num_classes, dtype=jnp.float32)   # -1 -> all zeros
        cls = F.sigmoid_focal_loss(out.cls_logits, onehot, alpha=cfg.focal_alpha, gamma=cfg.focal_gamma,
                                   reduction="sum") / num_pos
        pred_boxes = distance_to_box(jnp.asarray(points), out.distances)
        weight = targets.centerness * positive
        box = (giou_loss(pred_boxes, targets.boxes) * weight).sum() / jnp.maximum(weight.sum(), 1e-6)
        bce = F.binary_cross_entropy_with_logits(out.centerness, targets.centerness, reduction="none")
        ctr = (bce * positive).sum() / num_pos
        return FCOSLosses(cls + box + ctr, cls, box, ctr)

    def loss(self, images, gt_boxes, gt_labels):
        """The total training loss (a scalar); see `loss_terms`."""
        return self.loss_terms(images, gt_boxes, gt_labels).total

    def detect(self, images) -> Detections:
        """Boxes, scores and classes per image, after score threshold, top-k and per-class NMS.

        Scores are sqrt(sigmoid(class logit) * sigmoid(centerness)). Output shapes are
        fixed (K = config.max_detections slots), so this jits and exports as one program.

        Args:
          images: (B, 3, H, W).

        Returns:
          `Detections(boxes, scores, labels, count)`; boxes are clipped to the image.
        """
        images = self._check_images(images, "detect")
        out = self(images)
        h, w = images.shape[2], images.shape[3]
        points = jnp.asarray(self.points(h, w)[0])
        boxes = distance_to_box(points, out.distances)
        boxes = jnp.clip(boxes, 0.0, jnp.array([w, h, w, h], jnp.float32))
        scores = jnp.sqrt(jax.nn.sigmoid(out.cls_logits) * jax.nn.sigmoid(out.centerness)[..., None])
        return jax.vmap(self._select)(boxes, scores)

    def _select(self, boxes, scores):
        cfg = self.config
        c = scores.shape[-1]
        top, flat = jax.lax.top_k(scores.reshape(-1), min(cfg.pre_nms_top_k, scores.size))
        cand_boxes, cand_labels = boxes[flat // c], (flat % c).astype(jnp.int32)
        kept = batched_nms(cand_boxes, top, cand_labels, iou_threshold=cfg.nms_iou,
                           max_output_size=cfg.max_detections, score_threshold=cfg.score_threshold)
        used = kept.indices >= 0
        idx = jnp.maximum(kept.indices, 0)
        return Detections(jnp.where(used[:, None], cand_boxes[idx], 0.0), jnp.where(used, top[idx], 0.0),
                          jnp.where(used, cand_labels[idx], -1), kept.count)
