"""`pdx.Model`: Paddle's high-level training API over one compiled step.

`Model(network)` wraps a Layer; `prepare(optimizer, loss, metrics,
amp_configs)` splits network and optimizer into a `pdx.TrainState` and builds
the pure steps (`pdx.train`); `fit` / `evaluate` / `predict` drive them over
batches with callbacks. The TrainState is the single owner of the training
state: every step, evaluation, prediction and save reads it, nothing reads the
network's variables back. The network is a view written from the state in one
place (`_show`): when read through `model.network`, at the end of `fit` and
after `load` (so code holding the Layer itself sees the trained values).
"""

from __future__ import annotations

import inspect
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from pdx.train import TrainState, make_eval_step, make_predict_step, make_train_step
from pdx.amp import fp32_param_names
from pdx.amp import GradScaler
from pdx._amp_policy import make_policy
from pdx.callbacks import config_callbacks
from pdx.hapi import _data, _save
from pdx.metric import Metric

__all__ = ["Model"]

_NONFINITE = (
    "pdx.Model: training stopped at step {step} (epoch {epoch}, batch {batch}) after {n} consecutive steps with "
    "non-finite values: {stats}. Each of those steps was skipped (parameters and optimizer state unchanged). "
    "Lower the learning rate, add gradient clipping (grad_clip=pdx.nn.ClipGradByGlobalNorm(1.0)), check the data "
    "for NaN/Inf, or raise prepare(..., max_nonfinite_steps=...)."
)

_SCALER_KEYS = ("init_loss_scaling", "incr_ratio", "decr_ratio", "incr_every_n_steps", "decr_every_n_nan_or_inf",
                "use_dynamic_loss_scaling")
_AMP_KEYS = ("level", "dtype", "custom_white_list", "custom_black_list", "use_fp16_guard", "use_promote") + _SCALER_KEYS


def _n_forward_inputs(network) -> int | None:
    try:
        sig = inspect.signature(network.forward)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    # Paddle counts every named positional argument of forward, defaults included
    # (`inspect.getfullargspec(forward).args` minus self)
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _callback_list(callbacks):
    """Paddle accepts one callback as well as a list of them."""
    if callbacks is None or isinstance(callbacks, (list, tuple)):
        return callbacks
    return [callbacks]


def _strip_suffix(path):
    """`Model.load("x.pdparams")` means the files saved under `x` (Paddle accepts either form)."""
    path = str(path)
    for suffix in (".pdparams.safetensors", ".pdparams", ".pdopt.safetensors", ".pdopt"):
        if path.endswith(suffix):
            return path[: -len(suffix)]
    return path


def _specs(value):
    if value is None:
        return None
    if isinstance(value, dict):
        return list(value.values())
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _copy(tree):
    """Fresh device buffers for every leaf (no per-shape compiled copy kernels)."""
    return jax.tree.map(lambda x: jax.device_put(x, may_alias=False), tree)


