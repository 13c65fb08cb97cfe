"""pdx.vision.transforms: numpy image transforms with Paddle's names (run in DataLoader workers).

Images are PIL images or numpy HWC arrays; `ToTensor` makes float32 CHW
numpy arrays. Random transforms draw from `pdx.io.sample_rng()`, so results
depend on the loader seed and sample index only, not on the worker count.
"""

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
    "CenterCrop",
    "Compose",
    "Normalize",
    "RandomCrop",
    "RandomHorizontalFlip",
    "Resize",
    "ToTensor",
]
