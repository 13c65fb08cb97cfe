"""Turning a list of samples into one batch (Paddle's `default_collate_fn`).

Runs in the worker processes: numpy only. The DataLoader moves the finished
batch onto devices in the main process.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["default_collate_fn", "default_convert_fn"]


def default_collate_fn(batch: list):
    """Stack a list of samples field by field into numpy arrays.

    Follows Paddle's `paddle.io.dataloader.collate.default_collate_fn`: numpy
    arrays and array-likes with `__array__` are stacked on a new first axis,
    numbers become a 1-D array, strings and bytes stay a list, dicts and
    tuples/lists are collated per key / per position (a tuple or list of
    fields comes back as a list, as in Paddle).

    Args:
      batch: a non-empty list of samples with the same structure.

    Returns:
      The batched structure with numpy arrays at the leaves.

    Example:
      >>> import numpy as np
      >>> out = default_collate_fn([(np.zeros(2), 1), (np.ones(2), 3)])
      >>> out[0].shape, out[1].tolist()
      ((2, 2), [1, 3])
    """
    if not batch:
        raise ValueError("default_collate_fn(batch) needs at least one sample; got an empty list.")
    sample = batch[0]
    if isinstance(sample, np.ndarray) or (hasattr(sample, "__array__") and not isinstance(sample, (str, bytes))):
        return np.stack([np.asarray(s) for s in batch], axis=0)
    if isinstance(sample, numbers.Number):
        return np.array(batch)
    if isinstance(sample, (str, bytes)):
        return list(batch)
    if isinstance(sample, Mapping):
        return {key: default_collate_fn([s[key] for s in batch]) for key in sample}
    if isinstance(sample, Sequence):
        width = len(sample)
        if any(len(s) != width for s in batch):
            raise ValueError(f"default_collate_fn: samples in a batch have different numbers of fields "
                             f"{sorted({len(s) for s in batch})}; every sample needs the same structure.")
        return [default_collate_fn(list(fields)) for fields in zip(*batch)]
    raise TypeError(f"default_collate_fn: a sample may hold numpy arrays, numbers, strings, dicts, lists and "
                    f"tuples; got {type(sample).__name__}. Pass collate_fn= to batch other types.")


def default_convert_fn(sample):
    """Convert one sample without batching (used when `batch_size=None`).

    Array-likes become numpy arrays; containers are converted element-wise.

    Args:
      sample: one sample.

    Returns:
      The same structure with numpy arrays at the leaves.

    Example:
      >>> default_convert_fn({"x": [1, 2]})
      {'x': [1, 2]}
    """
    if isinstance(sample, (np.ndarray, str, bytes)):
        return sample
    if hasattr(sample, "__array__"):
        return np.asarray(sample)
    if isinstance(sample, Mapping):
        return {key: default_convert_fn(v) for key, v in sample.items()}
    if isinstance(sample, (list, tuple)):
        return [default_convert_fn(v) for v in sample]
    return sample
