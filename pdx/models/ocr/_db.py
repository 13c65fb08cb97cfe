"""DB text detector (differentiable binarization): probability and threshold maps, and the DB loss."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import pdx.nn.functional as F
from pdx import nn
from pdx._random import as_rngs
from pdx.models.ocr._crnn import standardize


def differentiable_binarization(prob, thresh, *, k: float = 50.0):
    """DB's approximate step function B = 1 / (1 + exp(-k (P - T))), elementwise."""
    return jax.nn.sigmoid(k * (prob - thresh))


def _conv_bn(cin, cout, *, stride=1, rngs):
    return nn.Sequential(nn.Conv2D(cin, cout, 3, stride=stride, padding=1, bias_attr=False, rngs=rngs),
                         nn.BatchNorm2D(cout, rngs=rngs), nn.ReLU())


class _Head(nn.Layer):
    """3x3 conv -> 1x1 conv at 1/2 resolution, logits upsampled bilinearly to full size -> sigmoid."""

    def __init__(self, cin: int, mid: int, *, rngs):
        super().__init__()
        self.conv = _conv_bn(cin, mid, rngs=rngs)
        self.out = nn.Conv2D(mid, 1, 1, rngs=rngs)

    def forward(self, x):
        logits = F.interpolate(self.out(self.conv(x)), scale_factor=2, mode="bilinear")
        return jax.nn.sigmoid(logits)[:, 0]


