"""PipelineLayer / LayerDesc / SharedLayerDesc and the PipelineParallel that `distributed_model` returns.

Paddle builds only the current stage's layers on each rank and passes
activations between ranks itself. pdx builds the whole model once: the
longest run of identical consecutive LayerDescs (the decoder blocks) is
stored as one `pdx.nn.LayerStack` whose layer dimension sits on the "pp"
mesh axis, so stage s holds its own blocks, and runs through
`pdx.parallel.run_layers` — the pipeline schedule over "pp" with
`accumulate_steps` microbatches. Layers before and after that run (the
embedding, the final norm and head) are computed on every stage.
A SharedLayerDesc key names one layer used at several places (tied input
and output embeddings): it is one Layer object, so its weight is one
parameter and its gradient is the sum of both uses.

Data flow of `model.train_batch([x, y], opt)`: one `pdx.jit` step —
`value_and_grad` of `loss_fn(model(x), y)` (the batch split over the
data-parallel axes), `opt.step(grads)` — then the LR scheduler's step.
With `pipeline_configs["schedule_mode"] = "1F1B"` (the default, as in
Paddle) the block run, the layers after it and the loss go through
`pdx.parallel.pipeline_1f1b_loss`; "FThenB" uses GPipe (`run_layers`).
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp

from pdx._graph import check_identical
from pdx.nn import Layer, LayerDict, LayerList, LayerStack

__all__ = ["LayerDesc", "PipelineLayer", "PipelineParallel", "SharedLayerDesc"]

# pipeline_configs["schedule_mode"]: 1F1B (the default, as Paddle's) or the GPipe-like forward-then-backward
# (also under its virtual-pipeline name, run interleaved when virtual_pp_degree > 1).
_SCHEDULES = {"1F1B", "FThenB", "VPP"}


class LayerDesc:
    """A Layer class and its arguments, built by PipelineLayer (Paddle's `LayerDesc`).

    Example:
      >>> import pdx
      >>> from pdx.distributed.fleet.meta_parallel import LayerDesc
      >>> LayerDesc(pdx.nn.Linear, 4, 8).build_layer().weight.shape
      (4, 8)
    """

    def __init__(self, layer_func, *inputs, **kwargs):
        if not (inspect.isclass(layer_func) and issubclass(layer_func, Layer)):
            raise TypeError(f"LayerDesc: layer_func must be a pdx.nn.Layer subclass; got {layer_func!r}")
        self.layer_func = layer_func
        self.inputs = inputs
        self.kwargs = kwargs

    def build_layer(self) -> Layer:
        return self.layer_func(*self.inputs, **self.kwargs)

    def __repr__(self) -> str:
        return f"LayerDesc({self.layer_func.__name__})"


class SharedLayerDesc(LayerDesc):
    """A LayerDesc whose `key` names one layer shared by every desc with that key.

    `forward_func(layer, x)` (optional) is how this use of the shared layer
    computes, e.g. the output projection with the input embedding's weight.
    """

    def __init__(self, key, layer_func, forward_func=None, shared_weight_attr="weight", *inputs, **kwargs):
        super().__init__(layer_func, *inputs, **kwargs)
        self.layer_name = key
        self.forward_func = forward_func
        self.shared_weight_attr = shared_weight_attr


def _call(fn, x):
    return fn(*x) if isinstance(x, tuple) else fn(x)


def _identical(layers) -> bool:
    try:
        check_identical(layers, "PipelineLayer")
        return True
    except ValueError:
        return False


def _longest_identical_run(built) -> tuple[int, int]:
    """(start, length) of the longest run of >= 2 consecutive identical plain layers; (0, 0) if none."""
    best = (0, 0)
    i = 0
    while i < len(built):
        j = i
        while (j + 1 < len(built) and built[i] is not None and built[j + 1] is not None
               and type(built[j + 1]) is type(built[i]) and _identical([built[i], built[j + 1]])):
            j += 1
        if j - i + 1 >= 2 and j - i + 1 > best[1]:
            best = (i, j - i + 1)
        i = j + 1
    return best


class PipelineLayer(Layer):
    """A model as a list of LayerDescs / SharedLayerDescs / Layers / functions, run in order.

    Args:
      layers: the list; a function (e.g. `lambda x: x.mean()`) is applied as is.
      num_stages: pipeline stages (default: the fleet mesh's pp degree, or the
        topology's "pipe" dim, else 1).
      topology: a fleet CommunicateTopology (read for the "pipe" dim).
      loss_fn: `loss_fn(output, label)`, used by train_batch / eval_batch.
      seg_method: accepted ("uniform"); pdx splits the identical block run evenly.
      recompute_interval: > 0 recomputes each block in the backward pass.
      num_virtual_pipeline_stages: chunks per stage (interleaved schedule).

    State-dict names: plain layers are `layers_before.<i>` / `layers_after.<i>`,
    the block run `blocks.<name>` with a leading layer dimension, shared
    layers `shared_layers.<key>`.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> from pdx.distributed.fleet.meta_parallel import LayerDesc, PipelineLayer
      >>> net = PipelineLayer([LayerDesc(pdx.nn.Linear, 4, 4) for _ in range(4)] + [lambda x: x.mean(-1)])
      >>> net(jnp.ones((2, 4))).shape, net.blocks.num_layers
      ((2,), 4)
    """

    def __init__(self, layers, num_stages=None, topology=None, loss_fn=None, seg_method="uniform",
                 recompute_interval: int = 0, recompute_ctx=None, num_virtual_pipeline_stages=None, **kwargs):
        super().__init__()
        from pdx.distributed.fleet._fleet import _FLEET

        if not isinstance(layers, (list, tuple)) or not layers:
            raise TypeError("PipelineLayer: layers must be a non-empty list of LayerDesc / Layer / functions")
        if num_stages is None:
            if topology is not None:
                num_stages = topology.get_dim("pipe")
            elif _FLEET.config is not None:
                num_stages = _FLEET.config.pp_degree
            else:
                num_stages = 1
        self._num_stages = int(num_stages)
        self._virtual = int(num_virtual_pipeline_stages or 1)
        self._loss_fn = loss_fn
        shared, built = {}, []
        steps = []  # ("plain", index into built) / ("shared", key, forward_func) / ("fn", callable)
        for k, item in enumerate(layers):
            if isinstance(item, SharedLayerDesc):
                if item.layer_name not in shared:
                    shared[item.layer_name] = item.build_layer()
                steps.append(("shared", item.layer_name, item.forward_func))
            elif isinstance(item, LayerDesc):
                built.append(item.build_layer())
                steps.append(("plain", len(built) - 1))
            elif isinstance(item, Layer):
                built.append(item)
                steps.append(("plain", len(built) - 1))
            elif callable(item):
                steps.append(("fn", item))
            else:
                raise TypeError(f"PipelineLayer: layers[{k}] is a {type(item).__name__}; expected a LayerDesc, "
                                "SharedLayerDesc, Layer or function")
        start, length = _longest_identical_run(built)
        chunks = self._num_stages * self._virtual
        if chunks > 1 and (length == 0 or length % chunks):
            raise ValueError(f"PipelineLayer: pdx pipelines the run of identical consecutive layers ({length} found) "
                             f"over num_stages x num_virtual_pipeline_stages = {self._num_stages} x {self._virtual}; "
                             "make that run's length a multiple of it")
        policy = "full" if recompute_interval and recompute_interval > 0 else None
        self.layers_before = LayerList(built[:start])
        self.blocks = LayerStack(built[start:start + length], policy=policy) if length else None
        self.layers_after = LayerList(built[start + length:])
        self.shared_layers = LayerDict(shared)
        plan = []
        for step in steps:
            if step[0] == "plain":
                i = step[1]
                if start <= i < start + length:
                    if i == start:
                        plan.append(("blocks",))
                elif i < start:
                    plan.append(("before", i))
                else:
                    plan.append(("after", i - start - length))
            else:
                plan.append(step)
        self._plan = tuple(plan)

    def get_num_stages(self) -> int:
        return self._num_stages

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        return self._run(input, self._plan)

    def pipelined_loss(self, x, y, num_microbatches: int):
        """`loss_fn(self(x), y)` with the block run on the 1F1B schedule (`pdx.parallel.pipeline_1f1b_loss`).

        Layers before the blocks run as usual; the layers after them and the
        loss are the schedule's head, computed per microbatch on the last stage.
        """
        from pdx.parallel import pipeline_1f1b_loss

        k = self._plan.index(("blocks",))
        h = self._run(x, self._plan[:k])
        after = self._plan[k + 1:]
        tail = [self.layers_after, self.shared_layers] + ([self._loss_fn] if isinstance(self._loss_fn, Layer) else [])
        return pipeline_1f1b_loss(self.blocks, h, y, tail, lambda _, hidden, t: self._loss_fn(self._run(hidden, after), t),
                                  num_stages=self._num_stages, num_microbatches=num_microbatches)

    def _run(self, x, steps):
        from pdx.parallel import run_layers

        for step in steps:
            if step[0] == "blocks":
                x = _call(lambda *a: run_layers(self.blocks, *a), x)
            elif step[0] == "before":
                x = _call(self.layers_before[step[1]], x)
            elif step[0] == "after":
                x = _call(self.layers_after[step[1]], x)
            elif step[0] == "shared":
                layer = self.shared_layers[step[1]]
                x = step[2](layer, x) if step[2] is not None else _call(layer, x)
            else:
                x = _call(step[1], x)
        return x


class PipelineParallel(Layer):
    """What `fleet.distributed_model` returns for a PipelineLayer: `train_batch` / `eval_batch` steps.

    Example: `loss = model.train_batch([x, y], optimizer, lr_scheduler)` — one
    compiled step over `accumulate_steps` microbatches.
    """

    def __init__(self, layers: PipelineLayer, hcg=None, strategy=None):
        super().__init__()
        self._layers = layers
        self._hcg = hcg
        self._accumulate_steps = strategy.hybrid_config().accumulate_steps if strategy is not None else 1
        self._micro_batch_size = strategy.pipeline_configs.get("micro_batch_size") if strategy is not None else None
        schedule = strategy.pipeline_configs.get("schedule_mode", "1F1B") if strategy is not None else "1F1B"
        if schedule not in _SCHEDULES:
            raise ValueError(f"PipelineParallel: pipeline_configs['schedule_mode']={schedule!r}; pdx runs "
                             f"{sorted(_SCHEDULES)}")
        # 1F1B (Paddle's default) needs the block run and at least as many microbatches as stages
        self._one_f_one_b = (schedule == "1F1B" and layers.blocks is not None and layers.get_num_stages() > 1
                             and self._accumulate_steps >= layers.get_num_stages())

    def forward(self, *inputs):
        from pdx.distributed.fleet._fleet import _split_batch

        return self._layers(*_split_batch(inputs))

    def state_dict(self, *args, **kwargs):
        return self._layers.state_dict(*args, **kwargs)

    def set_state_dict(self, *args, **kwargs):
        return self._layers.set_state_dict(*args, **kwargs)

    def _check(self, data, fn: str):
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise TypeError(f"PipelineParallel.{fn}: data must be [inputs, labels]; got {type(data).__name__}")
        x, y = data
        if self._layers._loss_fn is None:
            raise ValueError(f"PipelineParallel.{fn}: the PipelineLayer has no loss_fn; pass loss_fn= when building it")
        batch = (x[0] if isinstance(x, (list, tuple)) else x).shape[0]
        if batch % self._accumulate_steps:
            raise ValueError(f"PipelineParallel.{fn}: batch {batch} is not divisible into accumulate_steps="
                             f"{self._accumulate_steps} microbatches")
        return tuple(x) if isinstance(x, list) else x, y

    def _loss(self, x, y):
        from pdx.distributed.fleet._fleet import _split_batch

        x = tuple(_split_batch(x)) if isinstance(x, tuple) else _split_batch([x])[0]
        if self._one_f_one_b and not isinstance(x, tuple) and self.training:
            return self._layers.pipelined_loss(x, y, self._accumulate_steps)
        return self._layers._loss_fn(self._layers(x), y)

    def train_batch(self, data, optimizer, lr_scheduler=None, scaler=None):
        """One training step on `data = [inputs, labels]`; returns the loss (the mean over microbatches)."""
        if scaler is not None:
            raise ValueError("PipelineParallel.train_batch: loss scaling is not used in pdx; train in bfloat16 "
                             "(pdx.amp.auto_cast) and pass scaler=None")
        x, y = self._check(data, "train_batch")
        loss = _steps()["train"](self, optimizer, x, y)
        if lr_scheduler is not None:
            lr_scheduler.step()
        return loss

    def eval_batch(self, data, compute_loss: bool = False):
        """The loss (compute_loss=True) or the model's output on `data = [inputs, labels]`."""
        x, y = self._check(data, "eval_batch")
        return _steps()["eval_loss" if compute_loss else "eval_output"](self, x, y)


_STEPS: dict = {}


def _steps() -> dict:
    """The compiled steps, made once (pdx.jit retraces per model structure and input shapes)."""
    import pdx

    if not _STEPS:
        def train(model, opt, x, y):
            loss, grads = pdx.value_and_grad(lambda m: m._loss(x, y))(model)
            opt.step(grads)
            return loss

        _STEPS["train"] = pdx.jit(train)
        _STEPS["eval_loss"] = pdx.jit(lambda model, x, y: model._loss(x, y))
        _STEPS["eval_output"] = pdx.jit(lambda model, x, y: model._layers(x))
    return _STEPS
