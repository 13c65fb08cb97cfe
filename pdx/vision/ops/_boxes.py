"""Box encodings and anchors: box_coder, prior_box, yolo_box (Paddle's
`paddle.vision.ops`). Fixed output shapes: all jit."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from pdx.vision.ops._common import float_array

__all__ = ["box_coder", "prior_box", "yolo_box"]

_CODE_TYPES = ("encode_center_size", "decode_center_size")


def _center_size(boxes, normalized):
    """(w, h, cx, cy) of corner boxes [..., 4]; un-normalized boxes count both end pixels."""
    one = 0.0 if normalized else 1.0
    w = boxes[..., 2] - boxes[..., 0] + one
    h = boxes[..., 3] - boxes[..., 1] + one
    return w, h, boxes[..., 0] + w / 2, boxes[..., 1] + h / 2


def box_coder(prior_box, prior_box_var, target_box, code_type="encode_center_size", box_normalized=True, axis=0,
              name=None):
    """Encode boxes against priors or decode offsets back to boxes (Paddle's
    `paddle.vision.ops.box_coder`, the Faster R-CNN / SSD parameterization).

    Args:
      prior_box: [M, 4] corner boxes (x1, y1, x2, y2).
      prior_box_var: [M, 4] variances, a list of 4 floats, or None (all 1).
      target_box: encode: [N, 4] boxes; decode: [N, M, 4] offsets (or [N, 4] with `axis`).
      code_type: 'encode_center_size' or 'decode_center_size'.
      box_normalized: True when coordinates are in [0, 1] (no +1 in widths).
      axis: for decoding, the axis of `target_box` the priors run along: 0 means
        target_box[i, j] uses prior j, 1 means prior i.

    Returns:
      encode: [N, M, 4] offsets; decode: [N, M, 4] corner boxes.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import box_coder
      >>> priors = jnp.array([[0.0, 0, 10, 10]])
      >>> box_coder(priors, [1.0, 1, 1, 1], jnp.array([[0.0, 0, 10, 10]])).shape
      (1, 1, 4)
    """
    op = "box_coder"
    if code_type not in _CODE_TYPES:
        raise ValueError(f"box_coder: code_type={code_type!r} is not supported; use one of {list(_CODE_TYPES)}")
    if axis not in (0, 1):
        raise ValueError(f"box_coder: axis={axis!r} must be 0 or 1")
    prior = float_array(prior_box, op, "prior_box", ndim=2, last=4)
    target = float_array(target_box, op, "target_box").astype(prior.dtype)
    if prior_box_var is None:
        var = jnp.ones((1, 4), prior.dtype)
    elif isinstance(prior_box_var, (list, tuple)):
        if len(prior_box_var) != 4:
            raise ValueError(f"box_coder: prior_box_var as a list needs 4 values; got {prior_box_var!r}")
        var = jnp.asarray(prior_box_var, prior.dtype).reshape(1, 4)
    else:
        var = float_array(prior_box_var, op, "prior_box_var", ndim=2, last=4).astype(prior.dtype)
    pw, ph, pcx, pcy = _center_size(prior, box_normalized)
    if code_type == "encode_center_size":
        if target.ndim != 2 or target.shape[-1] != 4:
            raise ValueError(f"box_coder: encoding needs target_box [N, 4]; got shape {tuple(target.shape)}")
        tw, th, _, _ = (t[:, None] for t in _center_size(target, box_normalized))
        # Paddle centers the targets at the plain midpoint, the priors at x1 + w / 2.
        tcx = ((target[:, 0] + target[:, 2]) / 2)[:, None]
        tcy = ((target[:, 1] + target[:, 3]) / 2)[:, None]
        out = jnp.stack([(tcx - pcx) / pw, (tcy - pcy) / ph, jnp.log(jnp.abs(tw / pw)), jnp.log(jnp.abs(th / ph))],
                        -1)
        return out / var[None]
    if target.ndim == 2:
        target = target[:, None] if axis == 1 else target[None]
    if target.ndim != 3 or target.shape[-1] != 4:
        raise ValueError(f"box_coder: decoding needs target_box [N, M, 4]; got shape {tuple(target.shape)}")
    expand = (lambda t: t[None, :]) if axis == 0 else (lambda t: t[:, None])
    pw, ph, pcx, pcy = expand(pw), expand(ph), expand(pcx), expand(pcy)
    v = var[None] if axis == 0 or var.shape[0] == 1 else var[:, None]
    t = target * v
    cx = t[..., 0] * pw + pcx
    cy = t[..., 1] * ph + pcy
    w = jnp.exp(t[..., 2]) * pw
    h = jnp.exp(t[..., 3]) * ph
    one = 0.0 if box_normalized else 1.0
    return jnp.stack([cx - w / 2, cy - h / 2, cx + w / 2 - one, cy + h / 2 - one], -1)


def _as_list(value, name):
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, (list, tuple)):
        return [float(v) for v in value]
    raise ValueError(f"prior_box: {name}={value!r} must be a number or a list of numbers")


def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=(1.0,), variance=(0.1, 0.1, 0.2, 0.2),
              flip=False, clip=False, steps=(0.0, 0.0), offset=0.5, min_max_aspect_ratios_order=False, name=None):
    """SSD prior (anchor) boxes for every cell of a feature map (Paddle's
    `paddle.vision.ops.prior_box`).

    Args:
      input: [N, C, H, W] feature map (only its H, W are used).
      image: [N, C, IH, IW] image (only its IH, IW are used).
      min_sizes: sizes of the square priors (pixels).
      max_sizes: optional, one per min size: adds a sqrt(min * max) square prior.
      aspect_ratios: extra ratios (1.0 always included); `flip` adds 1 / ratio.
      variance: the four variances returned with each prior.
      flip, clip: as above; `clip` clamps boxes to [0, 1].
      steps: (step_w, step_h) in pixels; 0 means image size / feature size.
      offset: cell-center offset. Default 0.5.
      min_max_aspect_ratios_order: Caffe's order (min, max, then ratios).

    Returns:
      (boxes, variances), each [H, W, num_priors, 4], boxes normalized to [0, 1].

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import prior_box
      >>> boxes, var = prior_box(jnp.zeros((1, 3, 2, 2)), jnp.zeros((1, 3, 8, 8)), [2.0], [4.0], [2.0], flip=True)
      >>> boxes.shape
      (2, 2, 4, 4)
    """
    fh, fw = int(input.shape[2]), int(input.shape[3])
    ih, iw = int(image.shape[2]), int(image.shape[3])
    min_sizes = _as_list(min_sizes, "min_sizes")
    max_sizes = [] if max_sizes is None else _as_list(max_sizes, "max_sizes")
    if max_sizes and len(max_sizes) != len(min_sizes):
        raise ValueError(f"prior_box: max_sizes={max_sizes} needs one value per min size ({len(min_sizes)})")
    ratios = [1.0]
    for ar in _as_list(aspect_ratios, "aspect_ratios"):
        if all(abs(ar - r) >= 1e-6 for r in ratios):
            ratios.append(ar)
            if flip:
                ratios.append(1.0 / ar)
    steps = _as_list(steps, "steps")
    if len(steps) != 2:
        raise ValueError(f"prior_box: steps={steps} must be (step_w, step_h)")
    variance = _as_list(variance, "variance")
    if len(variance) != 4:
        raise ValueError(f"prior_box: variance={variance} must have 4 values")
    step_w = steps[0] if steps[0] > 0 else iw / fw
    step_h = steps[1] if steps[1] > 0 else ih / fh
    half_sizes = []  # (half width, half height) of each prior at one cell, in Paddle's order
    for s, size in enumerate(min_sizes):
        square = [(size / 2, size / 2)]
        big = [(math.sqrt(size * max_sizes[s]) / 2,) * 2] if max_sizes else []
        if min_max_aspect_ratios_order:
            rest = [(size * math.sqrt(ar) / 2, size / math.sqrt(ar) / 2) for ar in ratios if abs(ar - 1.0) >= 1e-6]
            half_sizes += square + big + rest
        else:
            half_sizes += [(size * math.sqrt(ar) / 2, size / math.sqrt(ar) / 2) for ar in ratios] + big
    half = jnp.asarray(half_sizes, jnp.float32)  # [P, 2]
    cx = (jnp.arange(fw, dtype=jnp.float32) + offset) * step_w
    cy = (jnp.arange(fh, dtype=jnp.float32) + offset) * step_h
    cx = jnp.broadcast_to(cx[None, :, None], (fh, fw, len(half_sizes)))
    cy = jnp.broadcast_to(cy[:, None, None], (fh, fw, len(half_sizes)))
    boxes = jnp.stack([(cx - half[:, 0]) / iw, (cy - half[:, 1]) / ih, (cx + half[:, 0]) / iw,
                       (cy + half[:, 1]) / ih], -1)
    if clip:
        boxes = jnp.clip(boxes, 0.0, 1.0)
    var = jnp.broadcast_to(jnp.asarray(variance, jnp.float32), boxes.shape)
    return boxes, var


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True, name=None,
             scale_x_y=1.0, iou_aware=False, iou_aware_factor=0.5):
    """Decode a YOLOv3 head into boxes and class scores (Paddle's `paddle.vision.ops.yolo_box`).

    Args:
      x: [N, A * (5 + class_num), H, W] head output (with iou_aware, A more
        channels of IoU logits first).
      img_size: [N, 2] int (height, width) of each image.
      anchors: [w0, h0, w1, h1, ...] anchor sizes in pixels (A anchors).
      class_num: number of classes.
      conf_thresh: boxes with objectness below it are zeroed.
      downsample_ratio: input size / feature size (8, 16, 32).
      clip_bbox: clamp boxes into the image. Default True.
      scale_x_y: center scaling (YOLOv4's grid sensitivity). Default 1.0.
      iou_aware, iou_aware_factor: PP-YOLO's IoU-aware objectness.

    Returns:
      (boxes [N, A*H*W, 4] corner boxes in pixels, scores [N, A*H*W, class_num]).

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.vision.ops import yolo_box
      >>> boxes, scores = yolo_box(jnp.zeros((1, 14, 4, 4)), jnp.array([[64, 64]]), [10, 13, 16, 30], 2, 0.01, 16)
      >>> boxes.shape, scores.shape
      ((1, 32, 4), (1, 32, 2))
    """
    op = "yolo_box"
    x = float_array(x, op, "x", ndim=4)
    anchors = [float(a) for a in anchors]
    if len(anchors) % 2:
        raise ValueError(f"yolo_box: anchors={anchors} must be (w, h) pairs")
    a = len(anchors) // 2
    n, c, h, w = x.shape
    expected = a * (5 + class_num) + (a if iou_aware else 0)
    if c != expected:
        raise ValueError(f"yolo_box: x has {c} channels; {a} anchors and class_num={class_num} need {expected}"
                         f"{' (iou_aware)' if iou_aware else ''}")
    return _yolo_box(x, jnp.asarray(img_size), tuple(anchors), class_num, float(conf_thresh), int(downsample_ratio),
                     bool(clip_bbox), float(scale_x_y), bool(iou_aware), float(iou_aware_factor))


def _sigmoid(x):
    """Paddle's CPU sigmoid, 1 / (1 + exp(-x)), in the input's precision (jax.nn.sigmoid rounds differently)."""
    return 1.0 / (1.0 + jnp.exp(-x))


@functools.partial(jax.jit, static_argnums=tuple(range(2, 10)))
def _yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox, scale_x_y, iou_aware,
              iou_aware_factor):
    """Paddle's CPU arithmetic, operation for operation (also what pdx.inference runs for pd_op.yolo_box)."""
    a = len(anchors) // 2
    n, _, h, w = x.shape
    if iou_aware:  # the A IoU channels come first
        iou, x = _sigmoid(x[:, :a]), x[:, a:]
    p = x.reshape(n, a, 5 + class_num, h, w)
    scale = np.float32(scale_x_y)
    bias = np.float32(-0.5 * (scale_x_y - 1.0))
    conf = _sigmoid(p[:, :, 4])
    if iou_aware:
        conf = jnp.power(conf, np.float32(1.0 - iou_aware_factor)) * jnp.power(iou, np.float32(iou_aware_factor))
    keep = conf >= np.float32(conf_thresh)  # (N, A, H, W)
    img = jnp.asarray(img_size).astype(x.dtype)
    img_h, img_w = img[:, 0].reshape(n, 1, 1, 1), img[:, 1].reshape(n, 1, 1, 1)
    gx = jnp.arange(w, dtype=x.dtype).reshape(1, 1, 1, w)
    gy = jnp.arange(h, dtype=x.dtype).reshape(1, 1, h, 1)
    anchor_w = jnp.asarray(anchors[0::2], x.dtype).reshape(1, a, 1, 1)
    anchor_h = jnp.asarray(anchors[1::2], x.dtype).reshape(1, a, 1, 1)
    cx = (gx + _sigmoid(p[:, :, 0]) * scale + bias) * img_w / np.float32(w)
    cy = (gy + _sigmoid(p[:, :, 1]) * scale + bias) * img_h / np.float32(h)
    bw = jnp.exp(p[:, :, 2]) * anchor_w * img_w / np.float32(downsample_ratio * w)
    bh = jnp.exp(p[:, :, 3]) * anchor_h * img_h / np.float32(downsample_ratio * h)
    x1, y1, x2, y2 = cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2
    if clip_bbox:
        x1, y1 = jnp.where(x1 > 0, x1, 0), jnp.where(y1 > 0, y1, 0)
        x2, y2 = jnp.where(x2 < img_w - 1, x2, img_w - 1), jnp.where(y2 < img_h - 1, y2, img_h - 1)
    boxes = jnp.where(keep[..., None], jnp.stack([x1, y1, x2, y2], axis=-1), 0).reshape(n, a * h * w, 4)
    scores = jnp.where(keep[:, :, None], conf[:, :, None] * _sigmoid(p[:, :, 5:]), 0)  # (N, A, C, H, W)
    scores = jnp.moveaxis(scores, 2, -1).reshape(n, a * h * w, class_num)
    return boxes, scores