class DBNet(nn.Layer):
    """A small DB text detector: conv backbone (1/2, 1/4, 1/8) + FPN fused at 1/2 + probability and threshold heads.

    The backbone's three stride-2 stages feed a feature pyramid: 1x1 laterals, a top-down sum
    with nearest upsampling, 3x3 smoothing, every level upsampled to 1/2 resolution,
    concatenated and mixed by a 1x1 conv. Two heads map the fused features to the text
    probability P and the adaptive threshold T (computed at 1/2 resolution, their logits
    upsampled to the image size: nothing heavy runs at full resolution); the approximate
    binary map is B = sigmoid(k (P - T)).

    Args:
      in_channels: image channels.
      channels: widths of the 1/2, 1/4 and 1/8 stages.
      inner_channels: FPN width per level (and of the fused features).
      k: the binarization steepness.
      rngs: keyword-only seed / key / `flax.nnx.Rngs` for the initial weights.

    Returns:
      A Layer mapping images (N, in_channels, H, W) (H, W multiples of 8) to maps (N, 3, H, W):
      probability, threshold and binary map.

    Example:
      >>> import jax.numpy as jnp
      >>> DBNet(rngs=0)(jnp.zeros((1, 1, 64, 64))).shape
      (1, 3, 64, 64)
    """

    def __init__(self, *, in_channels: int = 1, channels: tuple = (16, 32, 64), inner_channels: int = 16,
                 k: float = 50.0, rngs=None):
        super().__init__()
        if len(channels) != 3:
            raise ValueError(f"DBNet: channels must give 3 widths (1/2, 1/4, 1/8); got channels={channels!r}")
        rngs = as_rngs(rngs)
        widths = (in_channels,) + tuple(channels)
        self.stages = nn.LayerList([
            nn.Sequential(_conv_bn(cin, cout, stride=2, rngs=rngs),
                          *([_conv_bn(cout, cout, rngs=rngs)] if i else []))
            for i, (cin, cout) in enumerate(zip(widths[:-1], widths[1:]))])
        self.laterals = nn.LayerList([nn.Conv2D(c, inner_channels, 1, rngs=rngs) for c in channels])
        self.smooth = nn.LayerList([_conv_bn(inner_channels, inner_channels, rngs=rngs) for _ in channels])
        self.fuse = nn.Sequential(nn.Conv2D(inner_channels * len(channels), inner_channels, 1, bias_attr=False,
                                            rngs=rngs), nn.BatchNorm2D(inner_channels, rngs=rngs), nn.ReLU())
        self.prob_head = _Head(inner_channels, inner_channels // 2, rngs=rngs)
        self.thresh_head = _Head(inner_channels, inner_channels // 2, rngs=rngs)
        self.k = k

    def forward(self, images):
        if images.ndim != 4 or images.shape[2] % 8 or images.shape[3] % 8:
            raise ValueError(f"DBNet: images must be (N, C, H, W) with H and W multiples of 8; "
                             f"got shape {tuple(images.shape)}")
        x = standardize(images)
        levels = []
        for stage in self.stages:
            x = stage(x)
            levels.append(x)                                   # 1/2, 1/4, 1/8
        top, pyramid = None, []
        for lateral, feat in zip(reversed(list(self.laterals)), reversed(levels)):
            top = lateral(feat) if top is None else lateral(feat) + F.interpolate(top, scale_factor=2, mode="nearest")
            pyramid.append(top)
        pyramid = pyramid[::-1]                                # 1/2, 1/4, 1/8 again
        fused = [F.interpolate(smooth(p), scale_factor=2 ** i, mode="nearest") if i else smooth(p)
                 for i, (smooth, p) in enumerate(zip(self.smooth, pyramid))]
        fused = self.fuse(jnp.concatenate(fused, axis=1))      # (N, inner, H/2, W/2)
        prob, thresh = self.prob_head(fused), self.thresh_head(fused)
        return jnp.stack([prob, thresh, differentiable_binarization(prob, thresh, k=self.k)], axis=1)


def balanced_bce_loss(pred, gt, mask, *, negative_ratio: float = 3.0, eps: float = 1e-6):
    """BCE over all positives and the hardest negatives (at most negative_ratio x positives).

    The negatives are ranked by their loss over the whole batch; the loss is the sum over the
    positives and the kept negatives divided by their count (DB's hard negative mining).
    """
    pred = jnp.clip(pred, eps, 1 - eps)
    loss = -(gt * jnp.log(pred) + (1 - gt) * jnp.log(1 - pred))
    positive = gt * mask
    negative = (1 - gt) * mask
    n_pos = jnp.sum(positive)
    n_neg = jnp.minimum(jnp.sum(negative), jnp.floor(n_pos * negative_ratio))
    ranked = jnp.sort((loss * negative).reshape(-1))[::-1]
    hard = jnp.sum(jnp.where(jnp.arange(ranked.shape[0]) < n_neg, ranked, 0.0))
    return (jnp.sum(loss * positive) + hard) / (n_pos + n_neg + eps)


def dice_loss(pred, gt, mask, *, eps: float = 1e-6):
    """1 - 2 |P * G| / (|P| + |G|) over the masked pixels."""
    inter = jnp.sum(pred * gt * mask)
    union = jnp.sum(pred * mask) + jnp.sum(gt * mask) + eps
    return 1.0 - 2.0 * inter / union


def masked_l1_loss(pred, gt, mask, *, eps: float = 1e-6):
    """Mean |pred - gt| over the masked pixels."""
    return jnp.sum(jnp.abs(pred - gt) * mask) / (jnp.sum(mask) + eps)


def db_loss(maps, prob, prob_mask, thresh, thresh_mask, *, alpha: float = 1.0, beta: float = 10.0,
            negative_ratio: float = 3.0):
    """DB's loss: balanced BCE on P + alpha * dice on B + beta * L1 on T inside the border region.

    Args:
      maps: (N, 3, H, W) DBNet output (probability, threshold, binary).
      prob, prob_mask, thresh, thresh_mask: (N, H, W) targets (`stack_targets`).
      alpha, beta: weights of the binary-map and threshold-map terms.
      negative_ratio: hard negatives kept per positive in the probability term.

    Returns:
      (total loss, {"prob": ..., "binary": ..., "thresh": ...}).
    """
    if maps.ndim != 4 or maps.shape[1] != 3:
        raise ValueError(f"db_loss: maps must be (N, 3, H, W) from DBNet; got shape {tuple(maps.shape)}")
    parts = {
        "prob": balanced_bce_loss(maps[:, 0], prob, prob_mask, negative_ratio=negative_ratio),
        "binary": dice_loss(maps[:, 2], prob, prob_mask),
        "thresh": masked_l1_loss(maps[:, 1], thresh, thresh_mask),
    }
    return parts["prob"] + alpha * parts["binary"] + beta * parts["thresh"], parts
