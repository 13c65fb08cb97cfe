"""numpy image operations behind pdx.vision.transforms (HWC layout, no jax).

These run in DataLoader workers, so they use numpy (and PIL only to decode
or resize PIL inputs, exactly as Paddle's PIL backend does).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

try:
    from PIL import Image as _PILImage
except ImportError:  # PIL is optional: numpy images work without it
    _PILImage = None

_PIL_RESAMPLE = {"nearest": 0, "bilinear": 2, "bicubic": 3, "box": 4, "hamming": 5, "lanczos": 1}
_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def is_pil(img) -> bool:
    return _PILImage is not None and isinstance(img, _PILImage.Image)


def to_hwc(img, where: str) -> np.ndarray:
    """PIL image or numpy (H, W) / (H, W, C) array -> numpy array, unchanged layout."""
    if is_pil(img):
        return np.asarray(img)
    if isinstance(img, np.ndarray) and img.ndim in (2, 3):
        return img
    shape = getattr(img, "shape", None)
    raise TypeError(f"{where} needs a PIL image or a numpy array of shape (H, W) or (H, W, C); got "
                    f"{type(img).__name__}{'' if shape is None else f' of shape {shape}'}.")


def pair(size, name: str) -> tuple[int, int]:
    if isinstance(size, numbers.Integral) and not isinstance(size, bool) and size > 0:
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 2 and all(isinstance(s, numbers.Integral) and s > 0 for s in size):
        return int(size[0]), int(size[1])
    raise ValueError(f"{name} must be a positive int or a (height, width) pair of positive ints; got {size!r}.")


def crop(img: np.ndarray, top: int, left: int, height: int, width: int) -> np.ndarray:
    return img[top:top + height, left:left + width]


def center_crop(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    h, w = img.shape[:2]
    th, tw = size
    if th > h or tw > w:
        raise ValueError(f"CenterCrop size {size} is larger than the image ({h}, {w}); resize or pad first.")
    # Python's round(), as Paddle's PIL backend (ties go to the even offset)
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def pad(img: np.ndarray, padding, fill=0, padding_mode: str = "constant") -> np.ndarray:
    """Pad (left, top, right, bottom); an int pads all sides, a pair (left/right, top/bottom)."""
    if isinstance(padding, numbers.Integral):
        left = top = right = bottom = int(padding)
    elif isinstance(padding, Sequence) and len(padding) == 2:
        left = right = int(padding[0])
        top = bottom = int(padding[1])
    elif isinstance(padding, Sequence) and len(padding) == 4:
        left, top, right, bottom = (int(p) for p in padding)
    else:
        raise ValueError(f"padding must be an int or a sequence of 2 or 4 ints; got {padding!r}.")
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"padding_mode must be one of {sorted(_PAD_MODES)}; got {padding_mode!r}.")
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
    if padding_mode != "constant":
        return np.pad(img, widths, mode=_PAD_MODES[padding_mode])
    if isinstance(fill, Sequence) and img.ndim == 3:
        if len(fill) != img.shape[2]:
            raise ValueError(f"fill has {len(fill)} values but the image has {img.shape[2]} channels.")
        return np.stack([np.pad(img[..., c], widths[:2], constant_values=fill[c]) for c in range(img.shape[2])], -1)
    return np.pad(img, widths, mode="constant", constant_values=fill)


def _resize_linear_axis(img: np.ndarray, out: int, axis: int) -> np.ndarray:
    n = img.shape[axis]
    # half-pixel centres, clamped at the border (cv2 INTER_LINEAR / Paddle align_mode=0)
    src = (np.arange(out, dtype=np.float64) + 0.5) * (n / out) - 0.5
    src = np.clip(src, 0, n - 1)
    lo = np.floor(src).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = (src - lo).astype(np.float32)
    shape = [1] * img.ndim
    shape[axis] = out
    frac = frac.reshape(shape)
    return np.take(img, lo, axis=axis) * (1 - frac) + np.take(img, hi, axis=axis) * frac


def resize(img, size, interpolation: str = "bilinear") -> np.ndarray:
    """Resize to (h, w), or match the shorter side to an int `size` (Paddle's rule)."""
    arr = to_hwc(img, "Resize")
    h, w = arr.shape[:2]
    if isinstance(size, numbers.Integral):
        if (w <= h and w == size) or (h <= w and h == size):
            return arr
        oh, ow = (int(size * h / w), size) if w < h else (size, int(size * w / h))
    else:
        oh, ow = pair(size, "Resize(size)")
    if is_pil(img):
        if interpolation not in _PIL_RESAMPLE:
            raise ValueError(f"Resize(interpolation) for PIL images must be one of {sorted(_PIL_RESAMPLE)}; "
                             f"got {interpolation!r}.")
        return np.asarray(img.resize((ow, oh), _PIL_RESAMPLE[interpolation]))
    if interpolation == "nearest":
        rows = np.minimum((np.arange(oh) * (h / oh)).astype(np.int64), h - 1)
        cols = np.minimum((np.arange(ow) * (w / ow)).astype(np.int64), w - 1)
        return arr[rows][:, cols]
    if interpolation != "bilinear":
        raise ValueError(f"Resize(interpolation) for numpy images must be 'bilinear' or 'nearest'; got "
                         f"{interpolation!r} (convert to a PIL image for bicubic, lanczos, ...).")
    out = _resize_linear_axis(_resize_linear_axis(arr.astype(np.float32), oh, 0), ow, 1)
    if np.issubdtype(arr.dtype, np.integer):
        info = np.iinfo(arr.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(arr.dtype)
    return out.astype(arr.dtype)


def to_tensor(img, data_format: str = "CHW") -> np.ndarray:
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"ToTensor(data_format) must be 'CHW' or 'HWC'; got {data_format!r}.")
    if is_pil(img) and img.mode == "1":
        arr = np.asarray(img, np.uint8) * 255
    elif is_pil(img) and img.mode in ("I", "I;16"):
        arr = np.asarray(img, np.int32)
    else:
        arr = to_hwc(img, "ToTensor")
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.dtype == np.uint8:
        arr = arr.astype(np.float32) / 255.0
    return np.ascontiguousarray(arr.transpose(2, 0, 1)) if data_format == "CHW" else arr


def normalize(img, mean, std, data_format: str = "CHW", to_rgb: bool = False) -> np.ndarray:
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"Normalize(data_format) must be 'CHW' or 'HWC'; got {data_format!r}.")
    arr = np.asarray(to_hwc(img, "Normalize") if is_pil(img) else img, dtype=np.float32)
    mean = np.asarray(mean, dtype=np.float32)
    std = np.asarray(std, dtype=np.float32)
    channel_axis = 0 if data_format == "CHW" else -1
    if to_rgb:
        arr = np.flip(arr, axis=channel_axis)
    if data_format == "CHW":
        mean, std = mean.reshape(-1, 1, 1), std.reshape(-1, 1, 1)
    return (arr - mean) / std
