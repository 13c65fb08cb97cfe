"""Image datasets read from a directory tree (Paddle's DatasetFolder / ImageFolder)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np

from pdx.io import Dataset

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader"]

# Paddle's list, plus .npy (pdx: numpy arrays saved with np.save, read without pickle)
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp", ".npy")


def default_loader(path: str):
    """Read one sample: `.npy` with `np.load(allow_pickle=False)`, images with PIL as RGB.

    Args:
      path: a file path.

    Returns:
      A numpy array for `.npy`, a PIL RGB image otherwise (as Paddle's PIL
      backend; pdx transforms and the default collate accept both).

    Example:
      >>> import numpy as np, tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "a.npy"); np.save(p, np.ones((2, 2, 3), np.uint8))
      >>> default_loader(p).shape
      (2, 2, 3)
    """
    if path.lower().endswith(".npy"):
        return np.load(path, allow_pickle=False)  # never unpickle from a data file
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(f"Reading {path!r} needs Pillow (pip install pillow); .npy files work without it.") from e
    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


def _valid_file_check(extensions, is_valid_file, cls: str) -> Callable[[str], bool]:
    if extensions is not None and is_valid_file is not None:
        raise ValueError(f"{cls}: pass extensions= or is_valid_file=, not both.")
    if is_valid_file is not None:
        if not callable(is_valid_file):
            raise TypeError(f"{cls}(is_valid_file) must be callable path -> bool; got {type(is_valid_file).__name__}.")
        return is_valid_file
    extensions = IMG_EXTENSIONS if extensions is None else extensions
    if isinstance(extensions, str) or not isinstance(extensions, Sequence):
        raise TypeError(f"{cls}(extensions) must be a list or tuple such as ('.png',); got {extensions!r}.")
    lowered = tuple(e.lower() for e in extensions)
    return lambda path: path.lower().endswith(lowered)


def _walk_files(top: str, valid: Callable[[str], bool]) -> list[str]:
    files = []
    for root, _, names in sorted(os.walk(top, followlinks=True)):
        files.extend(os.path.join(root, name) for name in sorted(names) if valid(os.path.join(root, name)))
    return files


def _check_root(root, cls: str) -> str:
    if not isinstance(root, (str, os.PathLike)) or not os.path.isdir(os.path.expanduser(root)):
        raise ValueError(f"{cls}(root) must be an existing directory; got root={root!r}.")
    return os.path.expanduser(os.fspath(root))


class DatasetFolder(Dataset):
    """Labelled samples from `root/<class>/**/<file>` (Paddle's `paddle.vision.datasets.DatasetFolder`).

    Classes are the sorted sub-directory names; samples are listed class by
    class in sorted path order, as in Paddle.

    Args:
      root: the root directory.
      loader: path -> sample; default `default_loader` (PIL RGB image, or a
        numpy array for `.npy`).
      extensions: accepted file endings (case-insensitive); default
        `IMG_EXTENSIONS`. Give this or `is_valid_file`.
      transform: applied to each loaded sample (e.g. a `transforms.Compose`).
      is_valid_file: path -> bool, instead of `extensions` (pdx honours it;
        Paddle ignores it unless extensions is set to None internally).

    Returns:
      `dataset[i]` is `(sample, class_index)`.

    Attributes:
      classes, class_to_idx, samples (list of (path, class_index)), targets.

    Example:
      >>> import numpy as np, os, tempfile
      >>> root = tempfile.mkdtemp()
      >>> for c in ("cat", "dog"):
      ...     os.makedirs(os.path.join(root, c)); np.save(os.path.join(root, c, "0.npy"), np.zeros((2, 2, 3)))
      >>> ds = DatasetFolder(root)
      >>> ds.classes, len(ds), ds[1][1]
      (['cat', 'dog'], 2, 1)
    """

    def __init__(self, root, loader: Callable | None = None, extensions: Sequence[str] | None = None,
                 transform: Callable | None = None, is_valid_file: Callable[[str], bool] | None = None):
        self.root = _check_root(root, "DatasetFolder")
        valid = _valid_file_check(extensions, is_valid_file, "DatasetFolder")
        self.classes = sorted(d.name for d in os.scandir(self.root) if d.is_dir())
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self.samples = [(path, self.class_to_idx[c]) for c in self.classes
                        for path in _walk_files(os.path.join(self.root, c), valid)]
        if not self.samples:
            raise RuntimeError(f"DatasetFolder found no files in the class sub-directories of {self.root!r} "
                               f"(classes {self.classes}); accepted endings: {extensions or IMG_EXTENSIONS}.")
        self.targets = [t for _, t in self.samples]
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.transform = transform

    def __getitem__(self, index: int):
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        return sample, target

    def __len__(self) -> int:
        return len(self.samples)


class ImageFolder(Dataset):
    """Unlabelled samples from every matching file under `root` (Paddle's `paddle.vision.datasets.ImageFolder`).

    Args:
      root: the root directory (searched recursively, sorted paths).
      loader: path -> sample; default `default_loader`.
      extensions: accepted file endings; default `IMG_EXTENSIONS`.
      transform: applied to each loaded sample.
      is_valid_file: path -> bool, instead of `extensions`.

    Returns:
      `dataset[i]` is `[sample]` (a one-element list, as in Paddle).

    Example:
      >>> import numpy as np, os, tempfile
      >>> root = tempfile.mkdtemp(); np.save(os.path.join(root, "a.npy"), np.ones((2, 2, 3)))
      >>> len(ImageFolder(root)), ImageFolder(root)[0][0].shape
      (1, (2, 2, 3))
    """

    def __init__(self, root, loader: Callable | None = None, extensions: Sequence[str] | None = None,
                 transform: Callable | None = None, is_valid_file: Callable[[str], bool] | None = None):
        self.root = _check_root(root, "ImageFolder")
        self.samples = _walk_files(self.root, _valid_file_check(extensions, is_valid_file, "ImageFolder"))
        if not self.samples:
            raise RuntimeError(f"ImageFolder found no files under {self.root!r}; accepted endings: "
                               f"{extensions or IMG_EXTENSIONS}.")
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.transform = transform

    def __getitem__(self, index: int):
        sample = self.loader(self.samples[index])
        if self.transform is not None:
            sample = self.transform(sample)
        return [sample]

    def __len__(self) -> int:
        return len(self.samples)
