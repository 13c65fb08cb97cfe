"""Map-style and iterable datasets with Paddle's names (`paddle.io.Dataset`, ...).

A map-style dataset answers `dataset[i]` and `len(dataset)`; an iterable one
answers `iter(dataset)`. Samples are numpy arrays, numbers, strings, or
tuples/lists/dicts of them: datasets run inside DataLoader worker processes,
which never touch jax, so they hold numpy data (`TensorDataset` converts jax
arrays to numpy once, up front).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ComposeDataset",
           "ConcatDataset", "ChainDataset", "Subset", "random_split"]


class Dataset:
    """Base class of map-style datasets (Paddle's `paddle.io.Dataset`).

    Subclasses implement `__getitem__(idx)` returning one sample and
    `__len__()`. The DataLoader calls `__getitem__` in its worker processes, so
    keep samples numpy (not jax) and the object picklable.

    Example:
      >>> import numpy as np
      >>> class Squares(Dataset):
      ...     def __getitem__(self, idx):
      ...         return np.float32(idx * idx)
      ...     def __len__(self):
      ...         return 4
      >>> [float(s) for s in Squares()]
      [0.0, 1.0, 4.0, 9.0]
    """

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__(idx).")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__().")

    def __iter__(self):
        # Python's legacy __getitem__ iteration would never stop on a numpy
        # index error; bound it by len().
        for i in range(len(self)):
            yield self[i]


class IterableDataset(Dataset):
    """Base class of iterable (streaming) datasets (Paddle's `paddle.io.IterableDataset`).

    Subclasses implement `__iter__()`. With `num_workers > 0` every worker
    process iterates its own copy; split the stream with
    `pdx.io.get_worker_info()` (its `id` and `num_workers`) or each sample
    arrives `num_workers` times, exactly as in Paddle.

    Example:
      >>> import numpy as np
      >>> class Count(IterableDataset):
      ...     def __iter__(self):
      ...         yield from (np.int32(i) for i in range(3))
      >>> [int(x) for x in Count()]
      [0, 1, 2]
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__().")

    def __getitem__(self, idx):
        raise TypeError(f"{type(self).__name__} is an IterableDataset: it has no __getitem__; iterate it.")

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: it has no len().")


def _to_numpy(value, where: str) -> np.ndarray:
    try:
        return np.asarray(value)
    except Exception as e:  # noqa: BLE001  (re-raised with the argument named)
        raise TypeError(f"{where} must be array-like (numpy, jax array, list); got {type(value).__name__}: {e}") from e


class TensorDataset(Dataset):
    """A dataset of arrays sliced along their first axis (Paddle's `paddle.io.TensorDataset`).

    Args:
      tensors: a list of arrays (numpy or jax) with the same first dimension.
        They are converted to numpy once, so worker processes never touch jax.

    Returns:
      `dataset[i]` is a tuple `(tensors[0][i], tensors[1][i], ...)`.

    Example:
      >>> import numpy as np
      >>> ds = TensorDataset([np.zeros((5, 2)), np.arange(5)])
      >>> len(ds), ds[3][1]
      (5, np.int64(3))
    """

    def __init__(self, tensors: Sequence[Any]):
        if not isinstance(tensors, (list, tuple)) or not tensors:
            raise TypeError(f"TensorDataset(tensors) needs a non-empty list of arrays; got {type(tensors).__name__}.")
        arrays = [_to_numpy(t, f"TensorDataset tensors[{i}]") for i, t in enumerate(tensors)]
        lengths = [a.shape[0] if a.ndim else None for a in arrays]
        if None in lengths or len(set(lengths)) != 1:
            shapes = [a.shape for a in arrays]
            raise ValueError(f"TensorDataset(tensors): every array needs the same first dimension; got shapes {shapes}.")
        self.tensors = arrays

    def __getitem__(self, idx):
        return tuple(t[idx] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class ComposeDataset(Dataset):
    """Zip map-style datasets of equal length field-wise (Paddle's `paddle.io.ComposeDataset`).

    Args:
      datasets: a list of map-style datasets with the same length.

    Returns:
      `dataset[i]` is one flat tuple of the fields of every dataset's sample i.

    Example:
      >>> import numpy as np
      >>> a = TensorDataset([np.arange(3)]); b = TensorDataset([np.arange(3) * 10, np.ones(3)])
      >>> [int(v) for v in ComposeDataset([a, b])[2]]
      [2, 20, 1]
    """

    def __init__(self, datasets: Sequence[Dataset]):
        datasets = list(datasets)
        if not datasets:
            raise ValueError("ComposeDataset(datasets) needs at least one dataset; got an empty list.")
        for i, ds in enumerate(datasets):
            if isinstance(ds, IterableDataset):
                raise TypeError(f"ComposeDataset(datasets): datasets[{i}] is an IterableDataset; only map-style datasets can be zipped.")
        lengths = [len(ds) for ds in datasets]
        if len(set(lengths)) != 1:
            raise ValueError(f"ComposeDataset(datasets): every dataset needs the same length; got lengths {lengths}.")
        self.datasets = datasets

    def __len__(self) -> int:
        return len(self.datasets[0])

    def __getitem__(self, idx):
        fields = []
        for ds in self.datasets:
            sample = ds[idx]
            fields.extend(sample if isinstance(sample, (tuple, list)) else [sample])
        return tuple(fields)


class ConcatDataset(Dataset):
    """Concatenate map-style datasets end to end (Paddle's `paddle.io.ConcatDataset`).

    Args:
      datasets: a list of map-style datasets.

    Example:
      >>> import numpy as np
      >>> ds = ConcatDataset([TensorDataset([np.arange(2)]), TensorDataset([np.arange(3)])])
      >>> len(ds), int(ds[3][0])
      (5, 1)
    """

    def __init__(self, datasets: Sequence[Dataset]):
        datasets = list(datasets)
        if not datasets:
            raise ValueError("ConcatDataset(datasets) needs at least one dataset; got an empty list.")
        for i, ds in enumerate(datasets):
            if isinstance(ds, IterableDataset):
                raise TypeError(f"ConcatDataset(datasets): datasets[{i}] is an IterableDataset; use ChainDataset for streams.")
        self.datasets = datasets
        self.cumulative_sizes = np.cumsum([len(ds) for ds in datasets]).tolist()

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"ConcatDataset index {idx} out of range for length {n}.")
        idx = idx % n
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Chain iterable datasets one after another (Paddle's `paddle.io.ChainDataset`).

    Args:
      datasets: a list of iterable datasets.

    Example:
      >>> class R(IterableDataset):
      ...     def __init__(self, n): self.n = n
      ...     def __iter__(self): return iter(range(self.n))
      >>> list(ChainDataset([R(2), R(3)]))
      [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Sequence[IterableDataset]):
        datasets = list(datasets)
        for i, ds in enumerate(datasets):
            if not isinstance(ds, IterableDataset):
                raise TypeError(f"ChainDataset(datasets): datasets[{i}] is a {type(ds).__name__}, not an IterableDataset.")
        self.datasets = datasets

    def __iter__(self):
        for ds in self.datasets:
            yield from ds


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order (Paddle's `paddle.io.Subset`).

    Args:
      dataset: a map-style dataset.
      indices: a sequence of ints indexing `dataset`.

    Example:
      >>> import numpy as np
      >>> sub = Subset(TensorDataset([np.arange(10)]), indices=[7, 2])
      >>> [int(s[0]) for s in sub]
      [7, 2]
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = [int(i) for i in indices]

    def __getitem__(self, idx):
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


def _split_lengths(n: int, lengths: Sequence[float]) -> list[int]:
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split(lengths): fraction lengths[{i}]={frac} is not in [0, 1].")
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(sizes)):  # Paddle spreads the remainder round-robin
            sizes[i % len(sizes)] += 1
        return sizes
    if sum(lengths) != n or any(int(x) != x or x < 0 for x in lengths):
        raise ValueError(f"random_split(lengths): non-negative ints summing to len(dataset)={n}, "
                         f"or fractions summing to 1, are needed; got lengths={list(lengths)}.")
    return [int(x) for x in lengths]


def random_split(dataset: Dataset, lengths: Sequence[float], generator=None) -> list[Subset]:
    """Randomly split `dataset` into non-overlapping subsets (Paddle's `paddle.io.random_split`).

    Args:
      dataset: a map-style dataset.
      lengths: the subset lengths (ints summing to `len(dataset)`) or fractions
        summing to 1; with fractions the floor-rounding remainder is handed
        out one by one from the first subset, as in Paddle.
      generator: an int seed, a `numpy.random.Generator` or `RandomState`, or
        None for numpy's global generator. pdx difference: Paddle draws the
        permutation from its own generator, pdx from numpy, so the same seed
        gives a different (equally random) split.

    Returns:
      A list of `Subset`s, one per length.

    Example:
      >>> import numpy as np
      >>> a, b = random_split(TensorDataset([np.arange(10)]), [0.7, 0.3], generator=0)
      >>> len(a), len(b), sorted(a.indices + b.indices) == list(range(10))
      (7, 3, True)
    """
    n = len(dataset)
    sizes = _split_lengths(n, lengths)
    perm = _permutation(n, generator).tolist()
    out, start = [], 0
    for size in sizes:
        out.append(Subset(dataset, perm[start:start + size]))
        start += size
    return out


def _permutation(n: int, generator) -> np.ndarray:
    if generator is None:
        return np.random.permutation(n)
    if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
        return np.random.RandomState(int(generator)).permutation(n)
    if isinstance(generator, (np.random.Generator, np.random.RandomState)):
        return generator.permutation(n)
    raise TypeError(f"generator must be an int seed, a numpy Generator/RandomState or None; got {type(generator).__name__}.")
