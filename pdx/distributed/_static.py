"""`to_static` / `DistModel`: one compiled train (eval, predict) step over a placed model."""

from __future__ import annotations

import jax
import numpy as np
from flax import nnx

from pdx import _placement
from pdx.distributed._api import PartialArray, get_placements, shard_tensor
from pdx.distributed._layer import ShardDataloader
from pdx.distributed._mesh import ProcessMesh, get_mesh
from pdx.distributed._placements import Replicate, Shard

__all__ = ["DistModel", "Strategy", "to_static"]


class _Config:
    """An attribute bag with fixed fields (Paddle's strategy sections)."""

    def __init__(self, section: str, **defaults):
        object.__setattr__(self, "_section", section)
        object.__setattr__(self, "_fields", dict(defaults))

    def __getattr__(self, name):
        fields = object.__getattribute__(self, "_fields")
        if name in fields:
            return fields[name]
        raise AttributeError(f"Strategy.{self._section} has no field {name!r}; fields: {sorted(fields)}")

    def __setattr__(self, name, value):
        if name not in self._fields:
            raise AttributeError(f"Strategy.{self._section} has no field {name!r}; fields: {sorted(self._fields)}")
        self._fields[name] = value

    def __repr__(self) -> str:
        return f"{self._section}({', '.join(f'{k}={v!r}' for k, v in self._fields.items())})"


class Strategy:
    """Paddle's `dist.Strategy` for `to_static`, minimal.

    Sections and fields as Paddle's: `sharding` (enable, stage, degree),
    `gradient_merge` (enable, k_steps, avg), `pipeline` (enable,
    schedule_mode, micro_batch_size, accumulate_steps), `amp` (enable,
    dtype, level), `recompute` (enable), `fused_passes` (enable,
    fused_passes_list). `to_static` applies `sharding` (ZeRO stage over the
    "dp" mesh dimension); the others, when enabled, raise
    NotImplementedError naming the pdx way.

    Example:
      >>> import pdx.distributed as dist
      >>> s = dist.Strategy({"sharding": {"enable": True, "stage": 2}})
      >>> s.sharding.stage
      2
    """

    _SECTIONS = {
        "sharding": dict(enable=False, stage=1, degree=8),
        "gradient_merge": dict(enable=False, k_steps=1, avg=True),
        "pipeline": dict(enable=False, schedule_mode="1F1B", micro_batch_size=1, accumulate_steps=1),
        "amp": dict(enable=False, dtype="float16", level="O1"),
        "recompute": dict(enable=False),
        "fused_passes": dict(enable=False, fused_passes_list=[]),
    }

    def __init__(self, config: dict | None = None):
        for section, defaults in self._SECTIONS.items():
            setattr(self, section, _Config(section, **defaults))
        for section, values in (config or {}).items():
            if section not in self._SECTIONS:
                raise ValueError(f"Strategy: unknown section {section!r}; sections: {sorted(self._SECTIONS)}")
            for k, v in dict(values).items():
                setattr(getattr(self, section), k, v)

    def __repr__(self) -> str:
        return "Strategy(" + ", ".join(repr(getattr(self, s)) for s in self._SECTIONS) + ")"


_UNSUPPORTED = {
    "gradient_merge": "accumulate gradients inside your own pdx.jit step",
    "pipeline": "use dist.parallelize(..., config={'pp_config': ...}) on a model whose layers run through "
                "pdx.parallel.run_layers",
    "amp": "use pdx.amp.auto_cast / pdx.amp.decorate on the model",
    "recompute": "use pdx.nn.recompute (or the model's recompute policy)",
    "fused_passes": "XLA fuses the compiled step itself",
}


def _model_mesh(layer) -> ProcessMesh | None:
    for _, node in nnx.iter_graph(layer):
        if isinstance(node, nnx.Variable):
            placement = _placement.placement_of(node)
            if placement is not None:
                return ProcessMesh.from_jax_mesh(placement.value.mesh)
    return None


