"""`TrainState`: everything that changes during training, as one pytree.

DESIGN.md principle 3. A `TrainState` holds the model's trainable parameters,
its other state (batch-norm statistics, non-trained parameters, dropout RNG
keys), the optimizer state, a PRNG key, the step counter, the loss-scaling
state, the learning rate and the non-finite-step counter. Its leaves are
arrays only: checkpointing saves it with orbax, parallelism attaches a
sharding to each leaf, export closes over `params`.

What never changes during training is static (pytree metadata, not leaves):
the model's nnx graph definition (for training and for evaluation mode), the
optax transformation of the optimizer, the `GradScaler` configuration and
the name bookkeeping. A compiled step is then a pure function
`(state, batch) -> (state, metrics)` (`pdx.train.make_step`); `pdx.Model`
and the recipes run on one.

Names: `params` and `buffers` are dicts keyed by the model's dotted
`state_dict()` names (`"0.weight"`, `"bn._mean"`, `"drop.rng"`). PRNG keys
are stored as raw `jax.random.key_data` (uint32) so every leaf is a plain
array; `merge` re-wraps them.

Example:
    >>> import jax, jax.numpy as jnp, pdx
    >>> net = pdx.nn.Linear(3, 1)
    >>> opt = pdx.optimizer.SGD(0.1, parameters=net)
    >>> state = pdx.TrainState.create(net, opt)
    >>> sorted(state.params)
    ['bias', 'weight']
    >>> def loss_fn(params):
    ...     return state.merge(params)(jnp.ones((2, 3))).mean()
    >>> state = state.apply_gradients(jax.grad(loss_fn)(state.params))
    >>> int(state.step)
    1
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from pdx import _placement
from pdx.amp import GradScaler, LossScaleState
from pdx.optimizer import apply_update

__all__ = ["TrainState"]


@dataclasses.dataclass(eq=False, frozen=True)
class _Spec:
    """The static part of a TrainState (hashed by identity: states derived
    from one `create` share it, so compiled steps never retrace on it)."""

    graphdef: Any              # nnx GraphDef, training mode
    eval_graphdef: Any         # the same graph in evaluation mode
    treedef: Any               # how the nnx state's leaves fit together
    names: tuple               # dotted name per leaf, in treedef order
    trainable: frozenset       # names that are optimized (the rest are buffers)
    key_impls: tuple           # (name, PRNG impl) for leaves stored as key_data
    opt_names: tuple           # (model name, optimizer name) for each trainable param
    tx: Any                    # the optimizer's optax transformation (or None)
    scaler: GradScaler
    axes: tuple = ()           # (name, logical axis names or None) per leaf, in treedef order


def _dotted(path) -> str:
    parts = []
    for key in path:
        for attr in ("key", "name", "idx"):
            if hasattr(key, attr):
                parts.append(str(getattr(key, attr)))
                break
    if parts and parts[-1] == "value":  # the Variable's own leaf
        parts.pop()
    return ".".join(parts)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TrainState:
    """All training state as one pytree (`pdx.TrainState`).

    Fields (all leaves are arrays):
      params: dict name -> array, the parameters the optimizer updates.
      buffers: dict name -> array, every other model variable (batch-norm
        statistics, frozen parameters, dropout keys as key_data).
      opt_state: the optax state of `optimizer.transformation()`, keyed by
        the optimizer's parameter names; it starts from the optimizer's
        current state when the layouts agree (a float learning rate), so
        earlier eager steps and `pdx.parallel.shard` placement carry over.
      rng: a PRNG key as key_data (uint32), split once per step for the user.
      step: int32, optimizer updates applied (skipped steps do not count).
      loss_scale: a `pdx.amp.LossScaleState` (scale 1 without a GradScaler).
      lr: float32, the learning rate the next update uses.
      nonfinite_steps: int32, consecutive steps skipped for non-finite values.

    Create it with `TrainState.create(model, optimizer)`; derive new states
    with `replace(...)` or `apply_gradients(grads)`; rebuild a runnable model
    from it with `merge()`; copy its values into a live Layer with
    `update_model(model)`.
    """

    params: dict
    buffers: dict
    opt_state: Any
    rng: jax.Array
    step: jax.Array
    loss_scale: LossScaleState
    lr: jax.Array
    nonfinite_steps: jax.Array
    spec: _Spec = dataclasses.field(metadata=dict(static=True))

    # -- construction -----------------------------------------------------------------
    @classmethod
    def create(cls, model, optimizer=None, *, grad_scaler: GradScaler | None = None, seed: int = 0) -> "TrainState":
        """Split `model` (a pdx Layer) and `optimizer` (a pdx optimizer bound to it) into a TrainState.

        Args:
          model: the Layer; its current values become the initial state.
          optimizer: a `pdx.optimizer.*` bound to (some of) `model`'s parameters,
            or None for an inference-only state (every variable is a buffer).
          grad_scaler: a `pdx.amp.GradScaler` for float16 training (optional).
          seed: seeds `rng`.

        Returns:
          A TrainState with step 0.
        """
        if not hasattr(model, "named_parameters") or not isinstance(model, nnx.Module):
            raise TypeError(f"TrainState.create: model must be a pdx.nn.Layer; got {type(model).__name__}")
        if grad_scaler is not None and not isinstance(grad_scaler, GradScaler):
            raise TypeError(f"TrainState.create: grad_scaler must be a pdx.amp.GradScaler; got {type(grad_scaler).__name__}")
        graphdef, nnx_state = nnx.split(model)
        variables, _ = jax.tree_util.tree_flatten_with_path(nnx_state, is_leaf=lambda x: isinstance(x, nnx.Variable))
        leaves, treedef = jax.tree_util.tree_flatten(nnx_state)
        if len(variables) != len(leaves):
            raise TypeError("TrainState.create: every model variable must hold exactly one array")
        names = tuple(_dotted(path) for path, _ in variables)
        # Both modes from a throwaway copy, whatever mode the user's model is in.
        copy = nnx.merge(graphdef, nnx_state)
        copy.train()
        graphdef = nnx.graphdef(copy)
        copy.eval()
        eval_graphdef = nnx.graphdef(copy)

        opt_names, trainable, tx = (), frozenset(), None
        if optimizer is not None:
            for attr in ("trainable_parameters", "transformation", "init_state", "get_lr"):
                if not callable(getattr(optimizer, attr, None)):
                    raise TypeError(f"TrainState.create: optimizer must be a pdx.optimizer.Optimizer (it has no "
                                    f"{attr}()); got {type(optimizer).__name__}")
            by_id = {id(var): name for name, var in model.named_parameters()}
            # a parameter reachable under two names (nn.LSTM's weight_ih_l0 is also 0.cell.weight_ih)
            # is keyed by the path nnx.split gives it
            by_id.update({id(node): ".".join(str(k) for k in path) for path, node in nnx.iter_graph(model)
                          if isinstance(node, nnx.Variable) and id(node) in by_id})
            pairs = []
            for opt_name, var in optimizer.trainable_parameters():
                if id(var) not in by_id:
                    raise ValueError(f"TrainState.create: the optimizer's parameter {opt_name!r} is not a parameter of "
                                     f"{type(model).__name__}; build the optimizer with parameters=model (or model.parameters())")
                pairs.append((by_id[id(var)], opt_name))
            opt_names = tuple(pairs)
            trainable = frozenset(n for n, _ in pairs)
            missing = sorted(trainable - set(names))
            if missing:
                raise ValueError(f"TrainState.create: parameters {missing} are not found in the model's nnx state {list(names)}")
            tx = optimizer.transformation()

        params, buffers, key_impls = {}, {}, []
        for name, leaf in zip(names, leaves):
            if name in trainable:
                params[name] = leaf
            elif jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
                key_impls.append((name, jax.random.key_impl(leaf)))
                buffers[name] = jax.random.key_data(leaf)
            else:
                buffers[name] = leaf
        scaler = grad_scaler if grad_scaler is not None else GradScaler(enable=False)
        axes = tuple((name, _placement.logical_axes(var)) for name, (_, var) in zip(names, variables))
        spec = _Spec(graphdef, eval_graphdef, treedef, names, trainable, tuple(key_impls), opt_names, tx, scaler, axes)
        opt_state = optimizer.init_state({o: params[m] for m, o in opt_names}) if tx is not None else ()
        lr = optimizer.get_lr() if optimizer is not None else 0.0
        return cls(params=params, buffers=buffers, opt_state=opt_state,
                   rng=jax.random.key_data(jax.random.key(seed)), step=jnp.zeros((), jnp.int32),
                   loss_scale=scaler.init(), lr=jnp.asarray(lr, jnp.float32),
                   nonfinite_steps=jnp.zeros((), jnp.int32), spec=spec)

    # -- functional updates -------------------------------------------------------------
    def replace(self, **changes) -> "TrainState":
        """A copy with some fields replaced (the static part is kept)."""
        return dataclasses.replace(self, **changes)

    @property
    def graphdef(self):
        """The model's nnx graph definition (training mode)."""
        return self.spec.graphdef

    @property
    def tx(self):
        """The optimizer's optax transformation."""
        return self.spec.tx

    def apply_gradients(self, grads: dict) -> "TrainState":
        """One optimizer update from `grads` (a dict shaped like `params`).

        The same update `Optimizer.step` runs (`pdx.optimizer.apply_update`):
        computed in float32, master weights (`multi_precision=True`) kept in
        `opt_state`.

        Returns:
          A new state with updated params and opt_state and step + 1.
        """
        if self.spec.tx is None:
            raise ValueError("TrainState.apply_gradients: this state was created without an optimizer")
        unknown = sorted(set(grads) ^ set(self.params))
        if unknown:
            raise KeyError(f"TrainState.apply_gradients: grads and params differ in keys {unknown}")
        to_opt = dict(self.spec.opt_names)
        p = {to_opt[m]: v for m, v in self.params.items()}
        g = {to_opt[m]: grads[m] for m in self.params}
        new, opt_state = apply_update(self.spec.tx, p, g, self.opt_state, self.lr)
        params = {m: new[o] for m, o in self.spec.opt_names}
        return self.replace(params=params, opt_state=opt_state, step=self.step + 1)

    def next_rng(self) -> tuple["TrainState", jax.Array]:
        """Split `rng`: (state with the new key, a fresh typed key for this step)."""
        key, sub = jax.random.split(jax.random.wrap_key_data(self.rng))
        return self.replace(rng=jax.random.key_data(key)), sub

    # -- models ------------------------------------------------------------------------------
    def _leaves(self, params: dict, buffers: dict) -> list:
        impls = dict(self.spec.key_impls)
        out = []
        for name in self.spec.names:
            if name in self.spec.trainable:
                out.append(params[name])
            elif name in impls:
                out.append(jax.random.wrap_key_data(buffers[name], impl=impls[name]))
            else:
                out.append(buffers[name])
        return out

    def merge(self, params: dict | None = None, buffers: dict | None = None, *, training: bool = True):
        """A Layer built from this state's values (or the given `params`/`buffers`).

        Works inside a trace: that is how a compiled step runs the model on
        traced parameters. `training=False` gives the evaluation-mode graph
        (dropout off, batch norm on running statistics).
        """
        params = self.params if params is None else params
        buffers = self.buffers if buffers is None else buffers
        nnx_state = jax.tree_util.tree_unflatten(self.spec.treedef, self._leaves(params, buffers))
        return nnx.merge(self.spec.graphdef if training else self.spec.eval_graphdef, nnx_state)

    def read_buffers(self, model) -> dict:
        """The buffers of a model obtained from `merge` (after a forward pass
        that may have changed them), in this state's layout."""
        _, nnx_state = nnx.split(model)
        leaves = jax.tree_util.tree_leaves(nnx_state)
        impls = dict(self.spec.key_impls)
        out = {}
        for name, leaf in zip(self.spec.names, leaves):
            if name in self.spec.trainable:
                continue
            out[name] = jax.random.key_data(leaf) if name in impls else leaf
        return out

    def update_model(self, model) -> None:
        """Copy this state's parameters and buffers into a live Layer of the same structure."""
        values = dict(zip(self.spec.names, self._leaves(self.params, self.buffers)))
        _, nnx_state = nnx.split(model)
        variables, _ = jax.tree_util.tree_flatten_with_path(nnx_state, is_leaf=lambda x: isinstance(x, nnx.Variable))
        names = [_dotted(p) for p, _ in variables]
        if names != list(self.spec.names):
            raise ValueError(f"TrainState.update_model: the model's variables {names} differ from this state's {list(self.spec.names)}")
        nnx.update(model, jax.tree_util.tree_unflatten(self.spec.treedef, [values[n] for n in names]))

    def state_dict(self) -> dict:
        """Parameters and buffers by dotted name (PRNG keys as key_data)."""
        out = {}
        for name in self.spec.names:
            out[name] = self.params[name] if name in self.spec.trainable else self.buffers[name]
        return out
