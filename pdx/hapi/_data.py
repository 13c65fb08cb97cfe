"""Turn what `Model.fit/evaluate/predict` receive into an iterable of batches.

Accepted: a `pdx.io.Dataset` (batched by `pdx.io.DataLoader`, which gets
batch_size, shuffle, drop_last and num_workers), any map-style dataset
(`__getitem__` + `__len__`, batched here in-process), a tuple/list of arrays
with one leading sample axis (`(x_train, y_train)`), a single array, or any
iterable of ready batches (a `pdx.io.DataLoader`, a list of tuples, a
generator). A batch is a list of fields; each field an array.
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_batches", "as_fields"]


def _is_array(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _host(x):
    """numpy int64/float64 -> 32 bits (jax's defaults); jax arrays pass through."""
    if isinstance(x, np.ndarray) or np.isscalar(x):
        x = np.asarray(x)
        if x.dtype == np.int64:
            return x.astype(np.int32)
        if x.dtype == np.float64:
            return x.astype(np.float32)
    return x


def as_fields(batch) -> list:
    """A batch as a list of arrays (a dict batch keeps its value order)."""
    if isinstance(batch, dict):
        batch = list(batch.values())
    if _is_array(batch):
        return [_host(batch)]
    if isinstance(batch, (list, tuple)):
        return [_host(f) if _is_array(f) or np.isscalar(f) else _host(np.asarray(f)) for f in batch]
    raise TypeError(f"a batch must be an array, a tuple/list of arrays or a dict; got {type(batch).__name__}")


class _ArrayBatches:
    """Batches of aligned arrays (or a map-style dataset), shuffled per epoch with a fixed seed."""

    def __init__(self, source, batch_size, shuffle, drop_last, seed):
        self.source, self.batch_size, self.shuffle, self.drop_last = source, batch_size, shuffle, drop_last
        self.arrays = isinstance(source, list)
        self.n = len(source[0]) if self.arrays else len(source)
        self.epoch = 0
        self.seed = seed

    def __len__(self):
        return self.n // self.batch_size if self.drop_last else -(-self.n // self.batch_size)

    def __iter__(self):
        order = np.arange(self.n)
        if self.shuffle:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(self.n)
        self.epoch += 1
        for i in range(len(self)):
            idx = order[i * self.batch_size:(i + 1) * self.batch_size]
            if self.arrays:
                yield [_host(np.asarray(a[idx]) if isinstance(a, np.ndarray) else a[idx]) for a in self.source]
            else:
                samples = [as_fields(self.source[int(j)]) for j in idx]
                yield [np.stack([s[f] for s in samples]) for f in range(len(samples[0]))]


def _pdx_io():
    try:
        import pdx.io as io
    except ImportError:
        return None
    return io if hasattr(io, "DataLoader") and hasattr(io, "Dataset") else None


def make_batches(data, *, batch_size: int, shuffle: bool, drop_last: bool, num_workers: int, seed: int, what: str):
    """An iterable of batches (with `len` where known) for `data`, or None."""
    if data is None:
        return None
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"Model.{what}: batch_size must be a positive int; got batch_size={batch_size!r}")
    io = _pdx_io()
    if io is not None and isinstance(data, io.DataLoader):
        return data
    if io is not None and isinstance(data, getattr(io, "IterableDataset", ())):
        # An iterable dataset has no indices to shuffle; it yields samples in its own order.
        return io.DataLoader(data, batch_size=batch_size, drop_last=drop_last, num_workers=num_workers)
    if io is not None and isinstance(data, io.Dataset):
        return io.DataLoader(data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, num_workers=num_workers)
    if _is_array(data):
        data = (data,)
    if isinstance(data, (tuple, list)) and data and all(_is_array(a) for a in data):
        n = {len(a) for a in data}
        if len(n) != 1:
            raise ValueError(f"Model.{what}: the arrays in {what}'s data must share their first (sample) dimension; "
                             f"got shapes {[tuple(a.shape) for a in data]}")
        return _ArrayBatches(list(data), batch_size, shuffle, drop_last, seed)
    if hasattr(data, "__getitem__") and hasattr(data, "__len__") and not isinstance(data, (list, tuple, str)):
        return _ArrayBatches(data, batch_size, shuffle, drop_last, seed)
    if hasattr(data, "__iter__") and not isinstance(data, (str, bytes)):
        return data
    raise TypeError(f"Model.{what}: data must be a pdx.io.Dataset / DataLoader, a tuple of arrays (x, y), a "
                    f"map-style dataset or an iterable of batches; got {type(data).__name__}")
