"""Samplers: which sample indices a DataLoader reads, in which order and batches.

Paddle's classes and arguments. pdx adds one protocol: `set_epoch(epoch)`.
The DataLoader calls it before each epoch, and a sampler whose order is a
pure function of (its seed, epoch) reports `epoch_deterministic = True`; only
then can a resumed run, or a worker process, recompute an epoch's order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np

from pdx.io._dataset import IterableDataset

__all__ = ["Sampler", "SequenceSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DistributedBatchSampler"]


class Sampler:
    """Base class of index samplers (Paddle's `paddle.io.Sampler`).

    Subclasses implement `__iter__()` yielding sample indices and, where known,
    `__len__()`.

    Args:
      data_source: the dataset being sampled (optional).

    Example:
      >>> class Evens(Sampler):
      ...     def __iter__(self): return iter(range(0, len(self.data_source), 2))
      ...     def __len__(self): return (len(self.data_source) + 1) // 2
      >>> list(Evens(range(5)))
      [0, 2, 4]
    """

    epoch_deterministic = False

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__().")

    def set_epoch(self, epoch: int) -> None:
        """Tell the sampler which epoch comes next (no-op unless it reshuffles per epoch)."""


class SequenceSampler(Sampler):
    """Indices 0, 1, ..., len(data_source) - 1 in order (Paddle's `paddle.io.SequenceSampler`).

    Args:
      data_source: the dataset being sampled.

    Example:
      >>> list(SequenceSampler(range(3)))
      [0, 1, 2]
    """

    epoch_deterministic = True

    def __init__(self, data_source):
        super().__init__(data_source)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order (Paddle's `paddle.io.RandomSampler`).

    Args:
      data_source: the dataset being sampled.
      replacement: draw with replacement.
      num_samples: how many indices per epoch (default `len(data_source)`).
      generator: where the randomness comes from:
        * None (Paddle's default): numpy's global generator, so
          `np.random.seed(s)` makes it match Paddle's order exactly;
        * an int seed (pdx addition): epoch `e` is drawn from
          `np.random.RandomState(seed + e)`, the same order in every process;
          the DataLoader uses this form with its own seed;
        * a numpy `Generator`/`RandomState`: drawn from it;
        * an iterator of indices (Paddle's form): yields them as they come.

    Example:
      >>> sorted(RandomSampler(range(4), generator=0)) == [0, 1, 2, 3]
      True
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        super().__init__(data_source)
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler(replacement) must be a bool; got replacement={replacement!r}.")
        self.replacement = replacement
        self._num_samples = num_samples
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"RandomSampler(num_samples) must be a positive int; got num_samples={self.num_samples!r}.")
        if not replacement and self.num_samples > len(data_source):
            raise ValueError(f"RandomSampler: num_samples={self.num_samples} > len(data_source)={len(data_source)} "
                             "needs replacement=True.")
        self.generator = generator
        self.epoch = 0

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    @property
    def epoch_deterministic(self) -> bool:
        return isinstance(self.generator, (int, np.integer)) and not isinstance(self.generator, bool)

    def set_epoch(self, epoch: int) -> None:
        """Select epoch `epoch`'s order (used with an int seed)."""
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[int]:
        gen = self.generator
        if gen is not None and not isinstance(gen, (int, np.integer, np.random.Generator, np.random.RandomState)):
            for _, index in zip(range(self.num_samples), gen):
                yield index
            return
        if gen is None:
            draw = np.random
        elif isinstance(gen, (np.random.Generator, np.random.RandomState)):
            draw = gen
        else:
            draw = np.random.RandomState((int(gen) + self.epoch) % 2**32)
        yield from draw.choice(np.arange(len(self.data_source)), self.num_samples, replace=self.replacement).tolist()

    def __len__(self) -> int:
        return self.num_samples



class SubsetRandomSampler(Sampler):
    """The given indices in random order (Paddle's `paddle.io.SubsetRandomSampler`).

    The order is drawn from numpy's global generator (`np.random.seed(s)`
    fixes it); Paddle draws it from its own generator, so the two orders differ.

    Args:
      indices: the dataset indices to sample from (not empty).

    Example:
      >>> sorted(SubsetRandomSampler([4, 1, 7]))
      [1, 4, 7]
    """

    def __init__(self, indices) -> None:
        if len(indices) == 0:
            raise ValueError("The length of `indices` in SubsetRandomSampler should be greater than 0.")
        super().__init__(None)
        self.indices = indices

    def __iter__(self) -> Iterator[int]:
        for i in np.random.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


def _as_weights(weights) -> np.ndarray:
    if not isinstance(weights, np.ndarray) and hasattr(weights, "numpy"):
        weights = weights.numpy()  # a paddle tensor
    try:
        weights = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"WeightedRandomSampler: weights must be a 1-D or 2-D array of non-negative numbers; "
                        f"got {type(weights).__name__}") from e
    if weights.ndim not in (1, 2):
        raise ValueError(f"WeightedRandomSampler: weights should be a 1-D or 2-D array; got weights.shape={weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("WeightedRandomSampler: weights must be finite and >= 0")
    return weights


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probability proportional to `weights`
    (Paddle's `paddle.io.WeightedRandomSampler`).

    Drawn with `np.random.choice` from numpy's global generator, as Paddle
    does: after `np.random.seed(s)` the indices equal Paddle's. A 2-D
    `weights` draws `num_samples` per row, row after row.

    Args:
      weights: non-negative weights, 1-D (one per sample) or 2-D.
      num_samples: how many indices to draw (per row).
      replacement: draw with replacement; without it every row needs at
        least `num_samples` positive weights.

    Example:
      >>> set(WeightedRandomSampler([0.0, 1.0, 0.0, 2.0], num_samples=8)) <= {1, 3}
      True
    """

    def __init__(self, weights, num_samples: int, replacement: bool = True) -> None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer; got num_samples={num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value; got replacement={replacement!r}")
        super().__init__(None)
        self.weights = _as_weights(weights)
        rows = self.weights.reshape(-1, self.weights.shape[-1])
        positive = np.sum(rows > 0, axis=1)
        if not np.all(positive > 0):
            raise ValueError("WeightedRandomSampler: every row of weights needs a positive value")
        if not replacement and not np.all(positive >= num_samples):
            raise ValueError(f"WeightedRandomSampler: replacement=False needs at least num_samples={num_samples} positive "
                             f"weights per row; got {positive.min()}")
        self.num_samples = num_samples
        self.replacement = replacement

    def __iter__(self) -> Iterator[int]:
        rows = self.weights.reshape(-1, self.weights.shape[-1])
        rows = rows / rows.sum(axis=1, keepdims=True)
        for row in rows:
            yield from np.random.choice(row.shape[0], self.num_samples, self.replacement, row).tolist()

    def __len__(self) -> int:
        return self.num_samples * (self.weights.size // self.weights.shape[-1])


class BatchSampler(Sampler):
    """Group a sampler's indices into lists of `batch_size` (Paddle's `paddle.io.BatchSampler`).

    Give either `dataset` (then `shuffle` picks RandomSampler or
    SequenceSampler) or `sampler`.

    Args:
      dataset: a map-style dataset.
      sampler: a Sampler or any iterable of indices (with `dataset=None`).
      shuffle: shuffle the dataset's indices (only with `dataset`).
      batch_size: indices per batch, a positive int.
      drop_last: drop the last, short batch.

    Example:
      >>> list(BatchSampler(range(5), batch_size=2))
      [[0, 1], [2, 3], [4]]
    """

    def __init__(self, dataset=None, sampler=None, shuffle: bool = False, batch_size: int = 1, drop_last: bool = False):
        if dataset is None:
            if sampler is None:
                raise ValueError("BatchSampler needs either dataset= or sampler=; got neither.")
            if not isinstance(sampler, (Sampler, Iterable)):
                raise TypeError(f"BatchSampler(sampler) must be a Sampler or an iterable of indices; got {type(sampler).__name__}.")
            if shuffle:
                raise ValueError("BatchSampler(shuffle=True) only applies with dataset=; the given sampler decides the order.")
            self.sampler = sampler
        else:
            if isinstance(dataset, IterableDataset):
                raise TypeError("BatchSampler(dataset) must be map-style; an IterableDataset has no indices.")
            if sampler is not None:
                raise ValueError("BatchSampler: give dataset= or sampler=, not both.")
            if not isinstance(shuffle, bool):
                raise TypeError(f"BatchSampler(shuffle) must be a bool; got shuffle={shuffle!r}.")
            self.sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"BatchSampler(batch_size) must be a positive int; got batch_size={batch_size!r}.")
        if not isinstance(drop_last, bool):
            raise TypeError(f"BatchSampler(drop_last) must be a bool; got drop_last={drop_last!r}.")
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last

    @property
    def epoch_deterministic(self) -> bool:
        return bool(getattr(self.sampler, "epoch_deterministic", False))

    def set_epoch(self, epoch: int) -> None:
        """Forward the epoch to the underlying sampler."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _default_replicas() -> tuple[int, int]:
    import jax  # only the main process builds samplers; workers receive them pickled

    return jax.process_count(), jax.process_index()


class DistributedBatchSampler(BatchSampler):
    """The batches of one data-parallel process (Paddle's `paddle.io.DistributedBatchSampler`).

    The index list is padded (by repeating its head) to a multiple of
    `num_replicas`, shuffled with `np.random.RandomState(epoch)` when
    `shuffle=True` (the same order in every process, as in Paddle), and dealt
    out batch by batch: process `rank` takes every `num_replicas`-th block of
    `batch_size` indices.

    Args:
      dataset: a map-style dataset.
      batch_size: indices per batch, per process.
      num_replicas: number of processes; default `jax.process_count()`.
      rank: this process; default `jax.process_index()`.
      shuffle: reshuffle every epoch (see `set_epoch`).
      drop_last: drop the last, short batch.

    Example:
      >>> s = DistributedBatchSampler(range(10), batch_size=2, num_replicas=2, rank=1)
      >>> list(s)
      [[2, 3], [6, 7], [9]]
    """

    epoch_deterministic = True

    def __init__(self, dataset, batch_size: int, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = False, drop_last: bool = False):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"DistributedBatchSampler(batch_size) must be a positive int; got batch_size={batch_size!r}.")
        for name, value in (("shuffle", shuffle), ("drop_last", drop_last)):
            if not isinstance(value, bool):
                raise TypeError(f"DistributedBatchSampler({name}) must be a bool; got {name}={value!r}.")
        if num_replicas is None or rank is None:
            count, index = _default_replicas()
            num_replicas = count if num_replicas is None else num_replicas
            rank = index if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas <= 0:
            raise ValueError(f"DistributedBatchSampler(num_replicas) must be a positive int; got num_replicas={num_replicas!r}.")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedBatchSampler(rank) must be an int in [0, num_replicas={num_replicas}); got rank={rank!r}.")
        self.dataset, self.sampler = dataset, None
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last
        self.nranks, self.local_rank = num_replicas, rank
        self.epoch = 0
        self.num_samples = int(math.ceil(len(dataset) / num_replicas))
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose shuffle comes next (`RandomState(epoch)`, as in Paddle)."""
        self.epoch = int(epoch)

    def _local_indices(self) -> list[int]:
        n = len(self.dataset)
        indices = list(range(n))
        pad = self.total_size - n
        indices += (indices * math.ceil(pad / n))[:pad] if pad > n else indices[:pad]
        if self.shuffle:
            np.random.RandomState(self.epoch).shuffle(indices)
            self.epoch += 1  # Paddle advances on its own between epochs; set_epoch overrides
        if self.nranks == 1:
            return indices
        block = self.batch_size * self.nranks
        tail = self.total_size % block
        local = []
        for i in range(self.local_rank * self.batch_size, len(indices) - tail, block):
            local.extend(indices[i:i + self.batch_size])
        tail_per_rank = tail // self.nranks
        rest = indices[len(indices) - tail:]
        local.extend(rest[self.local_rank * tail_per_rank:(self.local_rank + 1) * tail_per_rank])
        return local

    def __iter__(self) -> Iterator[list[int]]:
        local = self._local_indices()
        for start in range(0, len(local), self.batch_size):
            batch = local[start:start + self.batch_size]
            if len(batch) == self.batch_size or not self.drop_last:
                yield batch

    def __len__(self) -> int:
        n = self.num_samples
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
