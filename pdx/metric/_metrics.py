"""Paddle's metrics: the per-batch part runs on device, accumulation on the host.

`compute(*outputs_and_labels)` is pure jax and runs inside `pdx.Model`'s
compiled train/eval step (top-k, thresholding, bucketing: the parts that
touch whole prediction tensors). Its small result comes back to the host,
where `update(...)` accumulates counts in numpy; `accumulate()` reports the
value and `reset()` starts over. Outside `pdx.Model` the same calls work
eagerly, as in Paddle.
"""

from __future__ import annotations

import abc

import jax.numpy as jnp
import numpy as np

__all__ = ["Metric", "Accuracy", "Precision", "Recall", "Auc", "accuracy"]


def _np(x):
    return np.asarray(x)


class Metric(abc.ABC):
    """Base class of metrics (Paddle's `paddle.metric.Metric`).

    Subclasses implement `update`, `accumulate`, `reset` and `name`, and may
    override `compute` (pure jax, run on device inside compiled steps); its
    outputs are `update`'s arguments.

    Example:
      >>> import numpy as np, pdx
      >>> class Mean(pdx.metric.Metric):
      ...     def __init__(self): self.reset()
      ...     def reset(self): self.total, self.count = 0.0, 0
      ...     def update(self, x): self.total += float(np.sum(x)); self.count += np.size(x)
      ...     def accumulate(self): return self.total / max(self.count, 1)
      ...     def name(self): return "mean"
      >>> m = Mean(); m.update(np.array([1.0, 3.0])); m.accumulate()
      2.0
    """

    def compute(self, *args):
        """Per-batch device computation; by default passes its inputs through."""
        return args

    @abc.abstractmethod
    def update(self, *args):
        """Accumulate one batch (host side, numpy)."""

    @abc.abstractmethod
    def accumulate(self):
        """The metric over everything seen since `reset`."""

    @abc.abstractmethod
    def reset(self):
        """Forget the accumulated state."""

    @abc.abstractmethod
    def name(self):
        """The metric's name(s), used as log keys."""