class Model:
    """A network plus the machinery to train, evaluate and predict (Paddle's `paddle.Model`).

    Args:
      network: a `pdx.nn.Layer`.
      inputs: optional `pdx.static.InputSpec` (or list): how many leading
        fields of a batch are inputs (and `summary`'s default input).
      labels: optional InputSpec list for the label fields.

    Without `inputs`, the number of inputs is the number of required
    positional arguments of `network.forward`; the remaining fields of a
    batch are labels.

    Example:
      >>> import numpy as np, pdx, pdx.nn.functional as F
      >>> net = pdx.nn.Sequential(pdx.nn.Linear(4, 8), pdx.nn.ReLU(), pdx.nn.Linear(8, 2))
      >>> model = pdx.Model(net)
      >>> model.prepare(pdx.optimizer.Adam(1e-2, parameters=net), F.cross_entropy, pdx.metric.Accuracy())
      >>> x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
      >>> y = (x[:, 0] > 0).astype("int32")
      >>> model.fit((x, y), batch_size=16, epochs=2, verbose=0)
      >>> sorted(model.evaluate((x, y), batch_size=32, verbose=0))
      ['acc', 'loss']
    """

    def __init__(self, network, inputs=None, labels=None):
        if not hasattr(network, "named_parameters"):
            raise TypeError(f"pdx.Model: network must be a pdx.nn.Layer; got {type(network).__name__}")
        self._network = network
        self._inputs = _specs(inputs)
        self._labels = _specs(labels)
        self._optimizer = None
        self._loss = None
        self._metrics: list = []
        self._policy = None
        self._keep_fp32 = frozenset()
        self._max_nonfinite = 10
        self._state: TrainState | None = None
        self._shown: TrainState | None = None  # the state whose values the network's variables hold
        self._lr_fed = None  # the optimizer's learning-rate array last written into the state
        self._fns: dict = {}
        self._pending: list = []  # train_batch(update=False) micro-batches
        self._seed = 0
        self.stop_training = False

    # -- setup ------------------------------------------------------------------------------
    def prepare(self, optimizer=None, loss=None, metrics=None, amp_configs=None, *, max_nonfinite_steps: int = 10,
                seed: int = 0):
        """Set the optimizer, loss, metrics and mixed precision; build the TrainState.

        Args:
          optimizer: a `pdx.optimizer.*` bound to the network (None for
            evaluate/predict only).
          loss: a callable `loss(*outputs, *labels) -> scalar` (a loss Layer
            or e.g. `F.cross_entropy`).
          metrics: a `pdx.metric.Metric` or a list of them.
          amp_configs: None, 'O1' / 'O2', or a dict with `level`, `dtype`
            ('bfloat16' default, or 'float16', which adds a `GradScaler`),
            `custom_white_list`, `custom_black_list` and GradScaler arguments
            (`init_loss_scaling`, `incr_ratio`, `decr_ratio`,
            `incr_every_n_steps`, `decr_every_n_nan_or_inf`,
            `use_dynamic_loss_scaling`).
          max_nonfinite_steps: (pdx) stop with an error after this many
            consecutive steps skipped for a non-finite loss or gradient.
          seed: (pdx) seeds the TrainState's rng and the data order of
            array inputs.
        """
        if optimizer is not None and not hasattr(optimizer, "transformation"):
            raise TypeError(f"Model.prepare: optimizer must be a pdx.optimizer.Optimizer; got {type(optimizer).__name__}")
        if loss is not None and not callable(loss):
            raise TypeError(f"Model.prepare: loss must be callable as loss(*outputs, *labels); got {type(loss).__name__}")
        metrics = [] if metrics is None else (list(metrics) if isinstance(metrics, (list, tuple)) else [metrics])
        for m in metrics:
            if not isinstance(m, Metric):
                raise TypeError(f"Model.prepare: metrics must be pdx.metric.Metric instances; got {type(m).__name__}")
        if not isinstance(max_nonfinite_steps, int) or max_nonfinite_steps < 1:
            raise ValueError(f"Model.prepare: max_nonfinite_steps must be a positive int; got {max_nonfinite_steps!r}")
        self._optimizer, self._loss, self._metrics = optimizer, loss, metrics
        self._max_nonfinite, self._seed = max_nonfinite_steps, seed
        self._policy, scaler = self._amp(amp_configs)
        self._keep_fp32 = fp32_param_names(self._network) if self._policy is not None else frozenset()
        state = TrainState.create(self.network, optimizer, grad_scaler=scaler, seed=seed)
        self._state = _copy(state)  # the steps donate it: leave the network's arrays alone
        self._lr_fed = None
        self._fns = {}
        self._pending = []

    def _amp(self, amp_configs):
        if amp_configs is None:
            return None, None
        if isinstance(amp_configs, str):
            amp_configs = {"level": amp_configs}
        if not isinstance(amp_configs, dict):
            raise TypeError(f"Model.prepare: amp_configs must be None, 'O1', 'O2' or a dict; got {amp_configs!r}")
        unknown = sorted(set(amp_configs) - set(_AMP_KEYS))
        if unknown:
            raise ValueError(f"Model.prepare: unknown amp_configs keys {unknown}; allowed: {sorted(_AMP_KEYS)}")
        level = amp_configs.get("level", "O1")
        dtype = amp_configs.get("dtype", "bfloat16")
        policy = make_policy(True, amp_configs.get("custom_white_list"), amp_configs.get("custom_black_list"),
                             level, dtype)
        if not policy.enabled:
            return None, None
        scaler = None
        if dtype == "float16":
            scaler = GradScaler(**{k: amp_configs[k] for k in _SCALER_KEYS if k in amp_configs})
        elif any(k in amp_configs for k in _SCALER_KEYS):
            warnings.warn("Model.prepare: loss-scaling options are ignored with dtype='bfloat16' (its range is "
                          "float32's; no scaling is needed)", stacklevel=3)
        return policy, scaler

    def _need(self, what: str, *, optimizer=False, loss=False):
        if self._state is None:
            raise RuntimeError(f"Model.{what}: call model.prepare(optimizer, loss, metrics) first")
        if optimizer and self._optimizer is None:
            raise RuntimeError(f"Model.{what} needs an optimizer: model.prepare(optimizer=..., loss=...)")
        if loss and self._loss is None:
            raise RuntimeError(f"Model.{what} needs a loss: model.prepare(optimizer, loss=...)")

    # -- the state ----------------------------------------------------------------------------
    @property
    def network(self):
        """The wrapped Layer, holding the values of the current TrainState (written on read)."""
        self._show()
        return self._network

    @property
    def train_state(self) -> TrainState:
        """The `pdx.TrainState` holding parameters, optimizer state, step and loss scale."""
        self._need("train_state")
        return self._state

    @train_state.setter
    def train_state(self, state: TrainState) -> None:
        if self._state is not None and state.spec is not self._state.spec:
            raise ValueError("Model.train_state: the new state must derive from this model's TrainState "
                             "(model.train_state.replace(...), or a checkpoint restored into it)")
        self._state, self._lr_fed = state, None

    def _show(self):
        """Write the current TrainState's values into the network (the one place the network is written)."""
        s = self._state
        if s is not None and s is not self._shown:
            # Copies: the compiled step donates the state's buffers, so the
            # network must never hold the very arrays the next step consumes.
            s.replace(params=_copy(s.params), buffers=_copy(s.buffers)).update_model(self._network)
            self._shown = s

    def parameters(self, *args, **kwargs):
        """The network's parameters (Paddle's `Model.parameters`)."""
        return self.network.parameters(*args, **kwargs)

    def state_dict(self) -> dict:
        """Parameters and buffers by name, from the current TrainState."""
        if self._state is None:
            return self._network.state_dict()
        return self._state.state_dict()

    # -- batches ----------------------------------------------------------------------------------
    def _n_inputs(self, n_fields: int) -> int:
        if self._inputs is not None:
            return len(self._inputs)
        n = _n_forward_inputs(self._network)
        if n is None or n >= n_fields:
            return max(n_fields - 1, 1) if n is None else n_fields
        return n

    def _split(self, fields):
        fields = _data.as_fields(fields)
        n = self._n_inputs(len(fields))
        return tuple(fields[:n]), tuple(fields[n:])

    @staticmethod
    def _join(inputs, labels):
        inputs = _data.as_fields(inputs) if inputs is not None else []
        labels = _data.as_fields(labels) if labels is not None else []
        return tuple(inputs), tuple(labels)

    def _fn(self, kind):
        fn = self._fns.get(kind)
        if fn is None:
            if kind in ("train", "train_acc"):
                step = make_train_step(self._loss, self._metrics, policy=self._policy,
                                       keep_fp32=self._keep_fp32, accumulate=kind == "train_acc")
                fn = jax.jit(step, donate_argnums=0)
            elif kind == "eval":
                fn = jax.jit(make_eval_step(self._loss, self._metrics, policy=self._policy,
                                            keep_fp32=self._keep_fp32))
            else:
                fn = jax.jit(make_predict_step(policy=self._policy, keep_fp32=self._keep_fp32))
            self._fns[kind] = fn
        return fn

    def _run_train(self, micro_batches: list):
        """One optimizer update over 1..k (inputs, labels) micro-batches."""
        lr = self._optimizer.current_lr()
        if lr is not self._lr_fed:
            # set_lr or a scheduler step() gave the optimizer a new rate: feed it to the state's `lr`
            # leaf (a copy: the step donates the state). Unchanged, the state carries its own.
            self._state = self._state.replace(lr=jnp.array(lr, jnp.float32, copy=True))
            self._lr_fed = lr
        if len(micro_batches) == 1:
            out_state, out = self._fn("train")(self._state, micro_batches[0])
        else:
            stacked = jax.tree.map(lambda *xs: jnp.stack(xs) if isinstance(xs[0], jax.Array) else np.stack(xs),
                                   *micro_batches)
            out_state, out = self._fn("train_acc")(self._state, stacked)
        self._state = out_state
        return jax.device_get(out)

    def _check_finite(self, out, epoch=0, batch=0):
        if bool(out["finite"]) or int(out["nonfinite_steps"]) < self._max_nonfinite:
            return
        stats = f"loss={float(out['loss'])}, gradient global norm={float(out['grad_norm'])}"
        if self._state.spec.scaler.enable:
            stats += f", loss scale={float(out['loss_scale'])}"
        raise FloatingPointError(_NONFINITE.format(step=int(jax.device_get(self._state.step)) + 1, epoch=epoch,
                                                   batch=batch, n=int(out["nonfinite_steps"]), stats=stats))

    def _update_metrics(self, results) -> dict:
        logs = {}
        for m, res in zip(self._metrics, results or []):
            m.update(*res)
            names, values = m.name(), m.accumulate()
            names = names if isinstance(names, (list, tuple)) else [names]
            values = values if isinstance(values, (list, tuple)) else [values]
            logs.update(zip(names, (float(v) for v in values)))
        return logs

    def train_batch(self, inputs, labels=None, update=True):
        """One training step on one batch (Paddle's `Model.train_batch`).

        Args:
          inputs: an array or a list of arrays (the network's inputs).
          labels: an array or a list of arrays.
          update: False queues the batch; the next call with update=True
            averages the gradients of all queued batches and itself and
            applies one update (gradient accumulation).

        Returns:
          `[loss]`, or `([loss], metrics)` when metrics are set (None while queuing).
        """
        self._need("train_batch", optimizer=True, loss=True)
        self._pending.append(self._join(inputs, labels))
        if not update:
            return None
        batches, self._pending = self._pending, []
        out = self._run_train(batches)
        self._check_finite(out)
        loss = [float(out["loss"])]
        if not self._metrics:
            return loss
        values = []
        for m, res in zip(self._metrics, out["metrics"]):
            values.append(m.update(*res))
        return loss, values

    def eval_batch(self, inputs, labels=None):
        """Loss and metrics on one batch in evaluation mode (Paddle's `Model.eval_batch`)."""
        self._need("eval_batch")
        out = jax.device_get(self._fn("eval")(self._state, self._join(inputs, labels)))
        loss = [float(out["loss"])] if "loss" in out else []
        if not self._metrics or "metrics" not in out:
            return loss
        return loss, [m.update(*res) for m, res in zip(self._metrics, out["metrics"])]

    def predict_batch(self, inputs):
        """The network's outputs on one batch, as numpy arrays (Paddle's `Model.predict_batch`)."""
        self._need("predict_batch")
        inputs = tuple(_data.as_fields(inputs))
        return [np.asarray(o) for o in jax.device_get(self._fn("predict")(self._state, inputs))]

    # -- loops -------------------------------------------------------------------------------------
    def fit(self, train_data=None, eval_data=None, batch_size=1, epochs=1, eval_freq=1, log_freq=10, save_dir=None,
            save_freq=1, verbose=2, drop_last=False, shuffle=True, num_workers=0, callbacks=None,
            accumulate_grad_batches=1, num_iters=None):
        """Train for `epochs` passes over `train_data` (Paddle's `Model.fit`).

        Args:
          train_data: a `pdx.io.Dataset` / `DataLoader`, a tuple of arrays
            `(x, y)`, a map-style dataset, or an iterable of batches.
          eval_data: the same kinds; evaluated after epochs 0, eval_freq, 2 * eval_freq, ...
          batch_size, shuffle, drop_last, num_workers: batching of datasets
            and arrays (a DataLoader / iterable is used as given).
          epochs: passes over the data. eval_freq: epochs between evaluations.
          log_freq: steps between progress updates. verbose: 0 silent, 1 a
            progress bar, 2 a line per `log_freq` steps.
          save_dir / save_freq: `ModelCheckpoint` every `save_freq` epochs and at the end.
          callbacks: extra `pdx.callbacks.Callback`s.
          accumulate_grad_batches: average the gradients of this many
            consecutive batches into one update (one compiled call).
          num_iters: stop after this many optimizer updates.
        """
        self._need("fit", optimizer=True, loss=True)
        if not isinstance(accumulate_grad_batches, int) or accumulate_grad_batches < 1:
            raise ValueError(f"Model.fit: accumulate_grad_batches must be a positive int; got {accumulate_grad_batches!r}")
        if not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"Model.fit: epochs must be a positive int; got epochs={epochs!r}")
        if train_data is None:
            raise ValueError("Model.fit: train_data is required")
        loader = _data.make_batches(train_data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                    num_workers=num_workers, seed=self._seed, what="fit")
        eval_loader = _data.make_batches(eval_data, batch_size=batch_size, shuffle=False, drop_last=False,
                                         num_workers=num_workers, seed=self._seed, what="fit")
        try:
            steps = len(loader)
        except TypeError:
            steps = None
        if steps is not None and num_iters is not None:
            steps = min(steps, num_iters)
        cbks = config_callbacks(_callback_list(callbacks), model=self, batch_size=batch_size, epochs=epochs, steps=steps,
                                log_freq=log_freq, verbose=verbose, save_freq=save_freq, save_dir=save_dir,
                                metrics=self._metric_names(), mode="train")
        self.stop_training = False
        cbks.on_train_begin()
        updates = 0
        for epoch in range(epochs):
            cbks.on_epoch_begin(epoch)
            logs, updates = self._train_epoch(loader, cbks, epoch, accumulate_grad_batches, updates, num_iters)
            cbks.on_epoch_end(epoch, logs)
            if eval_loader is not None and epoch % eval_freq == 0:  # Paddle: epochs 0, eval_freq, ...
                self._evaluate(eval_loader, cbks)
            if self.stop_training or (num_iters is not None and updates >= num_iters):
                break
        cbks.on_train_end(logs)
        self._show()

    def _metric_names(self) -> list:
        names = ["loss"]
        for m in self._metrics:
            n = m.name()
            names += list(n) if isinstance(n, (list, tuple)) else [n]
        return names

    def _reset_metrics(self):
        # Paddle resets the metrics when a loop ends, not when it starts: what
        # train_batch / eval_batch accumulated before fit or evaluate counts in
        # that loop's first values, and every loop leaves them empty.
        for m in self._metrics:
            m.reset()

    def _train_epoch(self, loader, cbks, epoch, k, updates, num_iters):
        logs, group, step, skipped = {}, [], -1, 0

        def update(step):
            nonlocal skipped
            out = self._run_train(group)
            skipped += 0 if bool(out["finite"]) else 1
            self._check_finite(out, epoch, step)
            logs = {"loss": [float(out["loss"])], **self._update_metrics(out["metrics"]), "step": step + 1,
                    "batch_size": sum(len(g[0][0]) for g in group)}
            if skipped:
                logs["skipped"] = skipped  # shown on the progress line
            cbks.on_train_batch_end(step, logs)
            return logs

        for step, batch in enumerate(loader):
            cbks.on_train_batch_begin(step)
            group.append(self._split(batch))
            if len(group) < k:
                continue
            logs, group, updates = update(step), [], updates + 1
            if self.stop_training or (num_iters is not None and updates >= num_iters):
                break
        if group:  # a last, shorter accumulation group
            logs, updates = update(step), updates + 1
        self._reset_metrics()
        return logs, updates

    def _evaluate(self, loader, cbks, num_iters=None):
        cbks.on_eval_begin()
        total, count = 0.0, 0
        logs = {}
        for step, batch in enumerate(loader):
            cbks.on_eval_batch_begin(step)
            inputs, labels = self._split(batch)
            out = jax.device_get(self._fn("eval")(self._state, (inputs, labels)))
            n = len(inputs[0])
            if "loss" in out:
                total += float(out["loss"]) * n
            count += n
            logs = self._update_metrics(out.get("metrics"))
            cbks.on_eval_batch_end(step, {"step": step + 1, **logs})
            if num_iters is not None and step + 1 >= num_iters:
                break
        self._reset_metrics()
        if self._loss is not None and count:
            logs = {"loss": [total / count], **logs}
        logs["samples"] = count
        cbks.on_eval_end(logs)
        return logs

    def evaluate(self, eval_data, batch_size=1, log_freq=10, verbose=2, num_workers=0, callbacks=None,
                 num_iters=None):
        """Loss (mean over samples) and metrics on `eval_data` (Paddle's `Model.evaluate`).

        `num_iters` stops after that many batches.

        Returns:
          A dict: 'loss' ([mean loss], when a loss is set) and each metric's name.
        """
        self._need("evaluate")
        loader = _data.make_batches(eval_data, batch_size=batch_size, shuffle=False, drop_last=False,
                                    num_workers=num_workers, seed=self._seed, what="evaluate")
        cbks = config_callbacks(_callback_list(callbacks), model=self, batch_size=batch_size, log_freq=log_freq, verbose=verbose,
                                metrics=self._metric_names(), mode="eval")
        logs = self._evaluate(loader, cbks, num_iters)
        logs.pop("samples", None)
        return logs

    def predict(self, test_data, batch_size=1, num_workers=0, stack_outputs=False, verbose=1, callbacks=None):
        """The network's outputs on every batch of `test_data` (Paddle's `Model.predict`).

        Returns:
          One entry per network output: a list of per-batch numpy arrays, or
          (stack_outputs=True) one array concatenated over batches.
        """
        self._need("predict")
        loader = _data.make_batches(test_data, batch_size=batch_size, shuffle=False, drop_last=False,
                                    num_workers=num_workers, seed=self._seed, what="predict")
        cbks = config_callbacks(_callback_list(callbacks), model=self, batch_size=batch_size, verbose=verbose, mode="predict")
        cbks.on_predict_begin()
        outputs, count = None, 0
        for step, batch in enumerate(loader):
            cbks.on_predict_batch_begin(step)
            fields = _data.as_fields(batch)
            inputs = tuple(fields[:self._n_inputs(len(fields))])
            outs = self.predict_batch(inputs)
            outputs = [[] for _ in outs] if outputs is None else outputs
            for slot, o in zip(outputs, outs):
                slot.append(o)
            count += len(inputs[0])
            cbks.on_predict_batch_end(step, {"step": step + 1})
        cbks.on_predict_end({"samples": count})
        outputs = outputs or []
        if stack_outputs:
            return [np.concatenate(o, axis=0) for o in outputs]
        return outputs

    # -- persistence ----------------------------------------------------------------------------------
    def save(self, path, training=True):
        """Save parameters (and, if training, optimizer state, step and loss scale) under `path`.

        Writes `{path}.pdparams.safetensors`, `{path}.pdopt.safetensors` and
        `{path}.json` (sha256 manifest). Nothing is pickled. With
        `training=False` and the Model's `inputs` InputSpecs, also the inference
        program, as Paddle's does: `pdx.jit.save(network, path, inputs)` writes
        the artifact directory `{path}/`, which `pdx.jit.load(path)` and
        `pdx.inference.Config(f"{path}.pdmodel", f"{path}.pdiparams")` run.
        """
        state = self._state
        if state is None:
            state = TrainState.create(self._network)
        out = _save.save_state(state, str(path), training=training and self._optimizer is not None)
        if not training:
            self._save_inference(str(path))
        return out

    def _save_inference(self, path: str) -> None:
        if self._inputs is None:
            warnings.warn("Model.save(training=False): no inference program written (Paddle's needs the Model's "
                          "`inputs`): build pdx.Model(net, inputs=[InputSpec(...)]) or call pdx.jit.save(net, "
                          "path, input_spec=[...])", stacklevel=3)
            return
        from pdx.export import save_layer

        network = self.network
        was_training = network.training
        network.eval()
        try:
            save_layer(network, path, input_spec=list(self._inputs))
        finally:
            if was_training:
                network.train()

    def load(self, path, skip_mismatch=False, reset_optimizer=False):
        """Load what `save` wrote (Paddle's `Model.load`).

        Args:
          path: the prefix given to `save` (a trailing `.pdparams` / `.pdopt`, as Paddle users write it, is dropped).
          skip_mismatch: load matching entries and warn about the rest instead of raising.
          reset_optimizer: keep the current (fresh) optimizer state.
        """
        if self._state is None:
            self._state = TrainState.create(self._network)
        state, problems = _save.load_state(self._state, _strip_suffix(path), skip_mismatch=skip_mismatch,
                                           reset_optimizer=reset_optimizer)
        for p in problems:
            warnings.warn(f"Model.load: skipped {p}", stacklevel=2)
        self._state, self._lr_fed = state, None
        self._show()

    # -- inspection ---------------------------------------------------------------------------------
    def summary(self, input_size=None, dtype=None):
        """`pdx.summary` of the network (input_size defaults to the `inputs` InputSpecs)."""
        from pdx.hapi._summary import summary

        if input_size is None and self._inputs is not None:
            input_size = [tuple(1 if d is None or d == -1 else d for d in s.shape) for s in self._inputs]
            dtype = dtype or [str(getattr(s, "dtype", "float32")) for s in self._inputs]
        if input_size is None:
            raise ValueError("Model.summary: pass input_size (e.g. (1, 1, 28, 28)) or build Model(net, inputs=[InputSpec(...)])")
        return summary(self.network, input_size, dtypes=dtype)
