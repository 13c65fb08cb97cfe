"""`Optimizer`: Paddle's optimizer API as an nnx graph node over optax.

An optimizer holds the model's own `nnx.Param` Variables (shared references)
and its state (optax state leaves wrapped in `nnx.OptArray` Variables, plus
the learning rate or an `LRScheduler`). So `opt.step(grads)` updates the model
in place eagerly, and inside a traced train step (`pdx.jit`, `nnx.jit`) the
same call is a pure state update that the trace threads through: changing the
learning rate or stepping the scheduler never recompiles.

The math is a plain optax transformation over a dict name -> array, built per
parameter group: grad clip -> regularization -> the optimizer's update. Get it
with `opt.transformation()` to drive `(init, update)` yourself.

Differences from Paddle: gradients are passed to `step(grads)` (there is no
`loss.backward()` and no `.grad` on parameters); `minimize` raises with the pdx
way; a parameter's `trainable` flag is read when the optimizer is built.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from pdx import _param_names, _placement
from pdx.nn import GradientClipBase
from pdx.optimizer import _transforms
from pdx.optimizer._update import MasterWeightsState, apply_update, compute_dtype, init_opt_state, master_weights
from pdx.optimizer.lr import LRScheduler, _as_float, _traced
from pdx.regularizer import L1Decay, L2Decay, WeightDecayRegularizer

__all__ = ["Optimizer"]

_MINIMIZE_MSG = (
    "{cls}.minimize(loss) is Paddle's static-graph/backward API; pdx has no loss.backward(). "
    "Compute gradients functionally and pass them to step():\n"
    "    loss, grads = pdx.value_and_grad(loss_fn)(model, *batch)\n"
    "    opt.step(grads)\n"
    "Both lines work eagerly and inside pdx.jit."
)

_STEP_NEEDS_GRADS = (
    "{cls}.step() needs the gradients: pdx keeps no .grad on parameters. Use\n"
    "    loss, grads = pdx.value_and_grad(loss_fn)(model, *batch)\n"
    "    opt.step(grads)"
)

_GROUP_KEYS = ("params", "learning_rate", "weight_decay", "grad_clip")


def _is_layer(obj) -> bool:
    return isinstance(obj, nnx.Module) and hasattr(obj, "named_parameters")


def _metadata(var) -> dict:
    return var.get_metadata() if hasattr(var, "get_metadata") else {}


def _as_regularizer(cls: str, arg: str, value):
    if value is None or isinstance(value, WeightDecayRegularizer):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return L2Decay(float(value))
    raise TypeError(f"{cls}: {arg} must be None, a float (L2 coefficient), L1Decay or L2Decay; got {value!r}")


def _check_lr(cls: str, value):
    if isinstance(value, LRScheduler):
        return value
    if isinstance(value, (jax.Array, np.ndarray)) and value.shape in ((), (1,)) and not _traced(value):
        value = float(np.asarray(value).reshape(()))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{cls}: learning_rate must be a float or a pdx.optimizer.lr.LRScheduler; got {type(value).__name__} ({value!r})")
    if value < 0:
        raise ValueError(f"{cls}: learning_rate must be >= 0; got {value}")
    return float(value)


def _as_hyper(cls: str, arg: str, value) -> float:
    if isinstance(value, (jax.Array, np.ndarray)) and value.size == 1 and not _traced(value):
        value = float(np.asarray(value).reshape(()))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{cls}: {arg} must be a float; got {value!r}")
    return float(value)


def _low_precision(dtype) -> bool:
    return jnp.dtype(dtype) in (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))


class _Group:
    """Static per-group settings: names (trainable only, binding order), the
    group's hyperparameters, and per-parameter multipliers / regularizers."""

    def __init__(self, names, options, lr_scale, regularizer, need_clip, params, grad_clip):
        self.names = tuple(names)
        self.options = dict(options)
        self.lr_scale = dict(lr_scale)
        self.need_clip = dict(need_clip)
        self.params = dict(params)  # name -> nnx.Param, for user callbacks (lr_ratio, exclude fns)
        self.grad_clip = grad_clip
        self.l1 = {n: r.coeff if isinstance(r, L1Decay) else 0.0 for n, r in regularizer.items()}
        self.l2 = {n: r.coeff if isinstance(r, L2Decay) else 0.0 for n, r in regularizer.items()}


