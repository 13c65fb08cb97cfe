"""Sharding facts recorded on nnx Variables (logical axis names, placement), and the one rule
from logical names to mesh axes (`logical_to_spec`, `constrain` under the active `use_mesh`).

Two facts travel with a Variable as nnx metadata, and this module is the only
code that reads or writes either:

- its **logical axis names** (`("embed", "mlp")`), declared by the layer that
  creates it and stored as flax's `out_sharding` metadata (with
  `eager_sharding=False`: flax must not place the value itself);
- its **placement**, a `Placement` chosen by `pdx.parallel.shard` for a mesh:
  where the value lives and, for a parameter, where its gradient is reduced
  to. Constraining new values to it inside a compiled step is what keeps
  ZeRO state sharded and turns the gradient all-reduce into a reduce-scatter.

Example:
  >>> import jax, pdx
  >>> from pdx import _placement
  >>> net = pdx.nn.Linear(8, 16)
  >>> _placement.logical_axes(net.weight)
  ('embed', 'mlp')
  >>> _ = pdx.parallel.shard(net, pdx.parallel.HybridConfig(mp_degree=2))
  >>> _placement.placement_of(net.weight).value.spec
  PartitionSpec(None, 'mp')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import math

import jax
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from pdx import _trace_context

__all__ = [
    "Placement",
    "active_mesh",
    "axes_metadata",
    "constrain",
    "constrain_grad",
    "constrain_value",
    "drop_placement",
    "logical_axes",
    "logical_to_spec",
    "place",
    "placement_of",
    "set_logical_axes",
]

_AXES = "out_sharding"      # flax's name for a Variable's logical axis names
_PLACEMENT = "pdx_placement"


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a Variable lives on a mesh.

    Attributes:
      value: the sharding of the Variable's value.
      grad: the sharding its gradient is reduced to (parameters only; None:
        no constraint on the gradient).
    """

    value: NamedSharding
    grad: NamedSharding | None = None

    def __post_init__(self):
        for name in ("value", "grad"):
            s = getattr(self, name)
            if not (s is None and name == "grad") and not isinstance(s, NamedSharding):
                raise TypeError(f"Placement.{name} must be a jax.sharding.NamedSharding; got {s!r}")


# -- logical axis names -----------------------------------------------------------------------------
def axes_metadata(axis_names: Sequence | None) -> dict:
    """Variable keyword arguments recording `axis_names` (none for None).

    Example: `nnx.Param(value, **axes_metadata(("embed", "mlp")))`.
    """
    if axis_names is None:
        return {}
    return {_AXES: tuple(axis_names), "eager_sharding": False}


def logical_axes(var) -> tuple | None:
    """The Variable's logical axis names, or None when it declares none.

    A plain array kept as a Layer attribute (Paddle's `self.pe = paddle.to_tensor(table)`)
    is a leaf of the model's state without a Variable around it: it declares none.
    """
    if not isinstance(var, nnx.Variable):
        return None
    names = var.get_metadata(_AXES, None)
    return tuple(names) if names is not None else None


def set_logical_axes(var: nnx.Variable, axis_names: Sequence | None) -> None:
    """Replace (None: remove) the Variable's logical axis names."""
    if axis_names is None:
        if var.has_metadata(_AXES):
            var.del_metadata(_AXES)
    else:
        var.set_metadata(_AXES, tuple(axis_names))


# -- placement ----------------------------------------------------------------------------------------
def place(var: nnx.Variable, placement: Placement) -> None:
    """Record `placement` on `var` (the caller moves the value there)."""
    if not isinstance(placement, Placement):
        raise TypeError(f"place: expected a Placement; got {type(placement).__name__}")
    var.set_metadata(_PLACEMENT, placement)


def placement_of(var: nnx.Variable) -> Placement | None:
    """The placement recorded on `var`, or None."""
    return var.get_metadata(_PLACEMENT, None)


def drop_placement(var: nnx.Variable) -> None:
    """Forget `var`'s placement (a slice or a stacked copy of it lives elsewhere)."""
    if var.has_metadata(_PLACEMENT):
        var.del_metadata(_PLACEMENT)


def constrain_value(var: nnx.Variable, value):
    """`value` (a new value of `var`) constrained to `var`'s placement; unchanged if none."""
    placement = var.get_metadata(_PLACEMENT, None)
    if placement is None:
        return value
    return jax.lax.with_sharding_constraint(value, placement.value)


def constrain_grad(var: nnx.Variable, grad):
    """`grad` (the gradient of parameter `var`) constrained to its gradient placement; unchanged if none."""
    placement = var.get_metadata(_PLACEMENT, None)
    if placement is None or placement.grad is None:
        return grad
    return jax.lax.with_sharding_constraint(grad, placement.grad)


# ---------------------------------------------------------------------------- logical names -> mesh axes
# The one rule (pdx.parallel re-exports it); layers constrain activations with it and build on no package above.

def logical_to_spec(logical_names, shape, mesh: Mesh, rules) -> PartitionSpec:
    """PartitionSpec for an array of `shape` whose dims have `logical_names`.

    A mesh axis is used at most once per array (the first dimension that asks
    for it wins), size-1 mesh axes are dropped, and a dimension whose size is
    not divisible by its mesh axes stays replicated.

    Example:
      >>> import jax, pdx
      >>> mesh = pdx.parallel.HybridConfig(mp_degree=2).mesh(jax.devices()[:2])
      >>> pdx.parallel.logical_to_spec(("embed", "mlp"), (8, 16), mesh, pdx.parallel.default_rules())
      PartitionSpec(None, 'mp')
    """
    names = tuple(logical_names) if logical_names is not None else (None,) * len(shape)
    if len(names) != len(shape):
        raise ValueError(f"logical names {names} do not match the array's rank {len(shape)} (shape {tuple(shape)})")
    used: set[str] = set()
    out = []
    for size, name in zip(shape, names):
        target = rules.get(name) if name is not None else None
        wanted = (target,) if isinstance(target, str) else tuple(target or ())
        kept = [a for a in wanted if a not in used and mesh.shape.get(a, 1) > 1]
        while kept and size % math.prod(mesh.shape[a] for a in kept):
            kept.pop()
        used.update(kept)
        out.append(None if not kept else kept[0] if len(kept) == 1 else tuple(kept))
    return PartitionSpec(*out)


def active_mesh():
    """The `ActiveMesh` (mesh, config) of the innermost `use_mesh`, or None outside one."""
    return _trace_context.PARALLEL_MESH.get()


def constrain(x, logical_names):
    """Constrain an activation's sharding by logical names (no-op outside `use_mesh`).

    Example: `h = pdx.parallel.constrain(h, ("batch", "seq", "embed"))`.
    """
    active = _trace_context.PARALLEL_MESH.get()
    if active is None:
        return x
    mesh, config = active
    spec = logical_to_spec(logical_names, x.shape, mesh, config.axis_rules())
    return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))
