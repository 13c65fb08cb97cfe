"""Paddle's hapi callbacks: hooks `pdx.Model.fit/evaluate/predict` call.

A callback sees `self.model` (the `pdx.Model`) and `self.params` (epochs,
steps, verbose, metrics) and receives `logs` dicts of plain floats. Writing
state is done through the model (`model.save`, `model.stop_training = True`,
the optimizer's learning rate), never by touching compiled code.
"""

from __future__ import annotations

import csv
import json
import numbers
import os
import sys
import time
import warnings

import numpy as np

__all__ = ["Callback", "CallbackList", "ProgBarLogger", "ModelCheckpoint", "EarlyStopping", "LRScheduler",
           "ReduceLROnPlateau", "VisualDL", "CSVLogger", "config_callbacks"]


class Callback:
    """Base class of callbacks (Paddle's `paddle.callbacks.Callback`): every hook is a no-op.

    Example:
      >>> import pdx
      >>> class PrintLoss(pdx.callbacks.Callback):
      ...     def on_epoch_end(self, epoch, logs=None):
      ...         print(epoch, round(logs["loss"], 2))
    """

    def __init__(self):
        self.model = None
        self.params = {}

    def set_params(self, params):
        """Receive fit's settings: epochs, steps, verbose, metrics, batch_size, log_freq, save_dir."""
        self.params = params

    def set_model(self, model):
        """Receive the `pdx.Model` being trained."""
        self.model = model

    def on_train_begin(self, logs=None): """Called once before training."""
    def on_train_end(self, logs=None): """Called once after training."""
    def on_eval_begin(self, logs=None): """Called before an evaluation pass."""
    def on_eval_end(self, logs=None): """Called after an evaluation pass with its metrics."""
    def on_predict_begin(self, logs=None): """Called before prediction."""
    def on_predict_end(self, logs=None): """Called after prediction."""
    def on_epoch_begin(self, epoch, logs=None): """Called at the start of each training epoch."""
    def on_epoch_end(self, epoch, logs=None): """Called at the end of each training epoch with its metrics."""
    def on_train_batch_begin(self, step, logs=None): """Called before each training batch."""
    def on_train_batch_end(self, step, logs=None): """Called after each training batch with its metrics."""
    def on_eval_batch_begin(self, step, logs=None): """Called before each evaluation batch."""
    def on_eval_batch_end(self, step, logs=None): """Called after each evaluation batch."""
    def on_predict_batch_begin(self, step, logs=None): """Called before each prediction batch."""
    def on_predict_batch_end(self, step, logs=None): """Called after each prediction batch."""


class CallbackList:
    """Calls a hook on every callback in order."""

    def __init__(self, callbacks):
        self.callbacks = list(callbacks)

    def set_params(self, params):
        for c in self.callbacks:
            c.set_params(params)

    def set_model(self, model):
        for c in self.callbacks:
            c.set_model(model)

    def _call(self, name, *args):
        for c in self.callbacks:
            getattr(c, name)(*args)

    def __getattr__(self, name):
        if name.startswith("on_"):
            return lambda *args: self._call(name, *args)
        raise AttributeError(name)


def _fmt(value):
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.4e}"
    return str(value)


def _scalars(logs, prefix=""):
    """Flatten logs to name -> float (lists become name_0, name_1)."""
    out = {}
    for k, v in (logs or {}).items():
        if k in ("step", "batch_size"):
            continue
        if isinstance(v, (list, tuple, np.ndarray)):
            v = list(np.asarray(v).reshape(-1))
            if len(v) == 1:
                out[prefix + k] = float(v[0])
            else:
                out.update({f"{prefix}{k}_{i}": float(x) for i, x in enumerate(v)})
        elif isinstance(v, numbers.Real):
            out[prefix + k] = float(v)
    return out


