"""Geometric functionals of pdx.vision.transforms (Paddle's `paddle.vision.transforms.functional`).

Each takes a PIL image (PIL's own operation, as Paddle's PIL backend, PIL
out), a numpy HWC array (numpy out) or a jax CHW array (jax out). Warps
(`rotate`, `affine`, `perspective`) on numpy and jax arrays sample like PIL:
output pixel centres are mapped back into the input, "nearest" takes the
pixel under the point (PIL's 16.16 fixed-point grid for affine maps),
"bilinear" and "bicubic" blend the 2x2 or 4x4 neighbours (PIL's kernels,
border pixels repeated, 8-bit results truncated). So numpy and
PIL inputs give the same pixels, and uint8 grey/RGB arrays take PIL's
faster C loops when PIL is installed (`_image.PIL_FAST_PATH`). Paddle's numpy path uses OpenCV and its
tensor path `grid_sample`, whose sampling differs from PIL's at the pixel
level; pdx has one convention, PIL's.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from pdx.vision.transforms import _functional as F
from pdx.vision.transforms._image import (apply, cast_like, check_image, check_interpolation, fill_values,
                                          image_size, is_jax)

__all__ = ["hflip", "vflip", "crop", "center_crop", "pad", "resize", "rotate", "affine", "perspective", "erase"]

_PIL_FILTER = {"nearest": 0, "bilinear": 2, "bicubic": 3}


def hflip(img):
    """Mirror an image left-right (Paddle's `F.hflip`).

    Example:
      >>> import numpy as np
      >>> hflip(np.array([[1, 2, 3]])).tolist()
      [[3, 2, 1]]
    """
    return apply(img, "hflip", lambda a: np.ascontiguousarray(a[:, ::-1]), lambda p: p.transpose(0))


def vflip(img):
    """Mirror an image top-bottom (Paddle's `F.vflip`).

    Example:
      >>> import numpy as np
      >>> vflip(np.array([[1], [2]])).tolist()
      [[2], [1]]
    """
    return apply(img, "vflip", lambda a: np.ascontiguousarray(a[::-1]), lambda p: p.transpose(1))


def crop(img, top: int, left: int, height: int, width: int):
    """Cut the box at (top, left) of size (height, width) (Paddle's `F.crop`).

    Example:
      >>> import numpy as np
      >>> crop(np.arange(16).reshape(4, 4), 1, 2, 2, 2).tolist()
      [[6, 7], [10, 11]]
    """
    for name, v in (("top", top), ("left", left), ("height", height), ("width", width)):
        if not isinstance(v, numbers.Integral):
            raise TypeError(f"crop({name}) must be an int; got {name}={v!r}.")
    return apply(img, "crop", lambda a: F.crop(a, top, left, height, width),
                 lambda p: p.crop((left, top, left + width, top + height)))


def center_crop(img, output_size):
    """Cut the centre (height, width) box (Paddle's `F.center_crop`); an int gives a square.

    Example:
      >>> import numpy as np
      >>> center_crop(np.arange(16).reshape(4, 4), 2).tolist()
      [[5, 6], [9, 10]]
    """
    size = F.pair(output_size, "center_crop(output_size)")
    return apply(img, "center_crop", lambda a: F.center_crop(a, size))


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad the borders (Paddle's `F.pad`).

    Args:
      img: PIL image, numpy HWC array or jax CHW array.
      padding: an int for all sides, (left/right, top/bottom), or (left, top, right, bottom).
      fill: the constant, or one value per channel ("constant" mode only).
      padding_mode: "constant", "edge", "reflect" or "symmetric".

    Example:
      >>> import numpy as np
      >>> pad(np.array([[1, 2]]), (1, 0), padding_mode="edge").tolist()
      [[1, 1, 2, 2]]
    """
    if not isinstance(padding, (numbers.Integral, Sequence)) or isinstance(padding, str):
        raise TypeError(f"pad(padding) must be an int or a sequence of 2 or 4 ints; got {padding!r}.")
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(f"pad(padding_mode) must be 'constant', 'edge', 'reflect' or 'symmetric'; "
                         f"got {padding_mode!r}.")
    if isinstance(fill, list):
        fill = tuple(fill)
    return apply(img, "pad", lambda a: F.pad(a, padding, fill, padding_mode))


def resize(img, size, interpolation: str = "bilinear"):
    """Resize to (height, width), or an int for the shorter side (Paddle's `F.resize`).

    PIL images use PIL's filters ("nearest", "bilinear", "bicubic", "box",
    "lanczos", "hamming"); numpy and jax arrays "bilinear" (half-pixel
    centres) or "nearest", as `Resize`.

    Example:
      >>> import numpy as np
      >>> resize(np.zeros((4, 6, 3), np.uint8), 2).shape
      (2, 3, 3)
    """
    check_image(img, "resize")
    if not isinstance(size, numbers.Integral):
        F.pair(size, "resize(size)")
    elif size <= 0:
        raise ValueError(f"resize(size) must be positive; got size={size}.")
    if F.is_pil(img):
        from PIL import Image

        out = F.resize(img, size, interpolation)
        return img if out.shape[:2] == (img.size[1], img.size[0]) else Image.fromarray(out, img.mode)
    return apply(img, "resize", lambda a: F.resize(a, size, interpolation))


def _warp(arr: np.ndarray, out_hw, src_fn, interpolation: str, fill, fixed_affine=None) -> np.ndarray:
    """Sample `arr` (H, W[, C]) at `src_fn(x, y)` for each output pixel centre (x, y)."""
    squeeze = arr.ndim == 2
    a = arr[:, :, None] if squeeze else arr
    oh, ow = out_hw
    fillv = fill_values(fill, a.shape[2])
    ys, xs = np.meshgrid(np.arange(oh, dtype=np.float64), np.arange(ow, dtype=np.float64), indexing="ij")
    with np.errstate(divide="ignore", invalid="ignore"):  # degenerate perspective maps: nan/inf land outside
        out, inside = _sample(a, xs, ys, src_fn, interpolation, fixed_affine)
    out = np.where(inside[..., None], out, fillv)
    out = cast_like(out, arr.dtype)
    return out[:, :, 0] if squeeze else out


def _sample(a, xs, ys, src_fn, interpolation, fixed_affine):
    """Values of `a` (H, W, C) at the output pixel centres, and which centres map inside it."""
    h, w = a.shape[:2]
    if interpolation == "nearest":
        if fixed_affine is not None:
            # 16.16 fixed-point grid, PIL's nearest-neighbour affine sampler
            m = fixed_affine
            fix = lambda v: np.int64(math.floor(v * 65536.0 + 0.5))  # noqa: E731
            xx = fix(m[2] + m[0] * 0.5 + m[1] * 0.5) + xs.astype(np.int64) * fix(m[0]) + ys.astype(np.int64) * fix(m[1])
            yy = fix(m[5] + m[3] * 0.5 + m[4] * 0.5) + xs.astype(np.int64) * fix(m[3]) + ys.astype(np.int64) * fix(m[4])
            xi, yi = xx >> 16, yy >> 16
        else:
            sx, sy = src_fn(xs + 0.5, ys + 0.5)
            xi = np.where(sx < 0, -1, np.floor(np.nan_to_num(sx, nan=-1.0))).astype(np.int64)
            yi = np.where(sy < 0, -1, np.floor(np.nan_to_num(sy, nan=-1.0))).astype(np.int64)
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        out = a[np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)].astype(np.float64)
    else:
        sx, sy = src_fn(xs + 0.5, ys + 0.5)
        inside = (sx >= 0) & (sx < w) & (sy >= 0) & (sy < h)
        fx, fy = sx - 0.5, sy - 0.5
        x0, y0 = np.floor(fx), np.floor(fy)
        dx, dy = (fx - x0)[..., None], (fy - y0)[..., None]
        x0i = np.clip(np.nan_to_num(x0), -4, w + 4).astype(np.int64)
        y0i = np.clip(np.nan_to_num(y0), -4, h + 4).astype(np.int64)
        af = a.astype(np.float64)
        # taps at offsets -1..2 (bicubic) or 0..1 (bilinear), border pixels repeated
        offsets = range(-1, 3) if interpolation == "bicubic" else range(2)
        kernel = _cubic if interpolation == "bicubic" else _linear
        rows = []
        for oy in offsets:
            yy = np.clip(y0i + oy, 0, h - 1)
            rows.append(kernel([af[yy, np.clip(x0i + ox, 0, w - 1)] for ox in offsets], dx))
        out = kernel(rows, dy)
        if np.issubdtype(a.dtype, np.integer):
            out = np.floor(out)  # PIL truncates the filtered value
    return out, inside


def _linear(v, d):
    return v[0] + (v[1] - v[0]) * d


def _cubic(v, d):
    """PIL's bicubic kernel (a = -1) through taps v[0..3] at fraction d past v[1]."""
    p2 = v[2] - v[0]
    p3 = 2 * (v[0] - v[1]) + v[2] - v[3]
    p4 = v[1] - v[0] - v[2] + v[3]
    return v[1] + d * (p2 + d * (p3 + d * p4))


def _affine_apply(m):
    return lambda x, y: (m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5])


def _channels(img) -> int:
    if F.is_pil(img):
        return len(img.getbands())
    if is_jax(img):
        return 1 if img.ndim == 2 else int(img.shape[0])
    return 1 if img.ndim == 2 else int(img.shape[2])


def _warp_image(img, where, matrix_fn, interpolation, fill, pil_fn, perspective_coeffs=None):
    check_interpolation(interpolation, where)
    check_image(img, where)
    fill_values(fill, _channels(img), f"{where}(fill)")

    def np_fn(a):
        h, w = a.shape[:2]
        if perspective_coeffs is not None:
            p = perspective_coeffs

            def src(x, y):
                d = p[6] * x + p[7] * y + 1.0
                return (p[0] * x + p[1] * y + p[2]) / d, (p[3] * x + p[4] * y + p[5]) / d

            return _warp(a, (h, w), src, interpolation, fill)
        m, out_hw = matrix_fn(w, h)
        fixed = m if (m[1] != 0 or m[3] != 0) else None
        return _warp(a, out_hw, _affine_apply(m), interpolation, fill, fixed_affine=fixed)

    return apply(img, where, np_fn, pil_fn, fast=True)


def _pil_fill(fill, image):
    bands = len(image.getbands())
    values = [fill] * bands if isinstance(fill, numbers.Number) else list(fill)
    if image.mode not in ("F", "I"):
        values = [int(v) for v in values]  # what the numpy route's cast to the integer image gives
    return values[0] if bands == 1 else tuple(values)


def _rotate_matrix(w, h, angle, expand, center):
    """Inverse map (output -> input) of a counter-clockwise rotation, PIL's `Image.rotate` geometry."""
    cx, cy = (w / 2.0, h / 2.0) if center is None else (float(center[0]), float(center[1]))
    t = -math.radians(angle % 360.0)
    cos, sin = round(math.cos(t), 15), round(math.sin(t), 15)
    m = [cos, sin, 0.0, -sin, cos, 0.0]
    m[2] = m[0] * -cx + m[1] * -cy + cx
    m[5] = m[3] * -cx + m[4] * -cy + cy
    if not expand:
        return m, (h, w)
    corners = [(m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]) for x, y in ((0, 0), (w, 0), (w, h), (0, h))]
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    nw = math.ceil(max(xs)) - math.floor(min(xs))
    nh = math.ceil(max(ys)) - math.floor(min(ys))
    ox, oy = -(nw - w) / 2.0, -(nh - h) / 2.0
    m[2], m[5] = m[0] * ox + m[1] * oy + m[2], m[3] * ox + m[4] * oy + m[5]
    return m, (nh, nw)


def rotate(img, angle, interpolation: str = "nearest", expand: bool = False, center=None, fill=0):
    """Rotate counter-clockwise by `angle` degrees (Paddle's `F.rotate`).

    Args:
      img: PIL image, numpy HWC array or jax CHW array.
      angle: degrees, counter-clockwise.
      interpolation: "nearest" (default), "bilinear", or "bicubic".
      expand: grow the output to hold the whole rotated image.
      center: (x, y) centre of rotation; default the image centre.
      fill: value (or one per channel) for pixels from outside the input.

    Example:
      >>> import numpy as np
      >>> rotate(np.arange(4).reshape(2, 2), 90).tolist()
      [[1, 3], [0, 2]]
    """
    if not isinstance(angle, numbers.Number):
        raise TypeError(f"rotate(angle) must be a number of degrees; got {angle!r}.")
    if center is not None and (not isinstance(center, Sequence) or len(center) != 2):
        raise ValueError(f"rotate(center) must be an (x, y) pair; got {center!r}.")

    def pil_fn(p):
        return p.rotate(angle, _PIL_FILTER[interpolation], expand, None if center is None else tuple(center),
                        fillcolor=_pil_fill(fill, p))

    turns = {0.0: 0, 90.0: 1, 180.0: 2, 270.0: 3}.get(float(angle) % 360.0)
    if turns is not None and center is None:
        # whole quarter turns are exact transposes (PIL: when the size allows, i.e. square or expanding)
        check_image(img, "rotate")
        w, h = image_size(img)
        if turns % 2 == 0 or expand or w == h:
            return apply(img, "rotate", lambda a: np.ascontiguousarray(np.rot90(a, turns)), pil_fn)

    return _warp_image(img, "rotate", lambda w, h: _rotate_matrix(w, h, angle, expand, center),
                       interpolation, fill, pil_fn)


def _affine_matrix(center, angle, translate, scale, shear):
    """Inverse map (output -> input) of rotate(angle) * shear * scale about `center`, then translate."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    # forward rotation-shear block [[a, b], [c, d]] (determinant 1)
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    cx, cy = center
    tx, ty = translate
    m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
    m[2] = m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] = m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m


def affine(img, angle, translate, scale, shear, interpolation: str = "nearest", fill=0, center=None):
    """Rotate, scale, shear and translate an image (Paddle's `F.affine`).

    Args:
      img: PIL image, numpy HWC array or jax CHW array.
      angle: rotation in degrees, clockwise (Paddle's convention for affine).
      translate: (dx, dy) in pixels.
      scale: positive scale factor.
      shear: a number (x shear) or (x, y) shear in degrees.
      interpolation: "nearest" (default), "bilinear", or "bicubic".
      fill: value (or one per channel) for pixels from outside the input.
      center: (x, y) centre; default the image centre (w / 2, h / 2) for
        every input kind (Paddle's numpy path swaps width and height here).

    Example:
      >>> import numpy as np
      >>> affine(np.arange(6).reshape(2, 3), 0, (1, 0), 1.0, 0).tolist()
      [[0, 0, 1], [0, 3, 4]]
    """
    if not isinstance(angle, numbers.Number):
        raise TypeError(f"affine(angle) must be a number of degrees; got {angle!r}.")
    if not isinstance(translate, (list, tuple)) or len(translate) != 2:
        raise ValueError(f"affine(translate) must be a (dx, dy) pair; got {translate!r}.")
    if not isinstance(scale, numbers.Number) or scale <= 0:
        raise ValueError(f"affine(scale) must be a positive number; got {scale!r}.")
    if isinstance(shear, numbers.Number):
        shear = [float(shear), 0.0]
    elif isinstance(shear, (list, tuple)) and len(shear) in (1, 2):
        shear = [float(shear[0]), float(shear[-1])]
    else:
        raise ValueError(f"affine(shear) must be a number or an (x, y) pair of degrees; got {shear!r}.")
    if center is not None and (not isinstance(center, (list, tuple)) or len(center) != 2):
        raise ValueError(f"affine(center) must be an (x, y) pair; got {center!r}.")

    def matrix(w, h):
        c = (w * 0.5, h * 0.5) if center is None else center
        return _affine_matrix(c, angle, translate, scale, shear), (h, w)

    def pil_fn(p):
        from PIL import Image

        m, _ = matrix(*p.size)
        return p.transform(p.size, Image.AFFINE, m, _PIL_FILTER[interpolation], fillcolor=_pil_fill(fill, p))

    return _warp_image(img, "affine", matrix, interpolation, fill, pil_fn)


def _perspective_coeffs(startpoints, endpoints) -> list[float]:
    """(a..h) with input = ((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (g x + h y + 1)), x in output."""
    rows, rhs = [], []
    for (ex, ey), (sx, sy) in zip(endpoints, startpoints):
        rows.append([ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey])
        rows.append([0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey])
        rhs += [sx, sy]
    return [float(v) for v in np.linalg.lstsq(np.asarray(rows, np.float64), np.asarray(rhs, np.float64),
                                              rcond=None)[0]]


def perspective(img, startpoints, endpoints, interpolation: str = "nearest", fill=0):
    """Warp so that `startpoints` land on `endpoints` (Paddle's `F.perspective`).

    Args:
      img: PIL image, numpy HWC array or jax CHW array.
      startpoints: four [x, y] corners (top-left, top-right, bottom-right, bottom-left) in the input.
      endpoints: where they go in the output.
      interpolation: "nearest" (default), "bilinear", or "bicubic".
      fill: value (or one per channel) for pixels from outside the input.

    Example:
      >>> import numpy as np
      >>> pts = [[0, 0], [2, 0], [2, 2], [0, 2]]
      >>> perspective(np.arange(9).reshape(3, 3), pts, pts).tolist()
      [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """
    for name, pts in (("startpoints", startpoints), ("endpoints", endpoints)):
        if not isinstance(pts, Sequence) or len(pts) != 4 or any(len(p) != 2 for p in pts):
            raise ValueError(f"perspective({name}) must be four [x, y] points; got {pts!r}.")
    coeffs = _perspective_coeffs(startpoints, endpoints)

    def pil_fn(p):
        from PIL import Image

        return p.transform(p.size, Image.PERSPECTIVE, coeffs, _PIL_FILTER[interpolation], fillcolor=_pil_fill(fill, p))

    return _warp_image(img, "perspective", None, interpolation, fill, pil_fn, perspective_coeffs=coeffs)


def erase(img, i: int, j: int, h: int, w: int, v, inplace: bool = False):
    """Set the box at row `i`, column `j`, of size (h, w) to `v` (Paddle's `F.erase`).

    Args:
      img: PIL image, numpy HWC array or jax CHW array.
      i, j: top-left corner (row, column).
      h, w: box size.
      v: a value, one per channel, or an array broadcastable to the box
        ((h, w, C) for numpy/PIL, (C, h, w) for jax arrays).
      inplace: numpy arrays only: write into `img`. jax arrays are immutable
        and PIL images are always copied, so there it returns a new image.

    Example:
      >>> import numpy as np
      >>> erase(np.ones((2, 2, 1)), 0, 0, 1, 1, 0.0)[..., 0].tolist()
      [[0.0, 1.0], [1.0, 1.0]]
    """
    check_image(img, "erase")
    if is_jax(img):
        import jax.numpy as jnp

        box = jnp.asarray(v, dtype=img.dtype)
        if box.ndim == 1:
            box = box[:, None, None]
        return img.at[..., i:i + h, j:j + w].set(jnp.broadcast_to(box, img[..., i:i + h, j:j + w].shape))

    def np_fn(a):
        out = a if inplace and isinstance(img, np.ndarray) else a.copy()
        val = np.asarray(v)
        if np.issubdtype(out.dtype, np.integer) and not np.issubdtype(val.dtype, np.integer):
            # noise or float values on an integer image: saturate rather than wrap around
            info = np.iinfo(out.dtype)
            val = np.clip(np.rint(val), info.min, info.max)
        out[i:i + h, j:j + w, ...] = val
        return out

    return apply(img, "erase", np_fn)