class Optimizer(nnx.Pytree):
    """Base class of the pdx optimizers (Paddle's `paddle.optimizer.Optimizer`).

    Subclasses set their hyperparameters, call `super().__init__`, and
    implement `_group_transform(group, learning_rate)`: the optax chain that
    follows gradient clipping for one parameter group.

    Args:
      learning_rate: a float or a `pdx.optimizer.lr.LRScheduler`.
      parameters: what to optimize: a Layer, `layer.parameters()`, a list of
        `nnx.Param`, or Paddle parameter groups (a list of dicts with 'params'
        and optional 'learning_rate' (a multiplier), 'weight_decay',
        'grad_clip' and the optimizer's hyperparameters). Parameters are
        named by their `state_dict` names in the Layer given, or in the Layer
        whose `parameters()` listed them (`gen.parameters()`: `'fc.weight'`).
      weight_decay: None, a float (L2 coefficient), `L1Decay` or `L2Decay`;
        a parameter's `ParamAttr(regularizer=...)` takes precedence.
      grad_clip: None or a `pdx.nn.ClipGradBy*` instance.
      name: ignored (Paddle's name scope).
      multi_precision: keep float32 master weights for float16/bfloat16 params.
      defaults: the hyperparameters a parameter group may override.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Linear(4, 2)
      >>> opt = pdx.optimizer.Momentum(0.1, parameters=[
      ...     {"params": [net.weight], "weight_decay": 1e-4},
      ...     {"params": [net.bias], "learning_rate": 2.0}])  # bias: 2x the lr
      >>> loss, grads = pdx.value_and_grad(lambda m: m(jnp.ones((3, 4))).sum())(net)
      >>> opt.step(grads)
      >>> opt.get_lr()
      0.1
    """

    _decoupled_weight_decay = False  # True: weight_decay is not a gradient regularizer (AdamW, Lamb)

    def __init__(self, learning_rate, parameters=None, weight_decay=None, grad_clip=None, name=None, *,
                 multi_precision: bool = False, defaults: Mapping[str, Any] | None = None) -> None:
        cls = type(self).__name__
        learning_rate = _check_lr(cls, learning_rate)
        if grad_clip is not None and not isinstance(grad_clip, GradientClipBase):
            raise TypeError(f"{cls}: grad_clip must be a pdx.nn.ClipGradByGlobalNorm / ClipGradByNorm / ClipGradByValue; got {grad_clip!r}")
        self._name = name
        self._multi_precision = bool(multi_precision)
        self.regularization = None if self._decoupled_weight_decay else _as_regularizer(cls, "weight_decay", weight_decay)
        self._grad_clip = grad_clip
        self._defaults = tuple((defaults or {}).items())  # static attributes must be hashable (nnx graphdef)
        self._lr_scheduler = learning_rate if isinstance(learning_rate, LRScheduler) else None
        self._lr = nnx.OptState(jnp.asarray(0.0 if self._lr_scheduler else learning_rate, jnp.float32))

        names, variables, groups = self._bind(parameters)
        self._names = tuple(names)
        self._parameter_vars = nnx.List(variables)
        self._groups = tuple(groups)
        self._trainable = tuple(n for g in groups for n in g.names)
        by_name = dict(zip(names, variables))
        # (name, dtype name) of each parameter with a float32 master copy in the state (static)
        self._master_dtypes = tuple((n, str(by_name[n].get_value().dtype)) for n in self._trainable
                                    if self._multi_precision and _low_precision(by_name[n].get_value().dtype))
        self._set_transformation()
        self._opt_state = nnx.data(_wrap_state(init_opt_state(self._tx, self._param_values()), by_name))

    def _set_transformation(self) -> None:
        self._tx = self._build(None)
        # One compiled update for eager steps (op-by-op dispatch of a whole
        # optimizer is slow); inside a traced train step it is simply inlined.
        self._apply = jax.jit(functools.partial(apply_update, self._tx))

    @property
    def _default_dict(self) -> dict:
        """Paddle's attribute: the hyperparameters a parameter group may override."""
        return dict(self._defaults)

    # -- binding ----------------------------------------------------------------------
    def _bind(self, parameters):
        cls = type(self).__name__
        if parameters is None:
            raise ValueError(f"{cls}: parameters= is required: pass the model (parameters=model), model.parameters() or parameter groups")
        if isinstance(parameters, (nnx.Variable, jax.Array, np.ndarray)):
            raise TypeError(f"{cls}: parameters must be a Layer or a list of parameters, not a single {type(parameters).__name__}; wrap it in a list")
        if isinstance(parameters, Mapping):
            raise TypeError(f"{cls}: parameters must not be a dict; for parameter groups pass a list of dicts [{{'params': ...}}, ...]")
        if _is_layer(parameters):
            specs, grouped = [{"params": parameters}], False
        else:
            parameters = list(parameters)
            if not parameters:
                raise ValueError(f"{cls}: parameters is empty; there is nothing to optimize")
            grouped = all(isinstance(p, Mapping) for p in parameters)
            if not grouped and any(isinstance(p, Mapping) for p in parameters):
                raise TypeError(f"{cls}: parameters mixes dicts (parameter groups) and parameters; use one or the other")
            specs = [dict(p) for p in parameters] if grouped else [{"params": parameters}]

        defaults = self._default_dict
        allowed = set(_GROUP_KEYS) | set(defaults)
        names, variables, groups, seen, taken = [], [], [], set(), set()
        for gi, spec in enumerate(specs):
            if "params" not in spec:
                raise ValueError(f"{cls}: parameter group {gi} has no 'params' entry")
            unknown = sorted(set(spec) - allowed)
            if unknown:
                raise ValueError(f"{cls}: parameter group {gi} has unknown keys {unknown}; allowed: {sorted(allowed)}")
            entries = self._named_entries(spec["params"], gi, len(variables))
            trainable, lr_scale, regularizer, need_clip, params = [], {}, {}, {}, {}
            options = {k: spec.get(k, v) for k, v in defaults.items()}
            group_clip = spec.get("grad_clip", self._grad_clip)
            if group_clip is not None and not isinstance(group_clip, GradientClipBase):
                raise TypeError(f"{cls}: parameter group {gi} grad_clip must be a pdx.nn.ClipGradBy* instance; got {group_clip!r}")
            for name, var in entries:
                if id(var) in seen:
                    raise ValueError(f"{cls}: parameter {name!r} appears in more than one parameter group")
                seen.add(id(var))
                name = _unique(name, taken)
                taken.add(name)
                names.append(name)
                variables.append(var)
                meta = _metadata(var)
                if not meta.get("trainable", True) or meta.get("stop_gradient", False):
                    continue
                value = var.get_value()
                if not jnp.issubdtype(value.dtype, jnp.floating):
                    raise TypeError(f"{cls}: parameter {name!r} has dtype {value.dtype}; only floating-point parameters can be optimized")
                trainable.append(name)
                params[name] = var
                need_clip[name] = bool(meta.get("need_clip", True))
                multiplier = spec.get("learning_rate", 1.0) if grouped else meta.get("learning_rate", 1.0)
                lr_scale[name] = _as_hyper(cls, f"learning_rate multiplier of {name!r}", multiplier)
                regularizer[name] = self._regularizer_for(meta, spec, grouped, name)
            groups.append(_Group(trainable, options, lr_scale, regularizer, need_clip, params, group_clip))
        return names, variables, groups

    def _named_entries(self, params, group_index: int, offset: int):
        """(name, Variable) pairs of one parameter group.

        A Layer's parameters are named by its `named_parameters()`. A list of
        parameters (`layer.parameters()`, filtered or concatenated) is named by
        each parameter's `state_dict` name in the Layer that listed it
        (`pdx._param_names`), else by its `ParamAttr(name=...)`, else
        `param_<index>`.
        """
        cls = type(self).__name__
        if _is_layer(params):
            return list(params.named_parameters())
        if isinstance(params, nnx.Variable):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError(f"{cls}: parameters must be an ordered collection, not a set; use a list")
        params = list(params)
        for var in params:
            if not isinstance(var, nnx.Variable):
                raise TypeError(f"{cls}: parameter group {group_index} holds a {type(var).__name__}; expected nnx.Param "
                                "(from layer.parameters() / create_parameter) or a Layer")
        listed = _param_names.listed_names(params)
        return [(name or _metadata(var).get("name") or f"param_{offset + i}", var)
                for i, (name, var) in enumerate(zip(listed, params))]

    def _regularizer_for(self, meta, spec, grouped: bool, name: str):
        cls = type(self).__name__
        own = meta.get("regularizer")
        if own is not None and not isinstance(own, WeightDecayRegularizer):
            raise TypeError(f"{cls}: parameter {name!r} has ParamAttr regularizer={own!r}; expected pdx.regularizer.L1Decay / L2Decay")
        if self._decoupled_weight_decay:
            return own
        # Paddle: a parameter group's weight_decay replaces the ParamAttr regularizer.
        if grouped and "weight_decay" in spec:
            return _as_regularizer(cls, "parameter group weight_decay", spec["weight_decay"])
        if grouped:
            return self.regularization
        return own if own is not None else self.regularization

    # -- the transformation ----------------------------------------------------------------
    def _regularization(self, group: _Group, *, l1: bool = True, l2: bool = True):
        """`add_regularization` for the group's L1 and/or L2 terms, or None."""
        c1 = {n: c for n, c in group.l1.items()} if l1 else {n: 0.0 for n in group.names}
        c2 = {n: c for n, c in group.l2.items()} if l2 else {n: 0.0 for n in group.names}
        if not any(c1.values()) and not any(c2.values()):
            return None
        return _transforms.add_regularization(c1, c2)

    def _group_transform(self, group: _Group, learning_rate) -> optax.GradientTransformation:
        raise NotImplementedError(f"{type(self).__name__} must implement _group_transform")

    def _build(self, learning_rate):
        parts = []
        for group in self._groups:
            if not group.names:
                continue
            chain = []
            if group.grad_clip is not None:
                chain.append(("grad_clip", group.grad_clip.transformation(group.need_clip)))
            chain.append(("update", self._group_transform(group, learning_rate)))
            parts.append((group.names, optax.named_chain(*chain)))
        tx = _transforms.partition_by_name(parts)
        return master_weights(tx, dict(self._master_dtypes)) if self._master_dtypes else tx

    def transformation(self) -> optax.GradientTransformationExtraArgs:
        """This optimizer's math as a pure optax transformation.

        It works on a dict name -> array of the trainable parameters (the
        names are `opt.named_parameters()`'s), with the learning rate
        following the scheduler's `as_schedule()` (one scheduler step per
        update) or the current float learning rate.

        Example:
          >>> import jax, jax.numpy as jnp, optax, pdx
          >>> net = pdx.nn.Layer()
          >>> net.w = net.create_parameter([3])
          >>> tx = pdx.optimizer.Adam(0.1, parameters=net).transformation()
          >>> params = {"w": jnp.ones(3)}
          >>> state = tx.init(params)
          >>> updates, state = tx.update({"w": jnp.ones(3)}, state, params)
          >>> [round(v, 3) for v in optax.apply_updates(params, updates)["w"].tolist()]
          [0.9, 0.9, 0.9]
        """
        lr = self._lr_scheduler.as_schedule() if self._lr_scheduler is not None else float(self.get_lr())
        return self._build(lr)

    # -- stepping --------------------------------------------------------------------------------
    def named_parameters(self) -> list[tuple[str, nnx.Variable]]:
        """(name, nnx.Param) pairs this optimizer updates, in binding order."""
        return list(zip(self._names, self._parameter_vars))

    def trainable_parameters(self) -> list[tuple[str, nnx.Variable]]:
        """(name, nnx.Param) pairs this optimizer updates, in binding order.

        `named_parameters()` without the frozen ones (`trainable=False` or
        `stop_gradient=True`); these names key `transformation()`'s params,
        gradients and state.
        """
        by_name = dict(zip(self._names, self._parameter_vars))
        return [(name, by_name[name]) for name in self._trainable]

    def add_master_weights(self, names, dtype=None) -> None:
        """Keep float32 master copies of these trainable parameters, taken from
        their current values (names not trained by this optimizer are ignored).

        `pdx.amp.decorate(..., master_weight=True)` calls it before casting a
        model to float16/bfloat16; the update then runs on the float32 copy and
        the low-precision parameter is written from it. The copies are part of
        the optimizer state (`opt_state`, `TrainState.opt_state`, checkpoints).

        Args:
          names: trainable parameter names (`trainable_parameters()`).
          dtype: the dtype the parameters are (or are about to be) kept in;
            default: each parameter's current dtype.

        Example:
            >>> import pdx
            >>> net = pdx.nn.Linear(2, 2)
            >>> opt = pdx.optimizer.SGD(0.1, parameters=net.parameters())
            >>> names = [name for name, _ in opt.trainable_parameters()]
            >>> opt.add_master_weights(names[:1])
            >>> [k for k in opt.state_dict() if k.startswith("master_weights/")] == [f"master_weights/{names[0]}"]
            True
        """
        by_name = dict(self.trainable_parameters())
        dtypes = dict(self._master_dtypes)
        added = [n for n in names if n in by_name and n not in dtypes]
        if not added:
            return
        state = self.opt_state
        masters, inner = (dict(state.masters), state.inner) if dtypes else ({}, state)
        for name in added:
            value = by_name[name].get_value()
            dtypes[name] = str(jnp.dtype(dtype if dtype is not None else value.dtype))
            masters[name] = value.astype(jnp.float32)
        self._master_dtypes = tuple(dtypes.items())
        self._set_transformation()
        self._opt_state = nnx.data(_wrap_state(MasterWeightsState(masters, inner), dict(self.named_parameters())))

    @property
    def opt_state(self):
        """A read-only view of the optax state `step()` keeps: the pytree of
        `transformation().init(params)` (for a float learning rate) holding
        this optimizer's current arrays."""
        return jax.tree.map(lambda v: v.get_value(), self._opt_state, is_leaf=lambda x: isinstance(x, nnx.Variable))

    def init_state(self, params: Mapping):
        """The optax state to train `params` (name -> array, keyed like
        `trainable_parameters()`) with `transformation()` from here on.

        It is this optimizer's current state when its layout is the
        transformation's (so eager `step()`s taken before, and the placement
        `pdx.parallel.shard` gave it, carry over), else a fresh
        `transformation().init(params)` (a scheduler-driven learning rate,
        whose transformation also counts updates).

        Example:
          >>> import jax.numpy as jnp, pdx
          >>> net = pdx.nn.Linear(2, 1)
          >>> opt = pdx.optimizer.Momentum(0.1, parameters=net)
          >>> state = opt.init_state({n: v[...] for n, v in opt.trainable_parameters()})
          >>> sorted(state[0]["update"]["velocity"][0])
          ['bias', 'weight']
        """
        # One compiled init instead of an eager zeros kernel per parameter shape.
        fresh = jax.jit(functools.partial(init_opt_state, self.transformation()))(dict(params))
        current = self.opt_state
        same = jax.tree.structure(current) == jax.tree.structure(fresh) and all(
            a.shape == b.shape and a.dtype == b.dtype for a, b in zip(jax.tree.leaves(current), jax.tree.leaves(fresh)))
        return current if same else fresh

    def current_lr(self) -> jax.Array:
        """The learning rate the next update uses, as a float32 device scalar
        (no host transfer; `get_lr()` is the same value as a Python float)."""
        return self._current_lr()

    @property
    def _parameter_list(self) -> list:
        return list(self._parameter_vars)

    def _param_values(self) -> dict:
        """Trainable parameters' current values by name (the update promotes them)."""
        by_name = dict(zip(self._names, self._parameter_vars))
        return {name: by_name[name].get_value() for name in self._trainable}

    def _current_lr(self):
        if self._lr_scheduler is not None:
            return self._lr_scheduler._last_lr.get_value()
        return self._lr.get_value()

    def step(self, grads=None) -> None:
        """Update the bound parameters in place from `grads`.

        Args:
          grads: a dict name -> gradient as returned by `pdx.grad` (matched to
            the parameters by identity through its `owner`, else by this
            optimizer's names), or a list of gradients in binding order.

        Example:
          >>> import jax.numpy as jnp, pdx
          >>> net = pdx.nn.Layer()
          >>> net.w = net.create_parameter([2], default_initializer=pdx.nn.initializer.Constant(1.0))
          >>> opt = pdx.optimizer.SGD(learning_rate=0.5, parameters=net)
          >>> opt.step({"w": jnp.array([1.0, 2.0])})
          >>> net.w[...].tolist()
          [0.5, 0.0]
        """
        cls = type(self).__name__
        if grads is None:
            raise TypeError(_STEP_NEEDS_GRADS.format(cls=cls))
        matched = self._match_grads(grads)
        by_name = dict(zip(self._names, self._parameter_vars))
        params = self._param_values()
        grads = {}
        for name in self._trainable:
            g = matched[name]
            if isinstance(g, nnx.Variable):
                g = g.get_value()
            g = jnp.asarray(g)
            shape = tuple(by_name[name].get_value().shape)
            if tuple(g.shape) != shape:
                raise ValueError(f"{cls}.step: the gradient of {name!r} has shape {tuple(g.shape)} but the parameter has shape {shape}")
            grads[name] = _placement.constrain_grad(by_name[name], g.astype(compute_dtype(params[name].dtype)))
        state = jax.tree.map(lambda v: v.get_value(), self._opt_state, is_leaf=lambda x: isinstance(x, nnx.Variable))
        new_params, state = self._apply(params, grads, state, self._current_lr())
        jax.tree.map(lambda v, x: v.set_value(_placement.constrain_value(v, x)), self._opt_state, state,
                     is_leaf=lambda x: isinstance(x, nnx.Variable))
        for name, new in new_params.items():
            var = by_name[name]
            var.set_value(_placement.constrain_value(var, new))

    def _match_grads(self, grads) -> dict:
        """This optimizer's trainable gradients, by its names, out of `grads`.

        `grads` may cover more than this optimizer's parameters (the whole
        model, of which it trains a part); gradients of other parameters are
        ignored. A dict is matched by identity through its `owner` (the
        `Gradients` of `pdx.value_and_grad`); without an owner, or when the
        owner holds none of these parameters (another copy of the model), by
        name: this optimizer's names, or those names under one common prefix
        (a dict keyed by the `state_dict` names of a Layer containing the
        parameters: `'1.fc.weight'` for this optimizer's `'fc.weight'`).
        """
        cls = type(self).__name__
        trainable = set(self._trainable)
        if isinstance(grads, Mapping):
            matched = {}
            owner = getattr(grads, "owner", None)
            if owner is not None and hasattr(owner, "named_parameters"):
                index = {id(v): n for n, v in zip(self._names, self._parameter_vars)}
                owned = dict(owner.named_parameters())
                for key, g in grads.items():
                    name = index.get(id(owned[key])) if key in owned else None
                    if name is not None:  # else: a parameter this optimizer does not update
                        matched[name] = g
            if not matched:
                shapes = {n: tuple(v.get_value().shape) for n, v in self.trainable_parameters()}
                keys = _keys_by_name(cls, grads, shapes, foreign_owner=owner is not None)
                matched = {n: grads[key] for n, key in keys.items()}
        elif isinstance(grads, (list, tuple)):
            if len(grads) == len(self._names):
                matched = dict(zip(self._names, grads))
            elif len(grads) == len(self._trainable):
                matched = dict(zip(self._trainable, grads))
            else:
                raise ValueError(f"{cls}.step: got {len(grads)} gradients for {len(self._trainable)} trainable parameters {list(self._trainable)}")
        else:
            raise TypeError(f"{cls}.step: grads must be a dict name -> gradient (from pdx.grad) or a list in parameter order; got {type(grads).__name__}")
        missing = [n for n in self._trainable if matched.get(n) is None]
        if missing:
            given = list(grads) if isinstance(grads, Mapping) else f"{len(grads)} gradients"
            raise ValueError(f"{cls}.step: no gradient for parameter(s) {missing} of this optimizer (grads has {_clip_list(given)}). "
                             "Compute grads for a Layer that holds them: loss, grads = pdx.value_and_grad(loss_fn)(model, ...), "
                             "or key a plain dict by the optimizer's names (opt.trainable_parameters()) or by the "
                             "state_dict names of one Layer containing them")
        return {n: g for n, g in matched.items() if n in trainable}

    def apply_gradients(self, params_grads) -> None:
        """Paddle's `apply_gradients`: update from a list of (param, grad) pairs."""
        index = {id(v): n for n, v in zip(self._names, self._parameter_vars)}
        grads = {}
        for param, grad in params_grads:
            name = index.get(id(param))
            if name is None:
                raise ValueError(f"{type(self).__name__}.apply_gradients: a parameter of shape {tuple(param.get_value().shape)} is not bound to this optimizer")
            grads[name] = grad
        self.step(grads)

    def minimize(self, loss=None, startup_program=None, parameters=None, no_grad_set=None):
        """Not available in pdx: raises with the functional recipe."""
        raise RuntimeError(_MINIMIZE_MSG.format(cls=type(self).__name__))

    def backward(self, loss=None, startup_program=None, parameters=None, no_grad_set=None, callbacks=None):
        """Not available in pdx: raises with the functional recipe."""
        raise RuntimeError(_MINIMIZE_MSG.format(cls=type(self).__name__))

    def clear_grad(self, set_to_zero: bool = True) -> None:
        """No-op kept for ported Paddle loops (pdx keeps no gradients)."""

    clear_gradients = clear_grad

    def zero_grad(self, set_to_none: bool = True) -> None:
        """No-op kept for ported Paddle loops (pdx keeps no gradients)."""

    # -- learning rate ------------------------------------------------------------------------------
    def get_lr(self):
        """The learning rate the next `step` uses (a float eagerly)."""
        return _as_float(self._current_lr())

    def set_lr(self, value) -> None:
        """Set a constant learning rate (not allowed while a scheduler drives it)."""
        cls = type(self).__name__
        if self._lr_scheduler is not None:
            raise RuntimeError(f"{cls}.set_lr: the learning rate is driven by {type(self._lr_scheduler).__name__}; "
                               "step the scheduler, or replace it with set_lr_scheduler(...)")
        if not _traced(value):
            value = _check_lr(f"{cls}.set_lr", value)
        self._lr.set_value(jnp.asarray(value, jnp.float32))

    def set_lr_scheduler(self, scheduler: LRScheduler) -> None:
        """Drive the learning rate with `scheduler` from now on."""
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(f"{type(self).__name__}.set_lr_scheduler: expected a pdx.optimizer.lr.LRScheduler; got {type(scheduler).__name__}")
        self._lr_scheduler = scheduler

    @property
    def _learning_rate(self):
        """Paddle's attribute: the LRScheduler, or the float learning rate."""
        return self._lr_scheduler if self._lr_scheduler is not None else self.get_lr()

    @_learning_rate.setter
    def _learning_rate(self, value) -> None:
        if isinstance(value, LRScheduler):
            self.set_lr_scheduler(value)
        else:
            if self._lr_scheduler is not None:
                self._lr_scheduler = None
            self.set_lr(value)

    # -- state -------------------------------------------------------------------------------------
    def _flat_state(self) -> dict:
        state, masters = self._opt_state, {}
        if isinstance(state, MasterWeightsState):  # Paddle's layout: the copies under 'master_weights'
            state, masters = state.inner, state.masters
        leaves = jax.tree_util.tree_flatten_with_path(state, is_leaf=lambda x: isinstance(x, nnx.Variable))[0]
        out = {jax.tree_util.keystr(path, simple=True, separator="/"): var for path, var in leaves}
        out.update({f"master_weights/{n}": v for n, v in masters.items()})
        return out

    def state_dict(self) -> dict:
        """The optimizer state as a flat dict.

        Keys are the '/'-joined paths of the optax state (e.g.
        `'0/update/adam/mu/fc.weight'`: parameter group 0, Adam's first
        moment of `fc.weight`), `'master_weights/<name>'` for float32 master copies, and
        `'LR_Scheduler'` (the scheduler's `state_dict()`) when one is set.
        """
        out = {key: var.get_value() for key, var in self._flat_state().items()}
        if self._lr_scheduler is not None:
            out["LR_Scheduler"] = self._lr_scheduler.state_dict()
        return out

    def set_state_dict(self, state_dict: Mapping) -> None:
        """Load a `state_dict()`; shapes must match (dtypes are cast)."""
        cls = type(self).__name__
        own = self._flat_state()
        missing = [k for k in own if k not in state_dict]
        if missing:
            raise KeyError(f"{cls}.set_state_dict: the state_dict lacks {missing}; it holds {sorted(k for k in state_dict if k != 'LR_Scheduler')}")
        loads = []
        for key, var in own.items():
            value = state_dict[key]
            if not isinstance(value, (jax.Array, np.ndarray)) and hasattr(value, "numpy"):
                value = value.numpy()
            value = jnp.asarray(value)
            current = var.get_value()
            if tuple(value.shape) != tuple(current.shape):
                raise ValueError(f"{cls}.set_state_dict: {key!r} has shape {tuple(value.shape)} but this optimizer's is {tuple(current.shape)}")
            loads.append((var, value.astype(current.dtype)))
        if self._lr_scheduler is not None:
            if "LR_Scheduler" not in state_dict:
                raise KeyError(f"{cls}.set_state_dict: the state_dict has no 'LR_Scheduler' entry for the {type(self._lr_scheduler).__name__}")
            self._lr_scheduler.set_state_dict(state_dict["LR_Scheduler"])
        for var, value in loads:
            var.set_value(value)

    set_dict = set_state_dict

    def __repr__(self) -> str:
        lr = type(self._lr_scheduler).__name__ if self._lr_scheduler is not None else self.get_lr()
        return f"{type(self).__name__}(learning_rate={lr}, parameters={len(self._names)})"


