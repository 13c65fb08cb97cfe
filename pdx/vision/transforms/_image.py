"""Image-kind dispatch for the public functionals: PIL, numpy HWC, or jax CHW.

The functionals return what they were given, as Paddle's do: a PIL image for a
PIL image, a numpy HWC array for a numpy array, and a jax CHW array where
Paddle takes a CHW tensor. jax is imported only when a jax array comes in, so
DataLoader workers working on numpy never load it.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Callable, Sequence

import numpy as np

from pdx.vision.transforms._functional import is_pil

INTERPOLATIONS = ("nearest", "bilinear", "bicubic")


def is_jax(img) -> bool:
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(img, jax.Array)


def check_image(img, where: str) -> None:
    if is_pil(img) or (isinstance(img, np.ndarray) and img.ndim in (2, 3)) or (is_jax(img) and img.ndim in (2, 3)):
        return
    shape = getattr(img, "shape", None)
    raise TypeError(f"{where}(img) needs a PIL image or a numpy array of shape (H, W) or (H, W, C) (or a jax "
                    f"array (C, H, W)); got {type(img).__name__}{'' if shape is None else f' of shape {shape}'}.")


# uint8 grey/RGB arrays may take the PIL route of a shape-preserving op: the numpy code gives the same pixels
# (the tests check both routes against Paddle), PIL's C loops are ~10x faster. Tests switch it off.
PIL_FAST_PATH = True


def _via_pil(a: np.ndarray, pil_fn: Callable) -> np.ndarray:
    from PIL import Image

    one_channel = a.ndim == 3 and a.shape[2] == 1
    out = np.array(pil_fn(Image.fromarray(np.ascontiguousarray(a[:, :, 0] if one_channel else a))))
    return out[:, :, None] if one_channel else out


def _pil_eligible(a: np.ndarray) -> bool:
    return (PIL_FAST_PATH and a.dtype == np.uint8 and (a.ndim == 2 or a.shape[2] in (1, 3))
            and is_pil_available())


def is_pil_available() -> bool:
    from pdx.vision.transforms import _functional

    return _functional._PILImage is not None


def apply(img, where: str, np_fn: Callable[[np.ndarray], np.ndarray], pil_fn: Callable | None = None, *,
          fast: bool = False):
    """Run `np_fn` on the HWC numpy view of `img` and hand back the input's kind.

    PIL images go to `pil_fn` when given (PIL's own operation, as Paddle's PIL
    backend), else through numpy and back to a PIL image of the same mode.
    With `fast=True` (ops whose output keeps the input's shape and whose numpy
    code reproduces PIL's pixels), uint8 grey/RGB arrays use `pil_fn` too.
    """
    check_image(img, where)
    if fast and pil_fn is not None:
        slow_fn = np_fn

        def np_fn(a):
            return _via_pil(a, pil_fn) if _pil_eligible(a) else slow_fn(a)

    if is_pil(img):
        if pil_fn is not None:
            return pil_fn(img)
        from PIL import Image

        out = np_fn(np.asarray(img))
        res = Image.fromarray(np.ascontiguousarray(out), mode=img.mode if out.ndim == np.asarray(img).ndim else None)
        if img.mode == "P":
            res.putpalette(img.getpalette())
        return res
    if isinstance(img, np.ndarray):
        return np_fn(img)
    import jax.numpy as jnp

    arr = np.asarray(img)
    if arr.ndim == 2:
        return jnp.asarray(np_fn(arr))
    out = np_fn(arr.transpose(1, 2, 0))
    return jnp.asarray((out if out.ndim == 3 else out[:, :, None]).transpose(2, 0, 1))


def image_size(img) -> tuple[int, int]:
    """(width, height), as Paddle's `_get_image_size`."""
    if is_pil(img):
        return img.size
    if is_jax(img) and img.ndim == 3:
        return int(img.shape[2]), int(img.shape[1])
    return int(img.shape[1]), int(img.shape[0])


def fill_values(fill, channels: int, name: str = "fill") -> np.ndarray:
    """A per-channel fill vector from a number or a sequence (one per channel)."""
    if isinstance(fill, numbers.Number):
        return np.full(channels, float(fill))
    if isinstance(fill, Sequence) and not isinstance(fill, str) and all(isinstance(f, numbers.Number) for f in fill):
        if len(fill) == channels:
            return np.asarray(fill, dtype=np.float64)
        if channels == 1:
            return np.asarray(fill[:1], dtype=np.float64)
        raise ValueError(f"{name} has {len(fill)} values but the image has {channels} channels; pass a number "
                         f"or one value per channel.")
    raise TypeError(f"{name} must be a number or a sequence of numbers (one per channel); got {fill!r}.")


def check_interpolation(interpolation, where: str, allowed=INTERPOLATIONS) -> str:
    if interpolation not in allowed:
        raise ValueError(f"{where}(interpolation) must be one of {list(allowed)}; got {interpolation!r}.")
    return interpolation


def cast_like(out: np.ndarray, dtype) -> np.ndarray:
    """Float result -> `dtype`: integer images are clipped and truncated like PIL's 8-bit ops."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(out, info.min, info.max).astype(dtype)
    return out.astype(dtype)
