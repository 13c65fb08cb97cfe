"""pdx.vision.transforms.functional: the image functionals (Paddle's `paddle.vision.transforms.functional`).

`import pdx.vision.transforms.functional as F` as in Paddle code; the same
functions are exported from `pdx.vision.transforms`.
"""

from pdx.vision.transforms._color import (
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
    normalize,
    to_grayscale,
    to_tensor,
)
from pdx.vision.transforms._geometry import (
    affine,
    center_crop,
    crop,
    erase,
    hflip,
    pad,
    perspective,
    resize,
    rotate,
    vflip,
)

__all__ = [
    "adjust_brightness",
    "adjust_contrast",
    "adjust_hue",
    "adjust_saturation",
    "affine",
    "center_crop",
    "crop",
    "erase",
    "hflip",
    "normalize",
    "pad",
    "perspective",
    "resize",
    "rotate",
    "to_grayscale",
    "to_tensor",
    "vflip",
]
