"""Colour functionals of pdx.vision.transforms (Paddle's `paddle.vision.transforms.functional`).

PIL images go through PIL (`ImageEnhance`, HSV conversion), as Paddle's PIL
backend does. numpy and jax arrays are computed in numpy with the same
rules: 8-bit images use PIL's integer grey weights, its truncating blend
and the float/double steps of its HSV conversion, so uint8 numpy results
match PIL's to the pixel; float images are taken to lie in
[0, 1] and are blended without rounding, as Paddle's tensor path does.
(Paddle's numpy path uses OpenCV, whose hue and grey rounding differ from
PIL's by a level or two.)
"""

from __future__ import annotations

import numbers

import numpy as np

from pdx.vision.transforms import _functional as F
from pdx.vision.transforms._image import apply, cast_like, check_image, is_jax

__all__ = ["to_grayscale", "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "to_tensor",
           "normalize"]


def _check_factor(value, name: str, where: str) -> float:
    if not isinstance(value, numbers.Number) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{where}({name}) must be a non-negative number; got {name}={value!r}.")
    return float(value)


def _is_8bit(a: np.ndarray) -> bool:
    return a.dtype == np.uint8


def _gray(a: np.ndarray) -> np.ndarray:
    """(H, W, C>=3) -> (H, W) luma, PIL's ITU-R 601-2 weights (16-bit fixed point for uint8)."""
    if _is_8bit(a):
        r, g, b = (a[..., i].astype(np.int64) for i in range(3))
        return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).astype(np.uint8)
    # float images: the weights of Paddle's tensor path
    return (0.2989 * a[..., 0] + 0.587 * a[..., 1] + 0.114 * a[..., 2]).astype(a.dtype)


def _blend(degenerate, a: np.ndarray, factor: float) -> np.ndarray:
    """degenerate + factor * (a - degenerate), clipped to the image range (PIL's `Image.blend`)."""
    if _is_8bit(a):
        f = np.float32(factor)
        out = np.asarray(degenerate, np.float32) + f * (a.astype(np.float32) - np.asarray(degenerate, np.float32))
        return np.clip(out, 0, 255).astype(np.uint8)  # truncation, as PIL's 8-bit blend
    bound = 255.0 if np.issubdtype(a.dtype, np.integer) else 1.0
    return cast_like(np.clip(degenerate + factor * (a - degenerate), 0, bound), a.dtype)


def _split_alpha(a: np.ndarray):
    """Colour channels and the alpha channel (kept unchanged), if any."""
    if a.ndim == 3 and a.shape[2] in (2, 4):
        return a[..., :-1], a[..., -1:]
    return a, None


def _with_alpha(color: np.ndarray, alpha):
    return color if alpha is None else np.concatenate([color, alpha.astype(color.dtype)], axis=-1)


def to_grayscale(img, num_output_channels: int = 1):
    """Convert to grey (Paddle's `F.to_grayscale`): L = 0.299 R + 0.587 G + 0.114 B.

    Args:
      img: PIL image, numpy HWC array (RGB) or jax CHW array.
      num_output_channels: 1, or 3 (grey repeated in R, G and B).

    Returns:
      PIL: an "L" (or "RGB") image. numpy: (H, W, 1) or (H, W, 3). jax: (1 or 3, H, W).

    Example:
      >>> import numpy as np
      >>> to_grayscale(np.full((1, 1, 3), 100, np.uint8)).shape
      (1, 1, 1)
    """
    if num_output_channels not in (1, 3):
        raise ValueError(f"to_grayscale(num_output_channels) must be 1 or 3; got {num_output_channels!r}.")

    def np_fn(a):
        g = a if a.ndim == 2 else (a[..., 0] if a.shape[2] < 3 else _gray(a))
        return np.repeat(g[:, :, None], num_output_channels, axis=2)

    def pil_fn(p):
        from PIL import Image

        g = p.convert("L")
        return g if num_output_channels == 1 else Image.merge("RGB", (g, g, g))

    return apply(img, "to_grayscale", np_fn, pil_fn)


def adjust_brightness(img, brightness_factor: float):
    """Scale the intensities by `brightness_factor` (Paddle's `F.adjust_brightness`).

    0 gives black, 1 the original, 2 twice as bright (clipped).

    Example:
      >>> import numpy as np
      >>> adjust_brightness(np.full((1, 1, 3), 100, np.uint8), 1.5)[0, 0].tolist()
      [150, 150, 150]
    """
    f = _check_factor(brightness_factor, "brightness_factor", "adjust_brightness")

    def np_fn(a):
        color, alpha = _split_alpha(a)
        return _with_alpha(_blend(0.0, color, f), alpha)

    def pil_fn(p):
        from PIL import ImageEnhance

        return ImageEnhance.Brightness(p).enhance(f)

    return apply(img, "adjust_brightness", np_fn, pil_fn, fast=True)


