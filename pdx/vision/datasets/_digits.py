"""scikit-learn's bundled handwritten digits as a Paddle-style dataset (no download)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pdx.io import Dataset

__all__ = ["Digits"]

_MODES = ("train", "test")


class Digits(Dataset):
    """8x8 handwritten digits (1797 images, 10 classes) from scikit-learn's bundled copy.

    Shaped like Paddle's `paddle.vision.datasets.MNIST`: choose the split
    with `mode` and pass a `transform`. The split is a fixed shuffle of all
    images (seeded, so train and test never overlap and do not change between
    runs) with the last `test_fraction` as test.

    Args:
      mode: "train" or "test".
      transform: applied to each image (e.g. `transforms.ToTensor()`).
      test_fraction: share of images in the test split (keyword-only).
      split_seed: seed of the fixed shuffle (keyword-only).

    Returns:
      `dataset[i]` is `(image, label)`: image a uint8 HWC array (8, 8, 1)
      with values in [0, 255] (the 0..16 ink levels scaled by 255/16 and
      rounded) before `transform`; label an int64 array of shape (1,), as in
      Paddle's MNIST.

    Example:
      >>> train = Digits(mode="train")
      >>> img, label = train[0]
      >>> img.shape, img.dtype, label.shape, len(train) + len(Digits(mode="test"))
      ((8, 8, 1), dtype('uint8'), (1,), 1797)
    """

    NUM_CLASSES = 10

    def __init__(self, mode: str = "train", transform: Callable | None = None, *, test_fraction: float = 0.2,
                 split_seed: int = 0):
        if mode not in _MODES:
            raise ValueError(f"Digits(mode) must be 'train' or 'test'; got mode={mode!r}.")
        if not 0 < test_fraction < 1:
            raise ValueError(f"Digits(test_fraction) must be in (0, 1); got test_fraction={test_fraction!r}.")
        try:
            from sklearn.datasets import load_digits
        except ImportError as e:
            raise ImportError("Digits reads scikit-learn's bundled copy: pip install scikit-learn") from e
        images, labels = load_digits(return_X_y=True)
        order = np.random.RandomState(split_seed).permutation(len(images))
        n_test = int(round(len(images) * test_fraction))
        keep = order[len(images) - n_test:] if mode == "test" else order[:len(images) - n_test]
        self.mode, self.transform = mode, transform
        self.images = np.rint(images[keep] * (255.0 / 16.0)).astype(np.uint8).reshape(-1, 8, 8, 1)
        self.labels = labels[keep].astype(np.int64).reshape(-1, 1)

    def __getitem__(self, idx):
        image = self.images[idx]
        if self.transform is not None:
            image = self.transform(image)
        return image, self.labels[idx]

    def __len__(self) -> int:
        return len(self.images)
