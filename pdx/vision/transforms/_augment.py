"""More transforms of pdx.vision.transforms: flips, padding, colour jitter, warps, erasing.

They keep the input's kind, as Paddle's do: PIL in -> PIL out, numpy HWC in
-> numpy out, jax CHW in -> jax out (see `_geometry` and `_color`). Random
ones draw every parameter from one `pdx.io.sample_rng()` Generator per call,
so results depend on the loader seed and the sample index only (Paddle draws
from Python's `random` and numpy's global generator).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from pdx.io import sample_rng
from pdx.vision.transforms import _color as C
from pdx.vision.transforms import _functional as F
from pdx.vision.transforms import _geometry as G
from pdx.vision.transforms._image import check_interpolation, image_size, is_jax
from pdx.vision.transforms._transforms import BaseTransform

__all__ = ["RandomVerticalFlip", "Transpose", "Pad", "RandomResizedCrop", "BrightnessTransform",
           "ContrastTransform", "SaturationTransform", "HueTransform", "ColorJitter", "Grayscale", "RandomAffine",
           "RandomRotation", "RandomPerspective", "RandomErasing"]


def _check_prob(prob, where: str) -> float:
    if not isinstance(prob, numbers.Number) or not 0 <= prob <= 1:
        raise ValueError(f"{where}(prob) must be in [0, 1]; got prob={prob!r}.")
    return float(prob)


def _range(value, name: str, where: str, center: float = 1.0, bound=(0.0, math.inf), clip_at_zero: bool = True):
    """A number v -> [center - v, center + v] (clipped at 0), or a checked (min, max); None if it is a no-op."""
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{where}({name}) must be non-negative; got {name}={value!r}.")
        lo, hi = center - value, center + value
        if clip_at_zero:
            lo = max(lo, 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
        if not bound[0] <= lo <= hi <= bound[1]:
            raise ValueError(f"{where}({name}) must be (min, max) with {bound[0]} <= min <= max <= {bound[1]}; "
                             f"got {name}={value!r}.")
    else:
        raise TypeError(f"{where}({name}) must be a number or a (min, max) pair; got {name}={value!r}.")
    return None if lo == hi == center else (float(lo), float(hi))


def _check_pair(value, name: str, where: str, positive: bool = False):
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2 or \
            not all(isinstance(v, numbers.Number) for v in value):
        raise ValueError(f"{where}({name}) must be a pair of numbers; got {name}={value!r}.")
    if positive and not all(v > 0 for v in value):
        raise ValueError(f"{where}({name}) values must be positive; got {name}={value!r}.")
    return value


class RandomVerticalFlip(BaseTransform):
    """Mirror top-bottom with probability `prob` (Paddle's `RandomVerticalFlip`).

    Args:
      prob: flip probability in [0, 1].
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> RandomVerticalFlip(prob=1.0)(np.array([[1], [2]])).tolist()
      [[2], [1]]
    """

    def __init__(self, prob: float = 0.5, keys: Sequence[str] | None = None):
        super().__init__(keys)
        self.prob = _check_prob(prob, "RandomVerticalFlip")

    def _apply_image(self, img):
        return G.vflip(img) if sample_rng().random() < self.prob else img


class Transpose(BaseTransform):
    """Permute the axes of an image, HWC -> CHW by default (Paddle's `Transpose`).

    PIL images become numpy arrays; a 2-D image gets a trailing channel axis first.

    Args:
      order: the axis permutation, default (2, 0, 1).
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> Transpose()(np.zeros((2, 3, 4))).shape
      (4, 2, 3)
    """

    def __init__(self, order: Sequence[int] = (2, 0, 1), keys: Sequence[str] | None = None):
        super().__init__(keys)
        if not isinstance(order, Sequence) or sorted(order) != list(range(len(order))):
            raise ValueError(f"Transpose(order) must be a permutation such as (2, 0, 1); got order={order!r}.")
        self.order = tuple(order)

    def _apply_image(self, img):
        if is_jax(img):
            return img.transpose(self.order)
        arr = np.asarray(img) if F.is_pil(img) else img
        if arr.ndim == 2:
            arr = arr[:, :, None]
        return arr.transpose(self.order)


class Pad(BaseTransform):
    """Pad the borders (Paddle's `Pad`).

    Args:
      padding: an int for all sides, (left/right, top/bottom), or (left, top, right, bottom).
      fill: constant value, or one per channel ("constant" mode).
      padding_mode: "constant", "edge", "reflect" or "symmetric".
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> Pad(1)(np.zeros((2, 2, 3), np.uint8)).shape
      (4, 4, 3)
    """

    def __init__(self, padding, fill=0, padding_mode: str = "constant", keys: Sequence[str] | None = None):
        super().__init__(keys)
        if isinstance(padding, bool) or not (isinstance(padding, numbers.Integral) or (
                isinstance(padding, (list, tuple)) and len(padding) in (2, 4))):
            raise ValueError(f"Pad(padding) must be an int or a sequence of 2 or 4 ints; got padding={padding!r}.")
        if not isinstance(fill, (numbers.Number, list, tuple)):
            raise TypeError(f"Pad(fill) must be a number or one number per channel; got fill={fill!r}.")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError(f"Pad(padding_mode) must be 'constant', 'edge', 'reflect' or 'symmetric'; "
                             f"got padding_mode={padding_mode!r}.")
        self.padding = tuple(padding) if isinstance(padding, list) else padding
        self.fill = tuple(fill) if isinstance(fill, list) else fill
        self.padding_mode = padding_mode

    def _apply_image(self, img):
        return G.pad(img, self.padding, self.fill, self.padding_mode)


class RandomResizedCrop(BaseTransform):
    """Crop a random area and aspect ratio, then resize to `size` (Paddle's `RandomResizedCrop`).

    Up to 10 tries draw an area fraction from `scale` and a log-uniform aspect
    ratio (width / height) from `ratio`; if none fits, the central crop with
    the closest allowed ratio is taken.

    Args:
      size: output (height, width), or an int for a square.
      scale: (min, max) fraction of the image area.
      ratio: (min, max) aspect ratio.
      interpolation: resize filter (see `resize`).
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> RandomResizedCrop(4)(np.zeros((13, 17, 3), np.uint8)).shape
      (4, 4, 3)
    """

    def __init__(self, size, scale: Sequence[float] = (0.08, 1.0), ratio: Sequence[float] = (3.0 / 4, 4.0 / 3),
                 interpolation: str = "bilinear", keys: Sequence[str] | None = None):
        super().__init__(keys)
        self.size = F.pair(size, "RandomResizedCrop(size)")
        for name, v in (("scale", scale), ("ratio", ratio)):
            _check_pair(v, name, "RandomResizedCrop", positive=True)
            if v[0] > v[1]:
                raise ValueError(f"RandomResizedCrop({name}) must be (min, max); got {name}={v!r}.")
        self.scale, self.ratio, self.interpolation = tuple(scale), tuple(ratio), interpolation

    def _params(self, rng, width: int, height: int):
        area = width * height
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            target = rng.uniform(*self.scale) * area
            aspect = math.exp(rng.uniform(*log_ratio))
            w = int(round(math.sqrt(target * aspect)))
            h = int(round(math.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                return int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w
        in_ratio = width / height
        w, h = width, height
        if in_ratio < self.ratio[0]:
            h = int(round(w / self.ratio[0]))
        elif in_ratio > self.ratio[1]:
            w = int(round(h * self.ratio[1]))
        return (height - h) // 2, (width - w) // 2, h, w

    def _apply_image(self, img):
        i, j, h, w = self._params(sample_rng(), *image_size(img))
        return G.resize(G.crop(img, i, j, h, w), self.size, self.interpolation)


class _ColorTransform(BaseTransform):
    _name = ""
    _where = ""

    def __init__(self, value, keys: Sequence[str] | None = None):
        super().__init__(keys)
        self.value = _range(value, "value", self._where)

    def _adjust(self, img, factor):
        raise NotImplementedError

    def _draw(self, img, rng):
        return img if self.value is None else self._adjust(img, float(rng.uniform(*self.value)))

    def _apply_image(self, img):
        return self._draw(img, sample_rng())


class BrightnessTransform(_ColorTransform):
    """Scale brightness by a factor drawn from [max(0, 1 - value), 1 + value] (Paddle's `BrightnessTransform`).

    Args:
      value: non-negative jitter, or an explicit (min, max) factor range.
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> BrightnessTransform((2.0, 2.0))(np.full((1, 1, 3), 50, np.uint8))[0, 0].tolist()
      [100, 100, 100]
    """

    _where = "BrightnessTransform"

    def _adjust(self, img, factor):
        return C.adjust_brightness(img, factor)


class ContrastTransform(_ColorTransform):
    """Scale contrast by a factor drawn from [max(0, 1 - value), 1 + value] (Paddle's `ContrastTransform`).

    Args:
      value: non-negative jitter, or an explicit (min, max) factor range.
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> ContrastTransform(0.4)(np.full((2, 2, 3), 9, np.uint8)).shape
      (2, 2, 3)
    """

    _where = "ContrastTransform"

    def _adjust(self, img, factor):
        return C.adjust_contrast(img, factor)


class SaturationTransform(_ColorTransform):
    """Scale saturation by a factor drawn from [max(0, 1 - value), 1 + value] (Paddle's `SaturationTransform`).

    Args:
      value: non-negative jitter, or an explicit (min, max) factor range.
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> SaturationTransform((0.0, 0.0))(np.array([[[200, 100, 0]]], np.uint8))[0, 0].tolist()
      [118, 118, 118]
    """

    _where = "SaturationTransform"

    def _adjust(self, img, factor):
        return C.adjust_saturation(img, factor)


class HueTransform(_ColorTransform):
    """Shift hue by a factor drawn from [-value, value], value <= 0.5 (Paddle's `HueTransform`).

    Args:
      value: jitter in [0, 0.5], or an explicit (min, max) within [-0.5, 0.5].
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> HueTransform((0.5, 0.5))(np.array([[[255, 0, 0]]], np.uint8))[0, 0].tolist()
      [0, 255, 252]
    """

    _where = "HueTransform"

    def __init__(self, value, keys: Sequence[str] | None = None):
        BaseTransform.__init__(self, keys)
        if isinstance(value, numbers.Number) and not 0 <= value <= 0.5:
            raise ValueError(f"HueTransform(value) must be in [0, 0.5]; got value={value!r}.")
        self.value = _range(value, "value", self._where, center=0.0, bound=(-0.5, 0.5), clip_at_zero=False)

    def _adjust(self, img, factor):
        return C.adjust_hue(img, factor)


class ColorJitter(BaseTransform):
    """Jitter brightness, contrast, saturation and hue, in a random order (Paddle's `ColorJitter`).

    Args:
      brightness: factor drawn from [max(0, 1 - brightness), 1 + brightness], or a (min, max) range.
      contrast: same, for contrast.
      saturation: same, for saturation.
      hue: shift drawn from [-hue, hue] with hue <= 0.5, or a (min, max) range.
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> ColorJitter(0.4, 0.4, 0.4, 0.1)(np.zeros((2, 2, 3), np.uint8)).shape
      (2, 2, 3)
    """

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0, keys: Sequence[str] | None = None):
        super().__init__(keys)
        for name, v in (("brightness", brightness), ("contrast", contrast), ("saturation", saturation)):
            _range(v, name, "ColorJitter")
        if isinstance(hue, numbers.Number) and not 0 <= hue <= 0.5:
            raise ValueError(f"ColorJitter(hue) must be in [0, 0.5]; got hue={hue!r}.")
        _range(hue, "hue", "ColorJitter", center=0.0, bound=(-0.5, 0.5), clip_at_zero=False)
        self._parts = [BrightnessTransform(brightness, keys), ContrastTransform(contrast, keys),
                       SaturationTransform(saturation, keys), HueTransform(hue, keys)]
        self.brightness, self.contrast, self.saturation, self.hue = brightness, contrast, saturation, hue

    def __repr__(self) -> str:
        return (f"ColorJitter(brightness={self.brightness!r}, contrast={self.contrast!r}, "
                f"saturation={self.saturation!r}, hue={self.hue!r})")

    def _apply_image(self, img):
        rng = sample_rng()
        for k in rng.permutation(len(self._parts)):
            img = self._parts[k]._draw(img, rng)
        return img


class Grayscale(BaseTransform):
    """Convert to grey with 1 or 3 output channels (Paddle's `Grayscale`).

    Args:
      num_output_channels: 1 or 3.
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> Grayscale(3)(np.zeros((2, 2, 3), np.uint8)).shape
      (2, 2, 3)
    """

    def __init__(self, num_output_channels: int = 1, keys: Sequence[str] | None = None):
        super().__init__(keys)
        if num_output_channels not in (1, 3):
            raise ValueError(f"Grayscale(num_output_channels) must be 1 or 3; got {num_output_channels!r}.")
        self.num_output_channels = num_output_channels

    def _apply_image(self, img):
        return C.to_grayscale(img, self.num_output_channels)


def _angle_range(x, name: str, where: str, sizes=(2,)) -> list[float]:
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        if x < 0:
            raise ValueError(f"{where}({name}) as a single number must be non-negative; got {name}={x!r}.")
        return [-float(x), float(x)]
    if not isinstance(x, Sequence) or isinstance(x, str) or len(x) not in sizes:
        raise ValueError(f"{where}({name}) must be a number or a sequence of {' or '.join(map(str, sizes))} "
                         f"numbers; got {name}={x!r}.")
    return [float(v) for v in x]


class RandomAffine(BaseTransform):
    """Random rotation, translation, scale and shear (Paddle's `RandomAffine`).

    Args:
      degrees: rotation range (min, max), or d for (-d, d); clockwise, as `affine`.
      translate: (a, b): horizontal shift drawn in [-a * width, a * width]
        (vertical likewise with b), truncated to whole pixels. None: no shift.
      scale: (min, max) scale range. None: 1.
      shear: s for an x shear in (-s, s), (min, max) for x, or (xmin, xmax, ymin, ymax).
      interpolation: "nearest" (default), "bilinear" or "bicubic".
      fill: value (or one per channel) for pixels from outside the input.
      center: (x, y) centre; default the image centre.
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> RandomAffine(15, translate=(0.1, 0.1))(np.zeros((5, 7, 3), np.uint8)).shape
      (5, 7, 3)
    """

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation: str = "nearest", fill=0,
                 center=None, keys: Sequence[str] | None = None):
        super().__init__(keys)
        self.degrees = _angle_range(degrees, "degrees", "RandomAffine")
        self.interpolation = check_interpolation(interpolation, "RandomAffine")
        if translate is not None:
            _check_pair(translate, "translate", "RandomAffine")
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError(f"RandomAffine(translate) fractions must be in [0, 1]; got translate={translate!r}.")
        if scale is not None:
            _check_pair(scale, "scale", "RandomAffine", positive=True)
        self.translate, self.scale = translate, scale
        self.shear = None if shear is None else _angle_range(shear, "shear", "RandomAffine", sizes=(2, 4))
        if not isinstance(fill, (numbers.Number, Sequence)) or isinstance(fill, str):
            raise TypeError(f"RandomAffine(fill) must be a number or one number per channel; got fill={fill!r}.")
        if center is not None:
            _check_pair(center, "center", "RandomAffine")
        self.fill, self.center = fill, center

    def _params(self, rng, width: int, height: int):
        angle = float(rng.uniform(*self.degrees))
        tx = ty = 0
        if self.translate is not None:
            max_dx, max_dy = self.translate[0] * width, self.translate[1] * height
            tx, ty = int(rng.uniform(-max_dx, max_dx)), int(rng.uniform(-max_dy, max_dy))
        scale = 1.0 if self.scale is None else float(rng.uniform(*self.scale))
        shear = (0.0, 0.0)
        if self.shear is not None:
            sx = float(rng.uniform(self.shear[0], self.shear[1]))
            sy = float(rng.uniform(self.shear[2], self.shear[3])) if len(self.shear) == 4 else 0.0
            shear = (sx, sy)
        return angle, (tx, ty), scale, shear

    def _apply_image(self, img):
        angle, translate, scale, shear = self._params(sample_rng(), *image_size(img))
        return G.affine(img, angle, translate, scale, shear, self.interpolation, self.fill, self.center)


class RandomRotation(BaseTransform):
    """Rotate by an angle drawn from `degrees` (Paddle's `RandomRotation`).

    Args:
      degrees: (min, max) in degrees counter-clockwise, or d for (-d, d).
      interpolation: "nearest" (default), "bilinear" or "bicubic".
      expand: grow the output to hold the whole rotated image.
      center: (x, y) centre of rotation; default the image centre.
      fill: value (or one per channel) for pixels from outside the input.
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> RandomRotation((90, 90))(np.arange(4).reshape(2, 2)).tolist()
      [[1, 3], [0, 2]]
    """

    def __init__(self, degrees, interpolation: str = "nearest", expand: bool = False, center=None, fill=0,
                 keys: Sequence[str] | None = None):
        super().__init__(keys)
        self.degrees = _angle_range(degrees, "degrees", "RandomRotation")
        self.interpolation = check_interpolation(interpolation, "RandomRotation")
        if center is not None:
            _check_pair(center, "center", "RandomRotation")
        self.expand, self.center, self.fill = expand, center, fill

    def _apply_image(self, img):
        angle = float(sample_rng().uniform(*self.degrees))
        return G.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)


class RandomPerspective(BaseTransform):
    """With probability `prob`, move each corner inwards at random and warp (Paddle's `RandomPerspective`).

    Args:
      prob: probability of warping, in [0, 1].
      distortion_scale: how far corners may move, as a fraction of half the size, in [0, 1].
      interpolation: "nearest" (default), "bilinear" or "bicubic".
      fill: value (or one per channel) for pixels from outside the input.
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> RandomPerspective(prob=1.0)(np.zeros((6, 8, 3), np.uint8)).shape
      (6, 8, 3)
    """

    def __init__(self, prob: float = 0.5, distortion_scale: float = 0.5, interpolation: str = "nearest", fill=0,
                 keys: Sequence[str] | None = None):
        super().__init__(keys)
        self.prob = _check_prob(prob, "RandomPerspective")
        if not isinstance(distortion_scale, numbers.Number) or not 0 <= distortion_scale <= 1:
            raise ValueError(f"RandomPerspective(distortion_scale) must be in [0, 1]; "
                             f"got distortion_scale={distortion_scale!r}.")
        self.distortion_scale = float(distortion_scale)
        self.interpolation = check_interpolation(interpolation, "RandomPerspective")
        if not isinstance(fill, (numbers.Number, list, tuple)):
            raise TypeError(f"RandomPerspective(fill) must be a number or one number per channel; got fill={fill!r}.")
        self.fill = fill

    def get_params(self, width: int, height: int, distortion_scale: float, rng=None):
        """Draw (startpoints, endpoints): the image corners and where they move to."""
        rng = sample_rng() if rng is None else rng
        dx, dy = int(distortion_scale * (width // 2)), int(distortion_scale * (height // 2))

        def near(n, d):
            return int(rng.uniform(0, d + 1))

        def far(n, d):
            return int(rng.uniform(n - d - 1, n))

        top_left = [near(width, dx), near(height, dy)]
        top_right = [far(width, dx), near(height, dy)]
        bottom_right = [far(width, dx), far(height, dy)]
        bottom_left = [near(width, dx), far(height, dy)]
        start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return start, [top_left, top_right, bottom_right, bottom_left]

    def _apply_image(self, img):
        rng = sample_rng()
        if rng.random() >= self.prob:
            return img
        start, end = self.get_params(*image_size(img), self.distortion_scale, rng=rng)
        return G.perspective(img, start, end, self.interpolation, self.fill)


class RandomErasing(BaseTransform):
    """With probability `prob`, erase a random box (Paddle's `RandomErasing`).

    Up to 10 tries draw an area fraction from `scale` and a log-uniform
    aspect ratio (height / width) from `ratio`; a box that fits strictly
    inside the image is erased, else the image is returned as it is.

    Args:
      prob: probability of erasing, in [0, 1].
      scale: (min, max) fraction of the image area, within [0, 1].
      ratio: (min, max) aspect ratio.
      value: a number, one per channel (3), or "random" (normal noise: N(0, 1)
        * 255 for numpy/PIL images, N(0, 1) for jax CHW arrays).
      inplace: numpy arrays only, write into the input (jax arrays are immutable).
      keys: see `BaseTransform`.

    Example:
      >>> import numpy as np
      >>> out = RandomErasing(prob=1.0, value=7)(np.zeros((8, 8, 3), np.uint8))
      >>> int(out.max())
      7
    """

    def __init__(self, prob: float = 0.5, scale: Sequence[float] = (0.02, 0.33), ratio: Sequence[float] = (0.3, 3.3),
                 value=0, inplace: bool = False, keys: Sequence[str] | None = None):
        super().__init__(keys)
        self.prob = _check_prob(prob, "RandomErasing")
        _check_pair(scale, "scale", "RandomErasing")
        if not 0 <= scale[0] <= scale[1] <= 1:
            raise ValueError(f"RandomErasing(scale) must be (min, max) within [0, 1]; got scale={scale!r}.")
        _check_pair(ratio, "ratio", "RandomErasing", positive=True)
        if ratio[0] > ratio[1]:
            raise ValueError(f"RandomErasing(ratio) must be (min, max); got ratio={ratio!r}.")
        if isinstance(value, str):
            if value != "random":
                raise ValueError(f"RandomErasing(value) as a string must be 'random'; got value={value!r}.")
        elif isinstance(value, numbers.Number):
            pass
        elif not isinstance(value, (list, tuple)) or len(value) not in (1, 3):
            raise ValueError(f"RandomErasing(value) must be a number, 1 or 3 numbers, or 'random'; got value={value!r}.")
        self.scale, self.ratio, self.value, self.inplace = tuple(scale), tuple(ratio), value, inplace

    def _apply_image(self, img):
        rng = sample_rng()
        if rng.random() >= self.prob:
            return img
        jax_in = is_jax(img)
        if F.is_pil(img):
            shape = np.asarray(img).shape
            h, w, c = shape[0], shape[1], shape[2] if len(shape) == 3 else 1
        elif jax_in:
            c, h, w = img.shape[-3:]
        else:
            h, w = img.shape[:2]
            c = img.shape[2] if img.ndim == 3 else 1
        if isinstance(self.value, (list, tuple)) and len(self.value) not in (1, c):
            raise ValueError(f"RandomErasing(value) has {len(self.value)} values but the image has {c} channels; "
                             f"pass one value or one per channel (value={self.value!r}).")
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            area = rng.uniform(*self.scale) * h * w
            aspect = math.exp(rng.uniform(*log_ratio))
            eh, ew = int(round(math.sqrt(area * aspect))), int(round(math.sqrt(area / aspect)))
            if eh >= h or ew >= w:
                continue
            if self.value == "random":
                noise = rng.normal(size=(c, eh, ew) if jax_in else (eh, ew, c))
                v = noise if jax_in else noise * 255
            else:
                v = np.asarray([self.value] if isinstance(self.value, numbers.Number) else self.value, np.float64)
                v = v if jax_in else v[None, None, :]
            if not jax_in and (img.ndim == 2 if isinstance(img, np.ndarray) else c == 1) and np.ndim(v) == 3:
                v = v[..., 0]
            top, left = int(rng.integers(0, h - eh + 1)), int(rng.integers(0, w - ew + 1))
            return G.erase(img, top, left, eh, ew, v, self.inplace)
        return img