def adjust_contrast(img, contrast_factor: float):
    """Blend with the mean grey level (Paddle's `F.adjust_contrast`).

    0 gives a flat grey image, 1 the original, 2 doubles the contrast. For
    8-bit images the mean is rounded to an integer, as PIL does.

    Example:
      >>> import numpy as np
      >>> adjust_contrast(np.array([[[0, 0, 0]], [[200, 200, 200]]], np.uint8), 0.0)[:, 0, 0].tolist()
      [100, 100]
    """
    f = _check_factor(contrast_factor, "contrast_factor", "adjust_contrast")

    def np_fn(a):
        color, alpha = _split_alpha(a)
        g = color if color.ndim == 2 else (color[..., 0] if color.shape[2] < 3 else _gray(color))
        mean = float(np.mean(g, dtype=np.float64))
        if _is_8bit(a):
            mean = float(int(mean + 0.5))
        return _with_alpha(_blend(mean, color, f), alpha)

    def pil_fn(p):
        from PIL import ImageEnhance

        return ImageEnhance.Contrast(p).enhance(f)

    return apply(img, "adjust_contrast", np_fn, pil_fn, fast=True)


def adjust_saturation(img, saturation_factor: float):
    """Blend with the grey version (Paddle's `F.adjust_saturation`).

    0 gives a grey image, 1 the original, 2 doubles the saturation.
    Single-channel images are returned unchanged.

    Example:
      >>> import numpy as np
      >>> adjust_saturation(np.array([[[200, 100, 0]]], np.uint8), 0.0)[0, 0].tolist()
      [118, 118, 118]
    """
    f = _check_factor(saturation_factor, "saturation_factor", "adjust_saturation")

    def np_fn(a):
        color, alpha = _split_alpha(a)
        if color.ndim == 2 or color.shape[2] < 3:
            return a
        return _with_alpha(_blend(_gray(color)[..., None].astype(np.float32), color, f), alpha)

    def pil_fn(p):
        from PIL import ImageEnhance

        return ImageEnhance.Color(p).enhance(f)

    return apply(img, "adjust_saturation", np_fn, pil_fn, fast=True)


