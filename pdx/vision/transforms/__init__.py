"""pdx.vision.transforms: numpy image transforms with Paddle's names (run in DataLoader workers).

Images are PIL images or numpy HWC arrays; `ToTensor` makes float32 CHW
numpy arrays. The functionals (also in `pdx.vision.transforms.functional`)
and the transforms added with them keep the input's kind: PIL in, PIL out;
numpy HWC in, numpy out; jax CHW in, jax out. Random transforms draw from
`pdx.io.sample_rng()`, so results depend on the loader seed and sample index
only, not on the worker count.
"""

from pdx.vision.transforms import functional
from pdx.vision.transforms._augment import (
    BrightnessTransform,
    ColorJitter,
    ContrastTransform,
    Grayscale,
    HueTransform,
    Pad,
    RandomAffine,
    RandomErasing,
    RandomPerspective,
    RandomResizedCrop,
    RandomRotation,
    RandomVerticalFlip,
    SaturationTransform,
    Transpose,
)
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
from pdx.vision.transforms._transforms import (
    BaseTransform,
    CenterCrop,
    Compose,
    Normalize,
    RandomCrop,
    RandomHorizontalFlip,
    Resize,
    ToTensor,
)

__all__ = [
    "BaseTransform",
    "BrightnessTransform",
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "ContrastTransform",
    "Grayscale",
    "HueTransform",
    "Normalize",
    "Pad",
    "RandomAffine",
    "RandomCrop",
    "RandomErasing",
    "RandomHorizontalFlip",
    "RandomPerspective",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomVerticalFlip",
    "Resize",
    "SaturationTransform",
    "ToTensor",
    "Transpose",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_hue",
    "adjust_saturation",
    "affine",
    "center_crop",
    "crop",
    "erase",
    "functional",
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