def _sharding_metadata(param) -> dict:
    """The parameter's logical axis names, for optimizer state shaped like it."""
    return _placement.axes_metadata(_placement.logical_axes(param))


def _wrap_state(state, by_name: dict):
    """optax state leaves as `nnx.OptArray`s; a per-parameter leaf (under its
    parameter's name, same shape) inherits the parameter's logical axis names,
    so sharding rules place optimizer state like the parameter (ZeRO/FSDP)."""

    def wrap(path, leaf):
        for key in reversed(path):
            name = getattr(key, "key", None)
            if isinstance(name, str) and name in by_name:
                param = by_name[name]
                if tuple(leaf.shape) == tuple(param.get_value().shape):
                    return nnx.OptArray(leaf, **_sharding_metadata(param))
                break
        return nnx.OptArray(leaf)

    return jax.tree_util.tree_map_with_path(wrap, state)


def _grad_shape(g) -> tuple:
    return tuple(np.shape(g.get_value() if isinstance(g, nnx.Variable) else g))


def _keys_by_name(cls: str, grads: Mapping, shapes: dict, *, foreign_owner: bool) -> dict:
    """{own name: key of grads} for the trainable parameters `shapes` (name -> shape).

    The own names themselves when grads has them all with the parameters'
    shapes; else the one prefix P (`'1.'`) under which it has them so; else
    those it has under the prefix holding most of them (the caller reports
    the rest) — none when grads are a `foreign_owner`'s (the Gradients of a
    Layer holding none of these parameters: unless they all fit, as for a
    copy of the model, another Layer's gradients that share some names are
    not this optimizer's).
    """
    names = list(shapes)

    def fit(prefix):
        return all(prefix + n in grads and _grad_shape(grads[prefix + n]) == shapes[n] for n in names)

    if fit(""):
        return {n: n for n in names}
    first = names[0]
    prefixes = {k[:len(k) - len(first)] for k in grads if isinstance(k, str) and k.endswith("." + first)}
    fits = sorted(p for p in prefixes if fit(p))
    if len(fits) > 1:
        raise ValueError(f"{cls}.step: grads holds this optimizer's parameters {_clip_list(names)} under each of the prefixes "
                         f"{fits}, with matching shapes; which Layer's they are cannot be told by name. Pass the Gradients "
                         "pdx.value_and_grad returns (matched by identity), or a dict keyed by the optimizer's names "
                         "(opt.trainable_parameters())")
    if fits:
        return {n: fits[0] + n for n in names}
    if foreign_owner:
        return {}
    # Nothing fits whole: take the prefix that holds most of them, so the error names what is missing there.
    prefixes = {""} | {k[:len(k) - len(n)] for n in names for k in grads if isinstance(k, str) and k.endswith("." + n)}
    best = max(sorted(prefixes), key=lambda p: sum(p + n in grads for n in names))
    return {n: best + n for n in names if best + n in grads}


def _clip_list(items, limit: int = 8) -> str:
    items = list(items) if not isinstance(items, str) else items
    if isinstance(items, str) or len(items) <= limit:
        return repr(items)
    return repr(items[:limit])[:-1] + f", ... ({len(items) - limit} more)]"


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    k = 1
    while f"{name}_{k}" in taken:
        k += 1
    return f"{name}_{k}"