class ProgBarLogger(Callback):
    """Progress output (Paddle's `paddle.callbacks.ProgBarLogger`).

    Args:
      log_freq: update the bar / print a line every `log_freq` steps.
      verbose: 0 silent; 1 a live progress bar per epoch (tqdm: step/total,
        it/s, ETA, loss and metrics, skipped non-finite steps); 2 one line
        every `log_freq` steps and at the end of each epoch; 3 like 2.

    Example:
      >>> import pdx
      >>> bar = pdx.callbacks.ProgBarLogger(log_freq=10, verbose=1)
    """

    def __init__(self, log_freq=1, verbose=2):
        super().__init__()
        if not isinstance(log_freq, int) or log_freq < 1:
            raise ValueError(f"ProgBarLogger: log_freq must be a positive int; got log_freq={log_freq!r}")
        self.log_freq = log_freq
        self.verbose = verbose
        self._bar = None

    def _open(self, total, desc):
        from tqdm.auto import tqdm

        self._bar = tqdm(total=total, desc=desc, file=sys.stdout, unit="step", dynamic_ncols=True,
                         mininterval=0.5, leave=True)
        self._start = time.perf_counter()
        self._last = 0

    def _postfix(self, logs):
        return {k: _fmt(v) for k, v in _scalars(logs).items()}

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        self.epochs = self.params.get("epochs")
        if self.verbose == 1:
            self._open(self.params.get("steps"), f"Epoch {epoch + 1}/{self.epochs}")
        elif self.verbose >= 2:
            print(f"Epoch {epoch + 1}/{self.epochs}", flush=True)
            self._start = time.perf_counter()

    def _line(self, step, total, logs):
        elapsed = time.perf_counter() - self._start
        rate = step / elapsed if elapsed > 0 else float("nan")
        parts = [f"step {step}/{total if total else '?'}"]
        parts += [f"{k}: {v}" for k, v in self._postfix(logs).items()]
        parts.append(f"{rate:.1f} it/s")
        if total and rate == rate and rate > 0:
            parts.append(f"ETA {max(total - step, 0) / rate:.0f}s")
        print(" - ".join(parts), flush=True)

    def on_train_batch_end(self, step, logs=None):
        step = step + 1
        if self.verbose == 1 and self._bar is not None:
            if step % self.log_freq == 0 or step == self.params.get("steps"):
                self._bar.update(step - self._last)
                self._last = step
                self._bar.set_postfix(self._postfix(logs), refresh=False)
        elif self.verbose >= 2 and step % self.log_freq == 0:
            self._line(step, self.params.get("steps"), logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.verbose == 1 and self._bar is not None:
            total = self.params.get("steps") or (logs or {}).get("step", self._last)
            self._bar.update(max(total - self._last, 0))
            self._bar.set_postfix(self._postfix(logs))
            self._bar.close()
            self._bar = None
        elif self.verbose >= 2:
            self._line((logs or {}).get("step", 0), self.params.get("steps"), logs)

    def on_eval_begin(self, logs=None):
        self._eval_start = time.perf_counter()
        if self.verbose:
            print("Eval begin...", flush=True)

    def on_eval_end(self, logs=None):
        if self.verbose:
            items = " - ".join(f"{k}: {v}" for k, v in self._postfix(logs).items() if k != "samples")
            print(f"Eval samples: {(logs or {}).get('samples', '?')} - {items} "
                  f"({time.perf_counter() - self._eval_start:.1f}s)", flush=True)

    def on_predict_begin(self, logs=None):
        if self.verbose:
            print("Predict begin...", flush=True)

    def on_predict_end(self, logs=None):
        if self.verbose:
            print(f"Predict samples: {(logs or {}).get('samples', '?')}", flush=True)


class ModelCheckpoint(Callback):
    """Save the model every `save_freq` epochs and at the end (Paddle's `ModelCheckpoint`).

    As in Paddle, epochs are counted from 0 and saved when `epoch % save_freq
    == 0` (the first epoch always). Files are `{save_dir}/{epoch}` and
    `{save_dir}/final` in `Model.save`'s
    format (safetensors + JSON). Nothing is saved when `save_dir` is None.

    Example:
      >>> import pdx
      >>> ckpt = pdx.callbacks.ModelCheckpoint(save_freq=2, save_dir="checkpoints")
    """

    def __init__(self, save_freq=1, save_dir=None):
        super().__init__()
        if not isinstance(save_freq, int) or save_freq < 1:
            raise ValueError(f"ModelCheckpoint: save_freq must be a positive int; got save_freq={save_freq!r}")
        self.save_freq = save_freq
        self.save_dir = save_dir

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def _is_save(self):
        return self.model is not None and self.save_dir is not None

    def on_epoch_end(self, epoch, logs=None):
        if self._is_save() and epoch % self.save_freq == 0:  # Paddle: epochs 0, save_freq, 2 * save_freq, ...
            path = os.path.join(self.save_dir, str(epoch))
            if self.params.get("verbose", 0) > 0:
                print(f"save checkpoint at {os.path.abspath(path)}", flush=True)
            self.model.save(path)

    def on_train_end(self, logs=None):
        if self._is_save():
            path = os.path.join(self.save_dir, "final")
            if self.params.get("verbose", 0) > 0:
                print(f"save checkpoint at {os.path.abspath(path)}", flush=True)
            self.model.save(path)


def _monitor_mode(cls, monitor, mode):
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{cls}: mode {mode!r} is unknown; using 'auto'", stacklevel=3)
        mode = "auto"
    if mode == "auto":
        mode = "max" if "acc" in monitor or "auc" in monitor or monitor.startswith(("precision", "recall")) else "min"
    return mode


def _monitored(logs, monitor):
    value = (logs or {}).get(monitor)
    if isinstance(value, (list, tuple, np.ndarray)):
        value = np.asarray(value).reshape(-1)[0]
    return None if value is None else float(value)


class EarlyStopping(Callback):
    """Stop training when an evaluation metric stops improving (Paddle's `EarlyStopping`).

    Args:
      monitor: an eval log key ('loss', 'acc', ...).
      mode: 'min', 'max' or 'auto' (max for accuracy-like names).
      patience: evaluations without improvement before stopping.
      verbose: 1 prints when stopping.
      min_delta: the smallest change that counts as improvement.
      baseline: a value the metric must beat (None: the first value).
      save_best_model: save `{save_dir}/best_model` at each improvement
        (when fit has a save_dir).

    Example:
      >>> import pdx
      >>> stop = pdx.callbacks.EarlyStopping(monitor="acc", mode="max", patience=2)
    """

    def __init__(self, monitor="loss", mode="auto", patience=0, verbose=1, min_delta=0, baseline=None,
                 save_best_model=True):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.save_best_model = save_best_model
        self.mode = _monitor_mode("EarlyStopping", monitor, mode)
        self.stopped_epoch = 0
        self.wait_epoch = 0
        self.best_value = None

    def _better(self, a, b):
        return a < b - self.min_delta if self.mode == "min" else a > b + self.min_delta

    def on_train_begin(self, logs=None):
        self.wait_epoch = 0
        self.best_value = self.baseline if self.baseline is not None else (np.inf if self.mode == "min" else -np.inf)
        self.save_dir = self.params.get("save_dir")

    def on_eval_end(self, logs=None):
        current = _monitored(logs, self.monitor)
        if current is None:
            warnings.warn(f"EarlyStopping: monitor {self.monitor!r} is not in the eval logs {sorted(logs or {})}; "
                          "pass one of those as monitor=", stacklevel=2)
            return
        if self._better(current, self.best_value):
            self.best_value = current
            self.wait_epoch = 0
            if self.save_best_model and self.save_dir is not None:
                self.model.save(os.path.join(self.save_dir, "best_model"))
        else:
            self.wait_epoch += 1
        if self.wait_epoch >= self.patience:
            self.model.stop_training = True
            if self.verbose > 0:
                print(f"Epoch {getattr(self, 'epoch', 0) + 1}: Early stopping "
                      f"({self.monitor} did not improve on {self.best_value:.5f} for {self.wait_epoch} evaluations)",
                      flush=True)

    def on_epoch_end(self, epoch, logs=None):
        self.epoch = epoch


class LRScheduler(Callback):
    """Step the optimizer's learning-rate scheduler (Paddle's `paddle.callbacks.LRScheduler`).

    Args:
      by_step: call `scheduler.step()` after every training batch.
      by_epoch: call it after every epoch instead.

    Example:
      >>> import pdx
      >>> cb = pdx.callbacks.LRScheduler(by_step=False, by_epoch=True)
    """

    def __init__(self, by_step=True, by_epoch=False):
        super().__init__()
        if by_step and by_epoch:
            raise ValueError("LRScheduler: by_step and by_epoch cannot both be True; pick one")
        self.by_step = by_step
        self.by_epoch = by_epoch

    def _scheduler(self):
        from pdx.optimizer.lr import LRScheduler as Sched

        opt = getattr(self.model, "_optimizer", None)
        sched = getattr(opt, "_learning_rate", None)
        return sched if isinstance(sched, Sched) else None

    def on_epoch_end(self, epoch, logs=None):
        if self.by_epoch and (s := self._scheduler()) is not None:
            s.step()

    def on_train_batch_end(self, step, logs=None):
        if self.by_step and (s := self._scheduler()) is not None:
            s.step()


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by `factor` when a metric plateaus (Paddle's `ReduceLROnPlateau`).

    Args:
      monitor: an eval log key; mode: 'min' / 'max' / 'auto'.
      factor: the multiplier (< 1). patience: evaluations to wait.
      min_delta: the smallest improvement. cooldown: evaluations to wait after a reduction.
      min_lr: the lower bound. verbose: 1 prints each reduction.

    Only a float learning rate is changed (a scheduler drives its own).

    Example:
      >>> import pdx
      >>> cb = pdx.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1)
    """

    def __init__(self, monitor="loss", factor=0.1, patience=10, verbose=1, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0):
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1.0; got factor={factor}")
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, verbose
        self.min_delta, self.cooldown, self.min_lr = min_delta, cooldown, min_lr
        self.mode = _monitor_mode("ReduceLROnPlateau", monitor, mode)
        self.wait = self.cooldown_counter = 0
        self.best = np.inf if self.mode == "min" else -np.inf

    def on_eval_end(self, logs=None):
        current = _monitored(logs, self.monitor)
        if current is None:
            warnings.warn(f"ReduceLROnPlateau: monitor {self.monitor!r} is not in the eval logs {sorted(logs or {})}",
                          stacklevel=2)
            return
        from pdx.optimizer.lr import LRScheduler as Sched

        opt = self.model._optimizer
        if isinstance(getattr(opt, "_learning_rate", None), Sched):
            warnings.warn("ReduceLROnPlateau: the optimizer's learning rate is an LRScheduler; leaving it alone",
                          stacklevel=2)
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        improved = current < self.best - self.min_delta if self.mode == "min" else current > self.best + self.min_delta
        if improved:
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = float(opt.get_lr())
                new = max(old * self.factor, self.min_lr)
                if old - new > 1e-12:
                    opt.set_lr(new)
                    if self.verbose > 0:
                        print(f"ReduceLROnPlateau: learning rate {old:.4e} -> {new:.4e}", flush=True)
                self.cooldown_counter, self.wait = self.cooldown, 0


class VisualDL(Callback):
    """TensorBoard logging (Paddle's `VisualDL` callback, writing TensorBoard event files).

    Scalars `train/<name>` per training step (loss, metrics, lr), `eval/<name>`
    per evaluation, and a histogram of every parameter at each epoch end. View
    with `tensorboard --logdir <log_dir>`.

    Args:
      log_dir: the event-file directory.

    Example:
      >>> import pdx
      >>> cb = pdx.callbacks.VisualDL(log_dir="runs/digits")
    """

    def __init__(self, log_dir):
        super().__init__()
        self.log_dir = log_dir
        self._writer = None
        self._step = 0

    def _w(self):
        if self._writer is None:
            from tensorboardX import SummaryWriter

            self._writer = SummaryWriter(logdir=self.log_dir)
        return self._writer

    def on_train_begin(self, logs=None):
        self._w()

    def on_train_batch_end(self, step, logs=None):
        self._step += 1
        w = self._w()
        for k, v in _scalars(logs).items():
            w.add_scalar(f"train/{k}", v, self._step)
        opt = getattr(self.model, "_optimizer", None)
        if opt is not None:
            w.add_scalar("train/lr", float(opt.get_lr()), self._step)

    def on_epoch_end(self, epoch, logs=None):
        w = self._w()
        for name, value in self.model.state_dict().items():
            value = np.asarray(value)
            if np.issubdtype(value.dtype, np.floating):
                w.add_histogram(name, value.astype(np.float32), epoch + 1)
        w.flush()

    def on_eval_end(self, logs=None):
        w = self._w()
        for k, v in _scalars(logs).items():
            if k != "samples":
                w.add_scalar(f"eval/{k}", v, self._step)
        w.flush()

    def on_train_end(self, logs=None):
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class CSVLogger(Callback):
    """One row per epoch of training and evaluation metrics, as CSV or JSON lines.

    Args:
      filename: the file to write; a name ending in '.jsonl' / '.json' writes
        one JSON object per line, anything else CSV with a header.
      separator: the CSV separator.
      append: add to an existing file instead of replacing it.

    Example:
      >>> import pdx
      >>> cb = pdx.callbacks.CSVLogger("log.csv")
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.separator = separator
        self.append = append
        self.jsonl = self.filename.endswith((".jsonl", ".json"))
        self._row = None
        self._keys = None

    def on_train_begin(self, logs=None):
        if not self.append and os.path.exists(self.filename):
            os.remove(self.filename)
        self._keys = None

    def _flush(self):
        if self._row is None:
            return
        row, self._row = self._row, None
        directory = os.path.dirname(self.filename)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.jsonl:
            with open(self.filename, "a") as f:
                f.write(json.dumps(row) + "\n")
            return
        if self._keys is None:
            self._keys = list(row)
            new = not os.path.exists(self.filename) or os.path.getsize(self.filename) == 0
            with open(self.filename, "a", newline="") as f:
                if new:
                    csv.writer(f, delimiter=self.separator).writerow(self._keys)
        with open(self.filename, "a", newline="") as f:
            csv.writer(f, delimiter=self.separator).writerow([row.get(k, "") for k in self._keys])

    def on_epoch_begin(self, epoch, logs=None):
        self._flush()

    def on_epoch_end(self, epoch, logs=None):
        self._row = {"epoch": epoch + 1, **_scalars(logs)}

    def on_eval_end(self, logs=None):
        if self._row is not None:
            self._row.update(_scalars(logs, prefix="eval_"))
            self._row.pop("eval_samples", None)

    def on_train_end(self, logs=None):
        self._flush()


def config_callbacks(callbacks=None, model=None, batch_size=None, epochs=None, steps=None, log_freq=2, verbose=2,
                     save_freq=1, save_dir=None, metrics=None, mode="train"):
    """Paddle's hapi default: add a ProgBarLogger, a ModelCheckpoint and an
    LRScheduler callback unless the list has one of each."""
    cbks = list(callbacks or [])
    for c in cbks:
        if not isinstance(c, Callback):
            raise TypeError(f"callbacks must be pdx.callbacks.Callback instances; got {type(c).__name__}")
    if not any(isinstance(k, ProgBarLogger) for k in cbks) and verbose:
        cbks = [ProgBarLogger(log_freq, verbose=verbose)] + cbks
    if not any(isinstance(k, ModelCheckpoint) for k in cbks):
        cbks = cbks + [ModelCheckpoint(save_freq, save_dir)]
    if mode == "train" and not any(isinstance(k, LRScheduler) for k in cbks):
        cbks = cbks + [LRScheduler()]
    cbk_list = CallbackList(cbks)
    cbk_list.set_model(model)
    cbk_list.set_params({"batch_size": batch_size, "epochs": epochs, "steps": steps, "verbose": verbose,
                         "metrics": metrics or [], "log_freq": log_freq, "save_dir": save_dir})
    return cbk_list
