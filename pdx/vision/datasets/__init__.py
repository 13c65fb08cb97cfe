"""pdx.vision.datasets: Paddle-style image datasets (map-style `pdx.io.Dataset`s).

`Digits` ships with scikit-learn (no download); `DatasetFolder` and
`ImageFolder` read a directory tree (PIL images, or `.npy` arrays).
"""

from pdx.vision.datasets._digits import Digits
from pdx.vision.datasets._folder import DatasetFolder, ImageFolder

__all__ = ["DatasetFolder", "Digits", "ImageFolder"]
