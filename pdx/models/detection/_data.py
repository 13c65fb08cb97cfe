"""A generated detection data set: noisy images with rectangles, ellipses and triangles.

Each image holds 1..max_objects shapes of random size, position and colour
on a noisy background of random tint; each shape's box is its exact extent
in pixels. Two shapes share at most a quarter of the smaller one's box, so
every one stays visible. Arrays have fixed shapes (boxes and labels padded), which is
what a jitted training step wants.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["SHAPE_CLASSES", "ShapesData", "make_shapes"]

SHAPE_CLASSES = ("rectangle", "ellipse", "triangle")
_MAX_OVERLAP = 0.25   # of the smaller box's area


class ShapesData(NamedTuple):
    """images (N, 3, S, S) float32 in [0, 1]; boxes (N, M, 4) float32 corner boxes
    (zeros where padded); labels (N, M) int32 class ids, -1 where padded."""

    images: np.ndarray
    boxes: np.ndarray
    labels: np.ndarray


def _mask(kind: int, box, xs, ys, rng) -> np.ndarray:
    x1, y1, x2, y2 = box
    if kind == 0:
        return (xs >= x1) & (xs < x2) & (ys >= y1) & (ys < y2)
    if kind == 1:
        cx, cy, a, b = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / 2, (y2 - y1) / 2
        return ((xs - cx) / a) ** 2 + ((ys - cy) / b) ** 2 <= 1
    # triangle: apex on the top edge, base on the bottom edge, so its extent is the box
    apex = x1 + rng.uniform(0.2, 0.8) * (x2 - x1)
    f = (ys - y1) / (y2 - y1)                                   # 0 at the apex row, 1 at the base
    return (ys >= y1) & (ys < y2) & (xs >= apex + (x1 - apex) * f) & (xs < apex + (x2 - apex) * f)


def _overlap(a, b) -> float:
    """Intersection over the smaller box's area (1 when one box holds the other)."""
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return w * h / min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))


def make_shapes(n: int, *, size: int = 64, max_objects: int = 4, min_size: int = 10, max_size: int | None = None,
                noise: float = 0.08, seed: int = 0) -> ShapesData:
    """Generate `n` images of coloured shapes with their boxes and classes.

    Args:
      n: number of images.
      size: image height and width in pixels.
      max_objects: each image holds 1..max_objects shapes (also the padded length M).
      min_size: smallest box side in pixels.
      max_size: largest box side (default size // 2).
      noise: standard deviation of the Gaussian pixel noise.
      seed: the numpy seed; the same seed gives the same data.

    Returns:
      `ShapesData(images, boxes, labels)`; class ids index `SHAPE_CLASSES`.

    Example:
      >>> d = make_shapes(2, size=32, max_objects=3, min_size=6)
      >>> d.images.shape, d.boxes.shape, d.labels.shape
      ((2, 3, 32, 32), (2, 3, 4), (2, 3))
    """
    max_size = size // 2 if max_size is None else max_size
    if n < 1 or max_objects < 1:
        raise ValueError(f"make_shapes: n={n!r} and max_objects={max_objects!r} must be >= 1")
    if not 2 <= min_size <= max_size <= size:
        raise ValueError(f"make_shapes: need 2 <= min_size <= max_size <= size; got min_size={min_size}, "
                         f"max_size={max_size}, size={size}")
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:size, 0:size] + 0.5
    images = np.empty((n, 3, size, size), np.float32)
    boxes = np.zeros((n, max_objects, 4), np.float32)
    labels = np.full((n, max_objects), -1, np.int32)
    for i in range(n):
        background = rng.uniform(0.0, 1.0, 3)
        image = np.broadcast_to(background[:, None, None], (3, size, size)).copy()
        placed = []
        for _ in range(int(rng.integers(1, max_objects + 1))):
            for _attempt in range(30):
                w, h = rng.integers(min_size, max_size + 1, 2)
                x1, y1 = rng.integers(0, size - w + 1), rng.integers(0, size - h + 1)
                box = (float(x1), float(y1), float(x1 + w), float(y1 + h))
                if all(_overlap(box, other) <= _MAX_OVERLAP for other in placed):
                    break
            else:
                continue
            kind = int(rng.integers(len(SHAPE_CLASSES)))
            color = rng.uniform(0.0, 1.0, 3)
            while np.abs(color - background).max() < 0.35:
                color = rng.uniform(0.0, 1.0, 3)
            image[:, _mask(kind, box, xs, ys, rng)] = color[:, None]
            boxes[i, len(placed)] = box
            labels[i, len(placed)] = kind
            placed.append(box)
        images[i] = np.clip(image + rng.normal(0.0, noise, image.shape), 0.0, 1.0)
    return ShapesData(images, boxes, labels)