class Accuracy(Metric):
    """Top-k classification accuracy (Paddle's `paddle.metric.Accuracy`).

    Args:
      topk: an int or tuple of ints; one accuracy per k.
      name: the log key (default 'acc'; 'acc_top{k}' per k when several).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> m = pdx.metric.Accuracy()
      >>> correct = m.compute(jnp.array([[0.1, 0.9], [0.8, 0.2]]), jnp.array([1, 1]))
      >>> m.update(correct)
      0.5
    """

    def __init__(self, topk=(1,), name=None, *args, **kwargs):
        topk = (topk,) if isinstance(topk, int) else tuple(topk)
        if not topk or any(not isinstance(k, int) or k < 1 for k in topk):
            raise ValueError(f"Accuracy: topk must be positive ints; got topk={topk!r}")
        self.topk = topk
        self.maxk = max(topk)
        self._init_name(name)
        self.reset()

    def _init_name(self, name):
        name = name or "acc"
        self._name = [f"{name}_top{k}" for k in self.topk] if self.maxk != 1 else [name]

    def compute(self, pred, label, *args):
        """(N, C) scores and (N,) or (N, 1) labels -> (N, maxk) float32 hits."""
        pred = jnp.asarray(pred)
        label = jnp.asarray(label)
        if label.ndim == pred.ndim and label.shape[-1] == 1:
            label = label[..., 0]
        elif label.ndim == pred.ndim and label.shape[-1] == pred.shape[-1]:
            label = jnp.argmax(label, axis=-1)  # one-hot / soft labels
        idx = jnp.argsort(-pred.astype(jnp.float32), axis=-1, stable=True)[..., : self.maxk]
        return (idx == label[..., None].astype(idx.dtype)).astype(jnp.float32)

    def update(self, correct, *args):
        """Add a batch of hits from `compute`; returns this batch's accuracy."""
        correct = _np(correct)
        num = correct.reshape(-1, correct.shape[-1]).shape[0]
        accs = []
        for i, k in enumerate(self.topk):
            hits = float(correct[..., :k].sum())
            self.total[i] += hits
            self.count[i] += num
            accs.append(hits / num if num else 0.0)
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self):
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self):
        res = [t / c if c else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(self.topk) == 1 else res

    def name(self):
        return self._name


class _Binary(Metric):
    """Shared parts of Precision and Recall (binary, threshold 0.5)."""

    def __init__(self, name="", *args, **kwargs):
        self._name = name
        self.reset()

    def compute(self, preds, labels, *args):
        """Threshold on device: (N,) int32 predictions and labels."""
        preds = jnp.asarray(preds).reshape(-1)
        return (preds >= 0.5).astype(jnp.int32), jnp.asarray(labels).reshape(-1).astype(jnp.int32)

    def update(self, preds, labels, *args):
        """Count one batch: `preds` are probabilities (or 0/1 from `compute`)."""
        preds = np.floor(_np(preds).reshape(-1) + 0.5).astype(np.int64)
        labels = _np(labels).reshape(-1).astype(np.int64)
        if preds.shape != labels.shape:
            raise ValueError(f"{type(self).__name__}.update: preds has {preds.size} values but labels has {labels.size}")
        self.tp += int(((preds == 1) & (labels == 1)).sum())
        self.fp += int(((preds == 1) & (labels != 1)).sum())
        self.fn += int(((preds != 1) & (labels == 1)).sum())

    def reset(self):
        self.tp = self.fp = self.fn = 0

    def name(self):
        return self._name


class Precision(_Binary):
    """Binary precision tp / (tp + fp) (Paddle's `paddle.metric.Precision`).

    Example:
      >>> import numpy as np, pdx
      >>> m = pdx.metric.Precision()
      >>> m.update(np.array([0.9, 0.8, 0.1]), np.array([1, 0, 0])); m.accumulate()
      0.5
    """

    def __init__(self, name="precision", *args, **kwargs):
        super().__init__(name, *args, **kwargs)

    def accumulate(self):
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0


class Recall(_Binary):
    """Binary recall tp / (tp + fn) (Paddle's `paddle.metric.Recall`).

    Example:
      >>> import numpy as np, pdx
      >>> m = pdx.metric.Recall()
      >>> m.update(np.array([0.9, 0.2, 0.1]), np.array([1, 1, 0])); m.accumulate()
      0.5
    """

    def __init__(self, name="recall", *args, **kwargs):
        super().__init__(name, *args, **kwargs)

    def accumulate(self):
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0


class Auc(Metric):
    """Area under the ROC curve by histogram (Paddle's `paddle.metric.Auc`).

    Args:
      curve: 'ROC' (the only curve Paddle implements).
      num_thresholds: histogram bins over [0, 1].
      name: the log key.

    `preds` are (N, 2) class probabilities (column 1 is the positive class)
    or (N,) / (N, 1) positive probabilities.

    Example:
      >>> import numpy as np, pdx
      >>> m = pdx.metric.Auc()
      >>> m.update(np.array([[0.2, 0.8], [0.7, 0.3]]), np.array([1, 0])); m.accumulate()
      1.0
    """

    def __init__(self, curve="ROC", num_thresholds=4095, name="auc", *args, **kwargs):
        if curve != "ROC":
            raise ValueError(f"Auc: only curve='ROC' is supported; got curve={curve!r}")
        if not isinstance(num_thresholds, int) or num_thresholds < 1:
            raise ValueError(f"Auc: num_thresholds must be a positive int; got {num_thresholds!r}")
        self._curve = curve
        self._num_thresholds = num_thresholds
        self._name = name
        self.reset()

    def compute(self, preds, labels, *args):
        """Bucket on device: (N,) int32 bin indices and labels."""
        preds = jnp.asarray(preds)
        pos = preds[..., -1] if preds.ndim == 2 and preds.shape[-1] > 1 else preds.reshape(-1)
        bins = (pos.astype(jnp.float32) * self._num_thresholds).astype(jnp.int32)
        return bins, jnp.asarray(labels).reshape(-1).astype(jnp.int32)

    def update(self, preds, labels, *args):
        """Add one batch: probabilities, or the int32 bins from `compute`."""
        preds, labels = _np(preds), _np(labels).reshape(-1)
        if np.issubdtype(preds.dtype, np.integer):
            bins = preds.reshape(-1)
        else:
            pos = preds[:, -1] if preds.ndim == 2 and preds.shape[-1] > 1 else preds.reshape(-1)
            bins = (pos.astype(np.float32) * self._num_thresholds).astype(np.int64)
        bins = np.clip(bins, 0, self._num_thresholds)
        positive = labels.astype(bool)
        self._stat_pos += np.bincount(bins[positive], minlength=self._num_thresholds + 1)
        self._stat_neg += np.bincount(bins[~positive], minlength=self._num_thresholds + 1)

    def reset(self):
        self._stat_pos = np.zeros(self._num_thresholds + 1, np.int64)
        self._stat_neg = np.zeros(self._num_thresholds + 1, np.int64)

    def accumulate(self):
        tot_pos = tot_neg = 0.0
        auc = 0.0
        for idx in range(self._num_thresholds, -1, -1):
            new_pos = tot_pos + self._stat_pos[idx]
            new_neg = tot_neg + self._stat_neg[idx]
            auc += (new_neg - tot_neg) * (tot_pos + new_pos) / 2.0
            tot_pos, tot_neg = new_pos, new_neg
        return float(auc / tot_pos / tot_neg) if tot_pos > 0 and tot_neg > 0 else 0.0

    def name(self):
        return self._name


def accuracy(input, label, k: int = 1, correct=None, total=None, name=None):
    """Top-k accuracy of one batch (Paddle's `paddle.metric.accuracy`), a float32 scalar.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> float(pdx.metric.accuracy(jnp.array([[0.1, 0.9], [0.8, 0.2]]), jnp.array([[1], [1]])))
      0.5
    """
    hits = Accuracy(topk=k).compute(input, label)
    return jnp.mean(jnp.any(hits[..., :k] > 0, axis=-1).astype(jnp.float32))
