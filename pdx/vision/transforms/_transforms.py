"""Image transforms with Paddle's names and arguments, on numpy (run in workers).

Layout: images are PIL images or numpy arrays in HWC (Paddle's cv2/PIL
convention); geometric transforms keep the input's kind (PIL in, PIL out;
numpy in, numpy out), `ToTensor` turns them into float32 CHW numpy arrays (not jax arrays: the DataLoader moves the
finished batch to the device), and `Normalize` works on CHW by default.

Randomness: random transforms draw from `pdx.io.sample_rng()`, a Generator
seeded per sample by (loader seed, epoch, sample index), so the same seed
gives the same augmented batches with any number of workers, and a resumed
run redraws exactly what the first run drew. Paddle draws from Python's
global `random` module instead.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from pdx.io import sample_rng
from pdx.vision.transforms import _functional as F
from pdx.vision.transforms import _geometry as G
from pdx.vision.transforms._image import apply

__all__ = ["BaseTransform", "Compose", "ToTensor", "Normalize", "Resize", "CenterCrop", "RandomCrop",
           "RandomHorizontalFlip"]


# field kinds of Paddle's transforms (a "label" passes through)
_KEY_KINDS = ("image", "boxes", "mask", "coords", "label")


class BaseTransform:
    """Base class of transforms (Paddle's `paddle.vision.transforms.BaseTransform`).

    A subclass implements `_apply_image(img)` (and, as in Paddle,
    `_apply_boxes`, `_apply_mask`, `_apply_coords` or `_apply_<kind>` for
    other kinds). Called on a tuple, field i goes to `_apply_<keys[i]>`;
    kinds the transform has no method for (a "label", say) and fields past
    `keys` pass through unchanged.

    Args:
      keys: per-field input kinds, default `("image",)`: "image", "boxes",
        "mask", "coords", "label", or a kind with an `_apply_<kind>` method.

    Example:
      >>> import numpy as np
      >>> class Negate(BaseTransform):
      ...     def _apply_image(self, img): return -img
      >>> img, label = Negate()((np.ones((1, 1)), 3))
      >>> float(img[0, 0]), label
      (-1.0, 3)
    """

    def __init__(self, keys: Sequence[str] | None = None):
        if keys is None:
            keys = ("image",)
        elif isinstance(keys, str) or not isinstance(keys, Sequence):
            raise ValueError(f"keys must be a sequence of strings such as ('image', 'label'); got keys={keys!r}.")
        for k in keys:
            if not isinstance(k, str) or (k not in _KEY_KINDS and not callable(getattr(self, f"_apply_{k}", None))):
                raise ValueError(f"keys entries must be one of {list(_KEY_KINDS)} or a kind that "
                                 f"{type(self).__name__} has an _apply_<kind> method for; got {k!r} in keys={keys!r}.")
        self.keys = tuple(keys)

    def _apply_image(self, img):
        raise NotImplementedError(f"{type(self).__name__} must implement _apply_image(img).")

    def _apply(self, key: str, x):
        fn = getattr(self, f"_apply_{key}", None)
        return x if fn is None else fn(x)

    def __call__(self, inputs):
        if not isinstance(inputs, tuple):
            return self._apply(self.keys[0], inputs)
        return tuple(self._apply(self.keys[i], x) if i < len(self.keys) else x for i, x in enumerate(inputs))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if k != "keys")
        return f"{type(self).__name__}({fields})"


class Compose:
    """Apply transforms one after another (Paddle's `paddle.vision.transforms.Compose`).

    Args:
      transforms: a list of callables.

    Example:
      >>> import numpy as np
      >>> t = Compose([CenterCrop(2), ToTensor()])
      >>> t(np.zeros((4, 4, 3), np.uint8)).shape
      (3, 2, 2)
    """

    def __init__(self, transforms: Sequence):
        transforms = list(transforms)
        for i, t in enumerate(transforms):
            if not callable(t):
                raise TypeError(f"Compose(transforms): transforms[{i}] is a {type(t).__name__}, not callable.")
        self.transforms = transforms

    def __call__(self, data):
        for t in self.transforms:
            data = t(data)
        return data

    def __repr__(self) -> str:
        return "Compose([" + ", ".join(repr(t) for t in self.transforms) + "])"


class ToTensor(BaseTransform):
    """HWC image -> float32 array in [0, 1] (Paddle's `ToTensor`; pdx returns numpy).

    uint8 images (and 8-bit PIL images) are scaled by 1/255; other dtypes keep
    their values. A 2-D image gets one channel.

    Args:
      data_format: output layout, "CHW" (default) or "HWC".
      keys: see `BaseTransform`.

    Returns:
      A numpy array; the DataLoader turns the batch into a jax array.

    Example:
      >>> import numpy as np
      >>> ToTensor()(np.full((2, 2, 3), 255, np.uint8)).max()
      np.float32(1.0)
    """

    def __init__(self, data_format: str = "CHW", keys: Sequence[str] | None = None):
        super().__init__(keys)
        if data_format not in ("CHW", "HWC"):
            raise ValueError(f"ToTensor(data_format) must be 'CHW' or 'HWC'; got {data_format!r}.")
        self.data_format = data_format

    def _apply_image(self, img):
        return F.to_tensor(img, self.data_format)


class Normalize(BaseTransform):
    """`(img - mean) / std` per channel (Paddle's `Normalize`).

    Args:
      mean: a number or one value per channel.
      std: a number or one value per channel.
      data_format: layout of the input, "CHW" (default, after ToTensor) or "HWC".
      to_rgb: reverse the channel order first (BGR -> RGB). On CHW input
        pdx reverses the channel axis; Paddle's numpy path reverses the last
        axis whatever the layout.
      keys: see `BaseTransform`.

    Returns:
      A float32 numpy array.

    Example:
      >>> import numpy as np
      >>> Normalize(mean=0.5, std=0.5)(np.ones((3, 1, 1), np.float32)).ravel().tolist()
      [1.0, 1.0, 1.0]
    """

    def __init__(self, mean=0.0, std=1.0, data_format: str = "CHW", to_rgb: bool = False,
                 keys: Sequence[str] | None = None):
        super().__init__(keys)
        if data_format not in ("CHW", "HWC"):
            raise ValueError(f"Normalize(data_format) must be 'CHW' or 'HWC'; got {data_format!r}.")
        self.mean = [mean] * 3 if isinstance(mean, numbers.Number) else list(mean)
        self.std = [std] * 3 if isinstance(std, numbers.Number) else list(std)
        if any(s == 0 for s in self.std):
            raise ValueError(f"Normalize(std) must be non-zero; got std={std!r}.")
        self.data_format, self.to_rgb = data_format, to_rgb

    def _apply_image(self, img):
        arr = np.asarray(img)
        channels = arr.shape[0] if self.data_format == "CHW" else arr.shape[-1]
        mean, std = self.mean, self.std
        if len(mean) == 3 and len(std) == 3 and channels == 1 and arr.ndim == 3:
            mean, std = mean[:1], std[:1]  # a scalar mean/std on a 1-channel image
        elif arr.ndim == 3 and (len(mean) != channels or len(std) != channels):
            raise ValueError(f"Normalize: mean has {len(mean)} and std {len(std)} values but the image "
                             f"({self.data_format}, shape {arr.shape}) has {channels} channels.")
        return F.normalize(arr, mean, std, self.data_format, self.to_rgb)


class Resize(BaseTransform):
    """Resize an HWC image (Paddle's `Resize`).

    Args:
      size: (height, width), or an int: the shorter side becomes `size` and
        the aspect ratio is kept (the longer side is truncated to an int).
      interpolation: "bilinear" (default) or "nearest" for numpy images
        (half-pixel centres, like cv2 and Paddle's interpolate with
        align_mode=0; integer images are rounded); any PIL filter name for PIL
        images ("bicubic", "lanczos", ...), resized by PIL as Paddle does.
      keys: see `BaseTransform`.

    Returns:
      A PIL image for a PIL image, else an array of the input's kind and dtype.

    Example:
      >>> import numpy as np
      >>> Resize((2, 3))(np.zeros((4, 6, 3), np.float32)).shape
      (2, 3, 3)
    """

    def __init__(self, size, interpolation: str = "bilinear", keys: Sequence[str] | None = None):
        super().__init__(keys)
        if not isinstance(size, numbers.Integral):
            F.pair(size, "Resize(size)")
        elif size <= 0:
            raise ValueError(f"Resize(size) must be positive; got size={size}.")
        self.size, self.interpolation = size, interpolation

    def _apply_image(self, img):
        return G.resize(img, self.size, self.interpolation)


class CenterCrop(BaseTransform):
    """Crop the centre (height, width) of an HWC image (Paddle's `CenterCrop`).

    Args:
      size: an int (square) or (height, width).
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> CenterCrop(2)(np.arange(16).reshape(4, 4)).tolist()
      [[5, 6], [9, 10]]
    """

    def __init__(self, size, keys: Sequence[str] | None = None):
        super().__init__(keys)
        self.size = F.pair(size, "CenterCrop(size)")

    def _apply_image(self, img):
        return G.center_crop(img, self.size)


class RandomCrop(BaseTransform):
    """Crop an HWC image at a random place (Paddle's `RandomCrop`).

    Args:
      size: an int (square) or (height, width).
      padding: pad first: an int for all sides, (left/right, top/bottom) or
        (left, top, right, bottom).
      pad_if_needed: pad a too-small image up to `size` instead of raising
        (by the shortfall on both sides of the short axis, as Paddle does).
      fill: constant padding value, or one per channel.
      padding_mode: "constant", "edge", "reflect" or "symmetric".
      keys: see `BaseTransform`.

    The offset is drawn from `pdx.io.sample_rng()` (see module docstring).

    Example:
      >>> import numpy as np
      >>> RandomCrop(3, padding=1)(np.zeros((4, 4, 1), np.uint8)).shape
      (3, 3, 1)
    """

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant",
                 keys: Sequence[str] | None = None):
        super().__init__(keys)
        self.size = F.pair(size, "RandomCrop(size)")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError(f"RandomCrop(padding_mode) must be constant, edge, reflect or symmetric; "
                             f"got {padding_mode!r}.")
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    def _apply_image(self, img):
        return apply(img, "RandomCrop", self._crop)

    def _crop(self, img: np.ndarray) -> np.ndarray:
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        th, tw = self.size
        h, w = img.shape[:2]
        if self.pad_if_needed and w < tw:
            img = F.pad(img, (tw - w, 0, tw - w, 0), self.fill, self.padding_mode)
        if self.pad_if_needed and h < th:
            img = F.pad(img, (0, th - h, 0, th - h), self.fill, self.padding_mode)
        h, w = img.shape[:2]
        if h < th or w < tw:
            raise ValueError(f"RandomCrop size {self.size} is larger than the (padded) image ({h}, {w}); "
                             "pass padding= or pad_if_needed=True.")
        if (h, w) == (th, tw):
            return img
        rng = sample_rng()
        top, left = int(rng.integers(0, h - th + 1)), int(rng.integers(0, w - tw + 1))
        return F.crop(img, top, left, th, tw)


class RandomHorizontalFlip(BaseTransform):
    """Mirror an HWC image left-right with probability `prob` (Paddle's `RandomHorizontalFlip`).

    Args:
      prob: flip probability in [0, 1].
      keys: see `BaseTransform`.

    The coin is drawn from `pdx.io.sample_rng()` (see module docstring).

    Example:
      >>> import numpy as np
      >>> RandomHorizontalFlip(prob=1.0)(np.array([[1, 2, 3]])).tolist()
      [[3, 2, 1]]
    """

    def __init__(self, prob: float = 0.5, keys: Sequence[str] | None = None):
        super().__init__(keys)
        if not 0 <= prob <= 1:
            raise ValueError(f"RandomHorizontalFlip(prob) must be in [0, 1]; got prob={prob!r}.")
        self.prob = prob

    def _apply_image(self, img):
        return G.hflip(img) if sample_rng().random() < self.prob else img