class DistModel:
    """A placed model, loss and optimizer compiled into one step (Paddle's `dist.DistModel`).

    Made by `to_static`. `model(*inputs, labels)` runs one compiled train
    step in "train" mode and returns the loss; in "eval" mode the loss
    without an update; in "predict" mode the model's outputs. Switch with
    `.train()`, `.eval()`, `.predict()`. Inputs that are not yet placed go
    where the loader would put them (split over "dp" when the mesh has it).
    """

    def __init__(self, layer, loader=None, loss=None, optimizer=None, strategy=None, metrics=None, input_spec=None):
        if not isinstance(layer, nnx.Module):
            raise TypeError(f"to_static: layer must be a pdx.nn.Layer; got {type(layer).__name__}")
        self._layer, self._loss, self._optimizer = layer, loss, optimizer
        self._loader = loader
        self._strategy = strategy if strategy is not None else Strategy()
        self._mesh = _model_mesh(layer) or get_mesh()
        if self._mesh is None:
            raise ValueError("to_static: the model has no placed parameters and no global mesh is set; place it "
                             "with dist.shard_layer / dist.parallelize or call dist.set_mesh first")
        self._apply_strategy()
        self._mode = "train" if optimizer is not None and loss is not None else "eval" if loss is not None else "predict"
        self._compiled = {}

    def _apply_strategy(self) -> None:
        from pdx.distributed._optimizer import ShardingStage1, ShardingStage2, ShardingStage3, shard_optimizer

        s = self._strategy
        for section, hint in _UNSUPPORTED.items():
            if getattr(s, section).enable:
                raise NotImplementedError(f"to_static: Strategy.{section}.enable is not supported; {hint}")
        if s.sharding.enable and self._optimizer is not None:
            stages = {1: ShardingStage1, 2: ShardingStage2, 3: ShardingStage3}
            if s.sharding.stage not in stages:
                raise ValueError(f"Strategy.sharding.stage must be 1, 2 or 3; got {s.sharding.stage!r}")
            dim = "dp" if "dp" in self._mesh.dim_names else 0
            shard_optimizer(self._optimizer, stages[s.sharding.stage](dim, self._mesh))

    # -- modes ---------------------------------------------------------------------------------
    def train(self) -> None:
        if self._optimizer is None or self._loss is None:
            raise ValueError("DistModel.train: train mode needs both loss= and optimizer= given to to_static")
        self._mode = "train"
        self._layer.train()

    def eval(self) -> None:
        if self._loss is None:
            raise ValueError("DistModel.eval: eval mode needs loss= given to to_static")
        self._mode = "eval"
        self._layer.eval()

    def predict(self) -> None:
        self._mode = "predict"
        self._layer.eval()

    @property
    def mode(self) -> str:
        return self._mode

    # -- running ------------------------------------------------------------------------------
    def _placements(self, i: int):
        if isinstance(self._loader, ShardDataloader):
            return self._loader._placements(i)
        mesh = self._mesh
        placements = [Replicate() for _ in mesh.dim_names]
        if "dp" in mesh.dim_names:
            placements[mesh.dim_names.index("dp")] = Shard(0)
        return mesh, placements

    def _place(self, args):
        out = []
        for i, a in enumerate(args):
            if isinstance(a, PartialArray) or not hasattr(a, "shape") or get_placements(a) is not None:
                out.append(a)
                continue
            mesh, placements = self._placements(i)
            dp = [d for d, p in enumerate(placements) if p.is_shard()]
            if dp and (len(a.shape) == 0 or a.shape[0] % mesh.shape[dp[0]]):
                placements = [Replicate() for _ in mesh.dim_names]
            out.append(shard_tensor(np.asarray(a) if not isinstance(a, jax.Array) else a, mesh, placements))
        return out

    def _step(self, mode: str):
        if mode not in self._compiled:
            import pdx

            loss_fn = self._loss

            def predict(model, inputs):
                return model(*inputs)

            def evaluate(model, inputs, labels):
                return loss_fn(model(*inputs), *labels)

            def train(model, opt, inputs, labels):
                def objective(m):
                    return loss_fn(m(*inputs), *labels)

                loss, grads = pdx.value_and_grad(objective)(model)
                opt.step(grads)
                return loss

            self._compiled = {"train": pdx.jit(train), "eval": pdx.jit(evaluate), "predict": pdx.jit(predict)}
        return self._compiled[mode]

    def __call__(self, *args):
        args = self._place(args)
        if self._mode == "predict":
            return self._step("predict")(self._layer, tuple(args))
        if len(args) < 2:
            raise ValueError(f"DistModel: {self._mode} mode takes the inputs then the label(s); got {len(args)} argument(s)")
        inputs, labels = tuple(args[:-1]), tuple(args[-1:])
        if self._mode == "eval":
            return self._step("eval")(self._layer, inputs, labels)
        return self._step("train")(self._layer, self._optimizer, inputs, labels)

    def state_dict(self, mode: str = "all") -> dict:
        """The model's (mode "param" / "all") and optimizer's ("opt" / "all") state by name."""
        if mode not in ("all", "param", "opt"):
            raise ValueError(f"DistModel.state_dict: mode must be 'all', 'param' or 'opt'; got {mode!r}")
        out = {}
        if mode in ("all", "param"):
            out.update(self._layer.state_dict())
        if mode in ("all", "opt") and self._optimizer is not None:
            out.update(self._optimizer.state_dict())
        return out

    def set_state_dict(self, state_dict: dict) -> None:
        names = set(self._layer.state_dict())
        self._layer.set_state_dict({k: v for k, v in state_dict.items() if k in names})
        if self._optimizer is not None:
            rest = {k: v for k, v in state_dict.items() if k not in names}
            if rest:
                self._optimizer.set_state_dict(rest)


def to_static(layer, loader=None, loss=None, optimizer=None, strategy=None, input_spec=None) -> DistModel:
    """Compile a placed model into a `DistModel` (Paddle's `dist.to_static`).

    Args:
      layer: the model, placed (`shard_layer`, `parallelize`) or not (then
        replicated on the global mesh).
      loader: a `ShardDataloader` (its placements are used for unplaced inputs) or None.
      loss: `loss(outputs, labels) -> scalar` (a Layer or a function).
      optimizer: a pdx optimizer bound to `layer` (placed by `shard_optimizer` or not).
      strategy: a `Strategy` (sharding honored; see its doc).
      input_spec: accepted and unused (shapes come from the first call).

    Returns:
      The DistModel, in "train" mode when loss and optimizer are given.

    Example:
      >>> import numpy as np, pdx, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
      >>> net = dist.shard_layer(pdx.nn.Linear(3, 1), mesh)
      >>> opt = dist.shard_optimizer(pdx.optimizer.SGD(0.1, parameters=net))
      >>> model = dist.to_static(net, None, lambda out, y: ((out - y) ** 2).mean(), opt)
      >>> loss = model(np.ones((4, 3), "float32"), np.zeros((4, 1), "float32"))
      >>> loss.shape
      ()
    """
    from pdx.distributed._layer import replicate_rest

    if _model_mesh(layer) is None and get_mesh() is not None:
        replicate_rest(layer, get_mesh())
    return DistModel(layer, loader, loss, optimizer, strategy, input_spec=input_spec)
