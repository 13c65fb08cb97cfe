"""`Layer`: Paddle's `nn.Layer` API on a `flax.nnx.Module`.

A Layer owns its parameters (`nnx.Param`) and buffers (`Buffer`, e.g. batch
norm statistics) as nnx Variables, so the same object runs eagerly (values are
mutable, print works) and splits into `(graphdef, state)` for `pdx.jit`,
checkpointing and sharding. Names follow Paddle: `state_dict()` keys are the
dotted attribute paths (`"0.weight"`, `"bn._mean"`), in definition order.

Every parameter carries logical axis names (`axis_names`, stored as nnx
`out_sharding` metadata through `pdx._placement`) that a parallel config maps
to mesh axes; layers never mention mesh axes.

A Layer's structure (its sublayers, parameters and settings) may change at
any time; `pdx.jit` notices through nnx itself (`pdx._nnx.structure_version`),
as it does for any nnx object.

Example:
    >>> import pdx
    >>> class Net(pdx.nn.Layer):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = pdx.nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x)
    >>> net = Net()
    >>> [name for name, _ in net.named_parameters()]
    ['fc.weight', 'fc.bias']
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import weakref
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pdx import _nnx, _param_names, _random
from pdx._random import as_rngs
from pdx._static_layers import static_layers as _static_layers
from pdx._dtype import convert_dtype, default_float
from pdx._placement import axes_metadata

__all__ = ["Buffer", "HookRemoveHelper", "Layer", "ParamAttr", "as_rngs"]


def _value(x):
    return x.get_value() if isinstance(x, nnx.Variable) else x


class Buffer(nnx.Variable):
    """A non-trainable tensor owned by a Layer (Paddle's `register_buffer`).

    It reads like the tensor it holds, as a Paddle buffer does: arithmetic
    (nnx's), comparisons, `!=` and `bool()` of a one-element buffer work on the
    value (`self.mask > 0`, `if self.initialized:`). Indexing another array with
    a buffer needs its value: `x[:, self.perm[...]]`.
    """

    def __lt__(self, other):
        return self.get_value() < _value(other)

    def __le__(self, other):
        return self.get_value() <= _value(other)

    def __gt__(self, other):
        return self.get_value() > _value(other)

    def __ge__(self, other):
        return self.get_value() >= _value(other)

    def __ne__(self, other):
        return self.get_value() != _value(other)

    def __bool__(self) -> bool:
        return bool(self.get_value())


@dataclasses.dataclass(frozen=True)
class ParamAttr:
    """Paddle's `ParamAttr`: how a parameter is created and trained.

    Args:
      name: an optional name (kept as metadata; state_dict keys are structural).
      initializer: an initializer from `pdx.nn.initializer`.
      learning_rate: per-parameter learning-rate multiplier.
      regularizer: a `pdx.regularizer.L2Decay`/`L1Decay` overriding the optimizer's.
      trainable: False freezes the parameter (no gradient, no update).
      need_clip: False exempts it from gradient clipping.

    Example:
      >>> import pdx
      >>> attr = pdx.ParamAttr(initializer=pdx.nn.initializer.Constant(0.5))
      >>> pdx.nn.Linear(2, 2, weight_attr=attr).weight[...][0, 0].item()
      0.5
    """

    name: str | None = None
    initializer: Any = None
    learning_rate: float = 1.0
    regularizer: Any = None
    trainable: bool = True
    do_model_average: bool = False
    need_clip: bool = True


def _param_key(rngs: nnx.Rngs | None) -> jax.Array:
    if rngs is not None:
        return rngs.params()
    return _random.next_key(None, op="parameter initialization")


def _to_array(value, *, name: str) -> jax.Array:
    if isinstance(value, nnx.Variable):
        value = value.get_value()
    if not isinstance(value, (jax.Array, np.ndarray)) and hasattr(value, "numpy"):
        value = value.numpy()  # a paddle / torch tensor
    try:
        return jnp.asarray(value)
    except TypeError as e:
        raise TypeError(f"state_dict entry {name!r} is not array-like: {type(value).__name__}") from e


def _is_child(value) -> bool:
    return isinstance(value, nnx.Module)


def _iter_attributes(node) -> Iterator[tuple[str, Any]]:
    """(name, value) of a graph node's attributes in definition order."""
    if isinstance(node, (nnx.List, list, tuple)):
        yield from ((str(i), v) for i, v in enumerate(node))
        return
    if isinstance(node, (nnx.Dict, dict)):
        yield from ((str(k), v) for k, v in node.items())
        return
    yield from _nnx.user_attributes(node)


_CONTAINERS = (nnx.List, nnx.Dict)

_PLAIN_LIST_OF_LAYERS = (
    "attribute {name!r} of {owner} is a plain {kind} holding Layers; Paddle would not "
    "register their parameters either. Use pdx.nn.LayerList([...]) (or LayerDict / "
    "Sequential) so the parameters are trained, saved and sharded."
)


def restore_attribute_order(src, dst) -> None:
    """Give `dst` (a deep copy of `src`) src's attribute order, recursively.

    deepcopy and nnx.clone go through nnx's graph merge, which recreates
    attributes in sorted order; definition order is what state_dict(), named_parameters()
    and repr show (and what Paddle shows).
    """
    order = {name: i for i, name in enumerate(vars(src))}
    attrs = vars(dst)
    items = sorted(attrs.items(), key=lambda kv: order.get(kv[0], len(order)))
    attrs.clear()
    attrs.update(items)
    for name, value in vars(src).items():
        if isinstance(value, nnx.Module) and isinstance(attrs.get(name), nnx.Module):
            restore_attribute_order(value, attrs[name])


class _Hook(NamedTuple):
    """One registered hook: its id (for `HookRemoveHelper.remove`), the function, and Paddle's flags."""

    hook_id: int
    fn: Callable
    with_kwargs: bool = False
    always_call: bool = False


_HOOK_IDS = itertools.count()

_FORWARD_PRE_HOOKS, _FORWARD_POST_HOOKS, _STATE_DICT_HOOKS = "_forward_pre_hooks", "_forward_post_hooks", "_state_dict_hooks"


class HookRemoveHelper:
    """The handle `register_forward_pre_hook` / `register_forward_post_hook` /
    `register_state_dict_hook` return: `remove()` unregisters the hook."""

    def __init__(self, layer: "Layer", attr: str, hook_id: int) -> None:
        self._layer = weakref.ref(layer)
        self._attr = attr
        self._hook_id = hook_id

    def remove(self) -> None:
        layer = self._layer()
        if layer is None:
            return
        hooks = getattr(layer, self._attr, ())
        kept = tuple(h for h in hooks if h.hook_id != self._hook_id)
        if len(kept) != len(hooks):
            setattr(layer, self._attr, kept)


class _IncompatibleKeys(NamedTuple):
    """What `Layer.load_state_dict` returns (Paddle's and PyTorch's record)."""

    missing_keys: list
    unexpected_keys: list


_NO_BACKWARD = "Layer shouldn't implement backward"

_SHARDED_STATE_DICT = (
    "Layer.{method} builds Paddle's flex-checkpoint ShardedWeight records; pdx checkpoints the "
    "sharded state itself: pdx.checkpoint saves a TrainState (each array with its sharding) and "
    "restores it onto any mesh, and layer.state_dict() gives the full arrays."
)


class Layer(nnx.Module):
    """Base class of all pdx layers (Paddle's `paddle.nn.Layer`).

    Subclasses call `super().__init__()`, create parameters with
    `create_parameter` (or assign sublayers) and implement `forward`.
    Differences from Paddle: there is no `loss.backward()` and no `.grad` on
    parameters — use `pdx.grad` / `pdx.value_and_grad`, then `opt.step(grads)`.
    """

    training = True  # class defaults: a subclass that skips super().__init__() still works
    _dtype = None
    _full_name = None
    # registered hooks: static tuples of `_Hook`, so they survive nnx.split/merge and run inside pdx.jit
    _forward_pre_hooks: tuple = ()
    _forward_post_hooks: tuple = ()
    _state_dict_hooks: tuple = ()

    def __init__(self, name_scope: str | None = None, dtype=None):
        self.training = True
        self._full_name = name_scope or type(self).__name__.lower()
        self._dtype = convert_dtype(dtype) if dtype is not None else default_float()

    # -- attribute bookkeeping -------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, (list, tuple)) and any(isinstance(v, nnx.Module) for v in value):
            raise TypeError(_PLAIN_LIST_OF_LAYERS.format(
                name=name, owner=type(self).__name__, kind=type(value).__name__))
        if type(value) in (list, dict):
            # Paddle code keeps plain containers on layers (`self.cache = {}`, `self.blocks = []`
            # filled with `self.add_sublayer(...)` results). nnx would freeze an empty one as a
            # static attribute and refuse it once it holds a layer or array; as data it may hold
            # anything. Its layers stay named by where they were registered, as in Paddle.
            value = nnx.data(value)
        super().__setattr__(name, value)

    def __deepcopy__(self, memo=None) -> "Layer":
        """`copy.deepcopy(layer)`: an independent copy in the same attribute order.

        nnx's copy recreates attributes sorted by name; Paddle code that pairs
        `model.parameters()` with a copy's (an EMA or a target network) needs
        definition order.
        """
        clone = super().__deepcopy__(memo)
        restore_attribute_order(self, clone)
        return clone

    # -- calling ---------------------------------------------------------------
    def __call__(self, *inputs, **kwargs):
        if self._forward_pre_hooks or self._forward_post_hooks:
            return self._call_with_hooks(inputs, kwargs)
        return self._call_forward(inputs, kwargs)

    def _call_forward(self, inputs, kwargs):
        static = _static_layers.get(self) if _static_layers else None
        if static is not None:
            return static(self, *inputs, **kwargs)
        return self.forward(*inputs, **kwargs)

    def _call_with_hooks(self, inputs, kwargs):
        """Paddle's hook protocol around forward: pre-hooks may replace the inputs,
        post-hooks the output; `always_call` post-hooks also run when forward raises."""
        outputs, ran = None, set()
        try:
            for hook in self._forward_pre_hooks:
                if hook.with_kwargs:
                    result = hook.fn(self, inputs, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got {result}.")
                        inputs, kwargs = result
                else:
                    result = hook.fn(self, inputs)
                    if result is not None:
                        inputs = result if isinstance(result, tuple) else (result,)
            outputs = self._call_forward(inputs, kwargs)
            for hook in self._forward_post_hooks:
                ran.add(hook.hook_id)
                result = hook.fn(self, inputs, kwargs, outputs) if hook.with_kwargs else hook.fn(self, inputs, outputs)
                if result is not None:
                    outputs = result
            return outputs
        except Exception:
            for hook in self._forward_post_hooks:
                if hook.always_call and hook.hook_id not in ran:
                    if hook.with_kwargs:
                        hook.fn(self, inputs, kwargs, outputs)
                    else:
                        hook.fn(self, inputs, outputs)
            raise

    # -- hooks -------------------------------------------------------------------
    def _add_hook(self, attr: str, fn, *, prepend: bool = False, **flags) -> HookRemoveHelper:
        if not callable(fn):
            raise TypeError(f"{type(self).__name__}: a hook must be callable; got {fn!r}")
        hook = _Hook(next(_HOOK_IDS), fn, **flags)
        hooks = getattr(self, attr)
        setattr(self, attr, (hook, *hooks) if prepend else (*hooks, hook))
        return HookRemoveHelper(self, attr, hook.hook_id)

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False) -> HookRemoveHelper:
        """Run `hook(layer, inputs)` before `forward` (Paddle's forward pre-hook).

        `inputs` is the tuple of positional inputs; a non-None result replaces
        them (a single value is wrapped in a tuple). With `with_kwargs=True`
        the hook is `hook(layer, inputs, kwargs)` and returns None or
        `(inputs, kwargs)`. Hooks run in registration order (`prepend=True`
        puts this one first), eagerly and inside `pdx.jit` alike; a hook gets
        the layer as its first argument and should not hold it otherwise
        (a compiled step calls a copy).

        Returns:
          A `HookRemoveHelper`; `.remove()` unregisters the hook.

        Example:
          >>> import jax.numpy as jnp, pdx
          >>> fc = pdx.nn.Linear(2, 2)
          >>> handle = fc.register_forward_pre_hook(lambda layer, inputs: inputs[0] * 0)
          >>> fc(jnp.ones((1, 2))).tolist() == [fc.bias[...].tolist()]
          True
          >>> handle.remove()
        """
        return self._add_hook(_FORWARD_PRE_HOOKS, hook, prepend=prepend, with_kwargs=bool(with_kwargs))

    def register_forward_post_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                                   always_call: bool = False) -> HookRemoveHelper:
        """Run `hook(layer, inputs, output)` after `forward`; a non-None result replaces the output.

        With `with_kwargs=True` the hook is `hook(layer, inputs, kwargs, output)`;
        `always_call=True` runs it even when forward raises.

        Returns:
          A `HookRemoveHelper`; `.remove()` unregisters the hook.

        Example:
          >>> import jax.numpy as jnp, pdx
          >>> fc = pdx.nn.Linear(2, 2)
          >>> handle = fc.register_forward_post_hook(lambda layer, inputs, out: out * 0)
          >>> fc(jnp.ones((1, 2))).tolist()
          [[0.0, 0.0]]
          >>> handle.remove()
        """
        return self._add_hook(_FORWARD_POST_HOOKS, hook, prepend=prepend, with_kwargs=bool(with_kwargs),
                              always_call=bool(always_call))

    register_forward_hook = register_forward_post_hook

    def register_state_dict_hook(self, hook) -> HookRemoveHelper:
        """Run `hook(state_dict)` on what `state_dict()` returns; a non-None result replaces it.

        Example:
          >>> import pdx
          >>> fc = pdx.nn.Linear(2, 2)
          >>> _ = fc.register_state_dict_hook(lambda sd: {k.upper(): v for k, v in sd.items()})
          >>> list(fc.state_dict())
          ['WEIGHT', 'BIAS']
        """
        return self._add_hook(_STATE_DICT_HOOKS, hook)

    def backward(self, *inputs):
        """Paddle's `Layer.backward`: a Layer has none (raises ValueError, as Paddle does)."""
        raise ValueError(_NO_BACKWARD)

    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward(...)")

    # -- creation ----------------------------------------------------------------
    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False,
                         default_initializer=None, *, axis_names=None, rngs=None) -> nnx.Param:
        """Create a parameter (Paddle's `Layer.create_parameter`).

        Args:
          shape: the parameter shape.
          attr: None, a `ParamAttr`, an initializer, or False (returns None, "no parameter").
          dtype: defaults to the layer's dtype.
          is_bias: default initializer Constant(0) instead of XavierUniform.
          default_initializer: used when `attr` names no initializer.
          axis_names: logical axis names, one per dim (e.g. ("embed", "mlp")).
          rngs: optional nnx.Rngs / seed; else the global generator (`pdx.seed`).

        Returns:
          An `nnx.Param` (assign it to an attribute to register it).
        """
        from pdx.nn import initializer as init_lib

        if attr is False:
            return None
        if attr is None or attr is True:
            attr = ParamAttr()
        elif isinstance(attr, init_lib.Initializer):
            attr = ParamAttr(initializer=attr)
        elif isinstance(attr, str):
            attr = ParamAttr(name=attr)
        elif not isinstance(attr, ParamAttr):
            raise TypeError(f"attr must be None, False, a ParamAttr or an initializer; got {attr!r}")
        shape = tuple(int(s) for s in shape)
        if axis_names is not None and len(axis_names) != len(shape):
            raise ValueError(f"create_parameter: axis_names={axis_names} must name each of the {len(shape)} dims of shape={shape}")
        # Paddle's precedence: the ParamAttr's initializer, set_global_initializer's, the layer's default
        initializer = attr.initializer or init_lib.global_initializer(is_bias) or default_initializer
        if initializer is None:
            initializer = init_lib.Constant(0.0) if is_bias else init_lib.XavierUniform()
        dtype = convert_dtype(dtype or self._dtype or default_float())
        value = initializer(_param_key(rngs), shape, dtype)
        metadata = axes_metadata(axis_names)
        if attr != ParamAttr():
            metadata.update(trainable=attr.trainable, learning_rate=attr.learning_rate,
                            regularizer=attr.regularizer, need_clip=attr.need_clip)
            if attr.name:
                metadata["name"] = attr.name
        return nnx.Param(value, **metadata)

    def add_parameter(self, name: str, parameter: nnx.Param) -> nnx.Param:
        """Register `parameter` under `name` (Paddle's `add_parameter`)."""
        if not isinstance(parameter, nnx.Param):
            raise TypeError(f"add_parameter({name!r}, ...) needs an nnx.Param from create_parameter; got {type(parameter).__name__}")
        setattr(self, name, parameter)
        return parameter

    def register_buffer(self, name: str, tensor, persistable: bool = True) -> Buffer:
        """Register a non-trainable tensor (saved in state_dict if persistable)."""
        buf = Buffer(jnp.asarray(tensor), persistable=persistable)
        setattr(self, name, buf)
        return buf

    def add_sublayer(self, name: str, sublayer: "Layer") -> "Layer":
        """Register `sublayer` under `name` (Paddle's `add_sublayer`)."""
        if not isinstance(sublayer, nnx.Module):
            raise TypeError(f"add_sublayer({name!r}, ...) needs a Layer; got {type(sublayer).__name__}")
        setattr(self, name, sublayer)
        return sublayer

    def add_module(self, name: str, module: "Layer | None") -> "Layer | None":
        """PyTorch-style alias of `add_sublayer` (None registers nothing under `name`)."""
        if module is None:
            setattr(self, name, None)
            return None
        return self.add_sublayer(name, module)

    register_module = add_module

    def register_parameter(self, name: str, param: nnx.Param | None) -> None:
        """PyTorch-style alias of `add_parameter` (None sets the attribute to None)."""
        if param is None:
            setattr(self, name, None)
            return
        self.add_parameter(name, param)

    def create_variable(self, name: str | None = None, persistable: bool | None = None, dtype=None) -> jax.Array:
        """Paddle's `create_variable`: a fresh 0-d tensor of `dtype` (zeros: XLA has
        no uninitialized memory). Assign it to an attribute via `register_buffer`
        to keep it on the layer.

        Example:
          >>> import pdx
          >>> t = pdx.nn.Layer().create_variable(dtype="float32")
          >>> t.shape, str(t.dtype)
          ((), 'float32')
        """
        return jnp.zeros((), convert_dtype(dtype or self._dtype or default_float()))

    create_tensor = create_variable

    # -- lookup by dotted path ----------------------------------------------------
    def get_sublayer(self, target: str) -> "Layer":
        """The sublayer at the dotted path `target` (`''` is self), as in Paddle.

        Example:
          >>> import pdx
          >>> net = pdx.nn.Sequential(pdx.nn.Linear(2, 2))
          >>> type(net.get_sublayer("0")).__name__
          'Linear'
        """
        if target == "":
            return self
        layer = self
        for item in target.split("."):
            if not hasattr(layer, item):
                raise AttributeError(f"{type(layer).__name__} has no attribute `{item}` (get_sublayer({target!r}))")
            layer = getattr(layer, item)
            if not isinstance(layer, nnx.Module):
                raise AttributeError(f"`{item}` is not an nn.Layer (get_sublayer({target!r}))")
        return layer

    get_submodule = get_sublayer

    def set_sublayer(self, target: str, layer: "Layer", strict: bool = False) -> None:
        """Replace the sublayer at the dotted path `target` with `layer`."""
        if target == "":
            raise ValueError("Cannot set the sublayer without a target name!")
        if not isinstance(layer, nnx.Module):
            raise ValueError(f"set_sublayer({target!r}, ...): `layer` is not an nn.Layer, found {type(layer)}")
        *path, last = target.split(".")
        parent = self.get_sublayer(".".join(path))
        if strict and not hasattr(parent, last):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{last}`")
        if hasattr(parent, last) and not isinstance(getattr(parent, last), nnx.Module):
            raise AttributeError(f"`{last}` is not an nn.Layer")
        setattr(parent, last, layer)

    set_submodule = set_sublayer

    def _get_variable(self, target: str, kind, what: str):
        *path, last = target.split(".")
        layer = self.get_sublayer(".".join(path))
        if not hasattr(layer, last):
            raise AttributeError(f"{type(layer).__name__} has no attribute `{last}` (get_{what}({target!r}))")
        value = getattr(layer, last)
        if not isinstance(value, kind):
            raise AttributeError(f"`{last}` is not a {what} (get_{what}({target!r}))")
        return value

    def get_parameter(self, target: str) -> nnx.Param:
        """The parameter at the dotted path `target` (`'fc.weight'`)."""
        return self._get_variable(target, nnx.Param, "parameter")

    def get_buffer(self, target: str) -> Buffer:
        """The buffer at the dotted path `target` (`'bn._mean'`)."""
        return self._get_variable(target, Buffer, "buffer")

    def get_extra_state(self):
        """Paddle's hook for extra state in state_dict; like Paddle's base, raises unless overridden."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    # -- traversal -----------------------------------------------------------------
    def named_children(self) -> Iterator[tuple[str, "Layer"]]:
        """Direct sublayers as (name, layer), in definition order."""
        for name, value in _iter_attributes(self):
            if _is_child(value):
                yield name, value
            elif isinstance(value, _CONTAINERS):
                for sub, v in _iter_attributes(value):
                    if _is_child(v):
                        yield f"{name}.{sub}", v

    def children(self) -> Iterator["Layer"]:
        for _, layer in self.named_children():
            yield layer

    def named_sublayers(self, prefix: str = "", include_self: bool = False, layers_set=None):
        """All sublayers, depth first, as (dotted name, layer), each once."""
        seen = set() if layers_set is None else layers_set
        if include_self and id(self) not in seen:
            seen.add(id(self))
            yield prefix, self
        for name, child in self.named_children():
            if id(child) in seen:
                continue
            seen.add(id(child))
            full = f"{prefix}.{name}" if prefix else name
            yield full, child
            if isinstance(child, Layer):
                yield from child.named_sublayers(prefix=full, include_self=False, layers_set=seen)

    def sublayers(self, include_self: bool = False) -> list["Layer"]:
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """PyTorch-style: `named_sublayers(prefix, include_self=True)` (self first, as `('', self)`)."""
        if not remove_duplicate:
            yield from self._named_modules_all(prefix)
            return
        yield from self.named_sublayers(prefix=prefix, include_self=True, layers_set=memo)

    def _named_modules_all(self, prefix: str):
        yield prefix, self
        for name, child in self.named_children():
            full = f"{prefix}.{name}" if prefix else name
            if isinstance(child, Layer):
                yield from child._named_modules_all(full)
            else:
                yield full, child

    def modules(self) -> Iterator["Layer"]:
        """Self and every sublayer, depth first."""
        for _, layer in self.named_modules():
            yield layer

    def _named_variables(self, kind, include_sublayers: bool = True):
        seen: set[int] = set()
        layers = self.named_sublayers(include_self=True) if include_sublayers else [("", self)]
        for prefix, layer in layers:
            for name, value in _iter_attributes(layer):
                if isinstance(value, kind) and id(value) not in seen:
                    seen.add(id(value))
                    yield (f"{prefix}.{name}" if prefix else name), value

    def named_parameters(self, prefix: str = "", include_sublayers: bool = True):
        """(dotted name, nnx.Param) pairs, shared parameters once (each `p.name` is then its name here)."""
        for name, p in self._named_variables(nnx.Param, include_sublayers):
            if not prefix and include_sublayers:
                _param_names.record_listing(self, (p,))
            yield (f"{prefix}.{name}" if prefix else name), p

    def parameters(self, include_sublayers: bool = True) -> list[nnx.Param]:
        """The parameters (nnx.Param variables; read with `p[...]`).

        A plain list, as in Paddle. An optimizer built from it (or from a
        filtered or concatenated copy) names each parameter by its
        `state_dict` name in the Layer that listed it last (`pdx._param_names`):

        >>> import pdx
        >>> gen = pdx.nn.Sequential(pdx.nn.Linear(2, 2))
        >>> opt = pdx.optimizer.Adam(parameters=gen.parameters())
        >>> [name for name, _ in opt.named_parameters()]
        ['0.weight', '0.bias']
        """
        params = [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]
        _param_names.record_listing(self, params)
        return params

    @property
    def _parameters(self) -> dict[str, nnx.Param]:
        """Paddle's `layer._parameters`: this layer's own parameters by attribute name (a fresh dict; code
        reads it, e.g. `layer._parameters["weight_u"].set_value(v)`)."""
        return dict(self.named_parameters(include_sublayers=False))

    @property
    def _buffers(self) -> dict[str, Buffer]:
        """Paddle's `layer._buffers`: this layer's own buffers by attribute name (a fresh dict)."""
        return dict(self.named_buffers(include_sublayers=False))

    @property
    def _sub_layers(self) -> dict[str, "Layer"]:
        """Paddle's `layer._sub_layers`: the direct sublayers by attribute name (a fresh dict)."""
        return dict(self.named_children())

    def named_buffers(self, prefix: str = "", include_sublayers: bool = True):
        for name, b in self._named_variables(Buffer, include_sublayers):
            yield (f"{prefix}.{name}" if prefix else name), b

    def buffers(self, include_sublayers: bool = True) -> list[Buffer]:
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn: Callable[["Layer"], None]) -> "Layer":
        """Call `fn` on every sublayer and then on self (Paddle order)."""
        for layer in self.sublayers():
            fn(layer)
        fn(self)
        return self

    # -- modes -------------------------------------------------------------------------
    def train(self) -> "Layer":
        """Training mode for self and all sublayers (dropout on, batch statistics)."""
        for layer in self.sublayers(include_self=True):
            if isinstance(layer, Layer):
                layer.training = True
        return self

    def eval(self) -> "Layer":
        """Inference mode for self and all sublayers (dropout off, running statistics)."""
        for layer in self.sublayers(include_self=True):
            if isinstance(layer, Layer):
                layer.training = False
        return self

    # -- state ---------------------------------------------------------------------------
    def state_dict(self, include_sublayers: bool = True, structured_name_prefix: str = "") -> dict:
        """Parameters and persistable buffers by dotted name (Paddle layout).

        Returns:
          An OrderedDict name -> jax.Array (the current values).
        """
        return self._state_dict(include_sublayers, structured_name_prefix, non_persistable=False, use_hook=True)

    def _state_dict(self, include_sublayers: bool, prefix: str, *, non_persistable: bool, use_hook: bool, values: bool = True):
        out = collections.OrderedDict()
        kinds = (nnx.Param, Buffer)
        for name, var in self._named_variables(kinds, include_sublayers):
            if not non_persistable and isinstance(var, Buffer) and not var.get_metadata().get("persistable", True):
                continue
            out[prefix + name] = var.get_value() if values else var
        if use_hook:
            # sublayers' hooks first, then this layer's (the order Paddle's recursive build runs them in)
            layers = [l for l in self.sublayers(include_self=False) if isinstance(l, Layer)] if include_sublayers else []
            for layer in [*reversed(layers), self]:
                for hook in layer._state_dict_hooks:
                    result = hook.fn(out)
                    if result is not None:
                        out = result
        return out

    def to_static_state_dict(self, destination=None, include_sublayers: bool = True, structured_name_prefix: str = "",
                             use_hook: bool = True, keep_vars: bool = True) -> dict:
        """`state_dict` with the non-persistable buffers too (Paddle's `to_static_state_dict`).

        `keep_vars=True` (Paddle's default) gives the Variables themselves, else their arrays.
        """
        out = self._state_dict(include_sublayers, structured_name_prefix, non_persistable=True, use_hook=use_hook,
                               values=not keep_vars)
        if destination is not None:
            destination.update(out)
            return destination
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """PyTorch-style `set_state_dict`: with `strict=True` a missing or unexpected key
        raises (after the matching ones are loaded, as in Paddle); returns
        `(missing_keys, unexpected_keys)`."""
        missing, unexpected = self.set_state_dict(state_dict)
        if strict and (missing or unexpected):
            msgs = []
            if missing:
                msgs.append("Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
            if unexpected:
                msgs.append("Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(type(self).__name__, "\n\t".join(msgs)))
        return _IncompatibleKeys(missing, unexpected)

    def sharded_state_dict(self, structured_name_prefix: str = ""):
        """Not available: raises, naming pdx.checkpoint (see the message)."""
        raise NotImplementedError(_SHARDED_STATE_DICT.format(method="sharded_state_dict"))

    def full(self, aoa_config=None, **kwargs):
        """Not available: raises, naming pdx.checkpoint and `state_dict()` (see the message)."""
        raise NotImplementedError(_SHARDED_STATE_DICT.format(method="full"))

    def set_state_dict(self, state_dict, use_structured_name: bool = True):
        """Load values by name; shapes must match, dtypes are cast to the layer's.

        Accepts jax/numpy arrays or paddle tensors (e.g. `paddle.load(...)`).

        Returns:
          (missing_keys, unexpected_keys), as Paddle does.
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"set_state_dict needs a mapping name -> tensor; got {type(state_dict).__name__}")
        # Non-persistable buffers are not saved, so they are never missing (as in Paddle).
        own = {k: v for k, v in self._named_variables((nnx.Param, Buffer))
               if not (isinstance(v, Buffer) and not v.get_metadata().get("persistable", True))}
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        updates = []
        for name, var in own.items():
            if name not in state_dict:
                continue
            value = _to_array(state_dict[name], name=name)
            current = var.get_value()
            if tuple(value.shape) != tuple(current.shape):
                raise ValueError(
                    f"set_state_dict: {name!r} has shape {tuple(value.shape)} in the given state_dict "
                    f"but {tuple(current.shape)} in {type(self).__name__}; nothing was loaded"
                )
            updates.append((var, value.astype(current.dtype)))
        for var, value in updates:  # all shapes checked first: a bad dict loads nothing
            var.set_value(value)
        return missing, unexpected

    load_dict = set_state_dict
    set_dict = set_state_dict

    def to(self, device=None, dtype=None, blocking=None) -> "Layer":
        """Cast floating parameters and buffers to `dtype` (device placement is
        JAX's: use `jax.device_put` or pdx.parallel shardings)."""
        if dtype is not None:
            dt = convert_dtype(dtype)
            for _, var in self._named_variables((nnx.Param, Buffer)):
                value = var.get_value()
                if jnp.issubdtype(value.dtype, jnp.floating):
                    var.set_value(value.astype(dt))
            for layer in self.sublayers(include_self=True):
                if isinstance(layer, Layer):
                    layer._dtype = dt
        return self

    def astype(self, dtype) -> "Layer":
        return self.to(dtype=dtype)

    def _cast(self, dtype, *, floating_only: bool, excluded_layers=()) -> "Layer":
        dt = convert_dtype(dtype)
        excluded = tuple(excluded_layers)
        for layer in self.sublayers(include_self=True):
            if not isinstance(layer, Layer) or type(layer) in excluded:
                continue
            for _, var in layer._named_variables((nnx.Param, Buffer), include_sublayers=False):
                value = var.get_value()
                if not floating_only or jnp.issubdtype(value.dtype, jnp.floating):
                    var.set_value(value.astype(dt))
            if jnp.issubdtype(dt, jnp.floating):
                layer._dtype = dt
        return self

    def _low_precision(self, dtype, excluded_layers) -> "Layer":
        from pdx.nn import BatchNorm

        if excluded_layers is None:
            excluded_layers = [BatchNorm]
        elif isinstance(excluded_layers, type):
            excluded_layers = [excluded_layers]
        elif not isinstance(excluded_layers, (list, tuple)):
            raise TypeError(f"excluded_layers should be type nn.Layer or list, but got {type(excluded_layers).__name__}.")
        return self._cast(dtype, floating_only=True, excluded_layers=excluded_layers)

    def float16(self, excluded_layers=None) -> "Layer":
        """Cast floating parameters and buffers to float16, except layers whose type is in
        `excluded_layers` (default: `nn.BatchNorm`, as in Paddle)."""
        return self._low_precision("float16", excluded_layers)

    def bfloat16(self, excluded_layers=None) -> "Layer":
        """Cast floating parameters and buffers to bfloat16 (`excluded_layers` as in `float16`)."""
        return self._low_precision("bfloat16", excluded_layers)

    def half(self) -> "Layer":
        """`float16()` with no exclusions."""
        return self._cast("float16", floating_only=True)

    def double(self) -> "Layer":
        """Cast floating parameters and buffers to float64 (float32 unless `jax_enable_x64`)."""
        return self._cast("float64", floating_only=True)

    def type(self, dst_type) -> "Layer":
        """Cast every parameter and buffer, integer ones included, to `dst_type`."""
        try:
            convert_dtype(dst_type)
        except (TypeError, ValueError) as e:
            raise ValueError(f"Layer.type: dst_type={dst_type!r} is not a dtype; use e.g. 'float16', 'float32', 'int32'") from e
        return self._cast(dst_type, floating_only=False)

    def cpu(self) -> "Layer":
        """Returns self: device placement is JAX's (`jax.device_put`, pdx.parallel shardings)."""
        return self

    def cuda(self, device=None) -> "Layer":
        """Returns self: device placement is JAX's (`jax.device_put`, pdx.parallel shardings)."""
        return self

    def xpu(self, device=None) -> "Layer":
        """Returns self: device placement is JAX's (`jax.device_put`, pdx.parallel shardings)."""
        return self

    def requires_grad_(self, requires_grad: bool = True) -> "Layer":
        """Set every parameter's `stop_gradient` to `not requires_grad` (freeze / unfreeze)."""
        for p in self.parameters():
            p.stop_gradient = not requires_grad
        return self

    def float(self) -> "Layer":
        return self.to(dtype="float32")

    def full_name(self) -> str:
        return self._full_name or type(self).__name__.lower()

    def clear_gradients(self, set_to_zero: bool = True) -> None:
        """No-op kept for ported Paddle loops: pdx never stores gradients on
        parameters (they are returned by `pdx.grad`)."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """No-op kept for ported loops, as `clear_gradients`."""

    # -- repr ------------------------------------------------------------------------------
    def __str__(self) -> str:
        return self.__repr__()

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = list(self.named_children())
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not children:
            return head + ")"
        lines = [head]
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"