def _rgb_to_hsv8(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """uint8 RGB -> 8-bit H, S, V (PIL's "HSV" mode: H in [0, 255] for a full turn)."""
    rgb = a.astype(np.float32)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc, minc = rgb.max(-1), rgb.min(-1)
    span = maxc - minc
    gray = span == 0
    safe = np.where(gray, 1.0, span).astype(np.float32)
    s = span / np.where(maxc == 0, 1.0, maxc).astype(np.float32)
    rc, gc, bc = (maxc - r) / safe, (maxc - g) / safe, (maxc - b) / safe
    # float32 ratios, double offsets and fmod, float32 storage in between: PIL's C expression types
    rc, gc, bc = (x.astype(np.float64) for x in (rc, gc, bc))
    h = np.where(r == maxc, bc - gc, np.where(g == maxc, 2.0 + rc - bc, 4.0 + gc - rc)).astype(np.float32)
    h = np.fmod(h.astype(np.float64) / 6.0 + 1.0, 1.0).astype(np.float32)
    h8 = np.where(gray, 0, np.clip((h.astype(np.float64) * 255.0).astype(np.int64), 0, 255))
    s8 = np.where(gray, 0, np.clip((s * np.float32(255.0)).astype(np.int64), 0, 255))
    return h8, s8, maxc.astype(np.int64)


def _hsv8_to_rgb(h, s, v) -> np.ndarray:
    hf = h.astype(np.float32) * np.float32(6.0) / np.float32(255.0)
    i = np.floor(hf).astype(np.int64)
    f = hf - i
    fs = s.astype(np.float32) / np.float32(255.0)
    vf = v.astype(np.float32)
    p = np.clip(np.rint(vf * (1.0 - fs)), 0, 255)
    q = np.clip(np.rint(vf * (1.0 - fs * f)), 0, 255)
    t = np.clip(np.rint(vf * (1.0 - fs * (1.0 - f))), 0, 255)
    sector = i % 6
    choices = [(vf, t, p), (q, vf, p), (p, vf, t), (p, q, vf), (t, p, vf), (vf, p, q)]
    rgb = [np.select([sector == k for k in range(6)], [c[ch] for c in choices]) for ch in range(3)]
    out = np.stack(rgb, -1)
    out = np.where((s == 0)[..., None], vf[..., None], out)
    return out.astype(np.uint8)


def _hue_float(a: np.ndarray, hue_factor: float) -> np.ndarray:
    """Continuous HSV hue rotation for float images in [0, 1]."""
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    maxc, minc = a[..., :3].max(-1), a[..., :3].min(-1)
    span = maxc - minc
    safe = np.where(span == 0, 1.0, span)
    s = np.where(maxc == 0, 0.0, span / np.where(maxc == 0, 1.0, maxc))
    rc, gc, bc = (maxc - r) / safe, (maxc - g) / safe, (maxc - b) / safe
    h = np.where(r == maxc, bc - gc, np.where(g == maxc, 2.0 + rc - bc, 4.0 + gc - rc))
    h = np.where(span == 0, 0.0, np.mod(h / 6.0 + 1.0, 1.0))
    h = np.mod(h + hue_factor, 1.0)
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = maxc * (1 - s), maxc * (1 - s * f), maxc * (1 - s * (1 - f))
    sector = i.astype(np.int64) % 6
    choices = [(maxc, t, p), (q, maxc, p), (p, maxc, t), (p, q, maxc), (t, p, maxc), (maxc, p, q)]
    rgb = [np.select([sector == k for k in range(6)], [c[ch] for c in choices]) for ch in range(3)]
    return np.stack(rgb, -1).astype(a.dtype)


def adjust_hue(img, hue_factor: float):
    """Rotate the hue by `hue_factor` of a turn, in [-0.5, 0.5] (Paddle's `F.adjust_hue`).

    8-bit images shift PIL's 8-bit hue by `int(hue_factor * 255)` (numpy
    arrays give PIL's pixels); float images rotate hue continuously.
    Single-channel images are returned unchanged.

    Example:
      >>> import numpy as np
      >>> adjust_hue(np.array([[[255, 0, 0]]], np.uint8), 0.5)[0, 0].tolist()
      [0, 255, 252]
    """
    if not isinstance(hue_factor, numbers.Number) or not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"adjust_hue(hue_factor) must be a number in [-0.5, 0.5]; got hue_factor={hue_factor!r}.")

    def np_fn(a):
        color, alpha = _split_alpha(a)
        if color.ndim == 2 or color.shape[2] < 3:
            return a
        if _is_8bit(a):
            h, s, v = _rgb_to_hsv8(color)
            out = _hsv8_to_rgb((h + int(hue_factor * 255)) % 256, s, v)
        else:
            out = _hue_float(color, float(hue_factor))
        return _with_alpha(out, alpha)

    def pil_fn(p):
        from PIL import Image

        if p.mode in ("L", "1", "I", "F"):
            return p
        h, s, v = p.convert("HSV").split()
        shifted = ((np.asarray(h, np.int16) + int(hue_factor * 255)) % 256).astype(np.uint8)
        return Image.merge("HSV", (Image.fromarray(shifted, "L"), s, v)).convert(p.mode)

    return apply(img, "adjust_hue", np_fn, pil_fn, fast=True)


def to_tensor(pic, data_format: str = "CHW"):
    """HWC image -> float32 array in [0, 1] (Paddle's `F.to_tensor`; pdx returns numpy, like `ToTensor`).

    Example:
      >>> import numpy as np
      >>> to_tensor(np.zeros((2, 3, 1), np.uint8)).shape
      (1, 2, 3)
    """
    check_image(pic, "to_tensor")
    if is_jax(pic):
        raise TypeError("to_tensor(pic) needs a PIL image or a numpy HWC array; a jax array is already a tensor.")
    return F.to_tensor(pic, data_format)


def normalize(img, mean, std, data_format: str = "CHW", to_rgb: bool = False):
    """`(img - mean) / std` per channel (Paddle's `F.normalize`).

    numpy (and PIL, taken as HWC) in: float32 numpy out; jax in: jax out.

    Example:
      >>> import numpy as np
      >>> normalize(np.ones((3, 1, 1), np.float32), [0.5] * 3, [0.5] * 3).ravel().tolist()
      [1.0, 1.0, 1.0]
    """
    if F.is_pil(img):
        return F.normalize(np.asarray(img), mean, std, "HWC", to_rgb)
    if is_jax(img):
        import jax.numpy as jnp

        return jnp.asarray(F.normalize(np.asarray(img), mean, std, data_format, to_rgb))
    check_image(img, "normalize")
    return F.normalize(img, mean, std, data_format, to_rgb)
