"""HybridConfig: Paddle's hybrid_configs as one named device mesh plus logical-axis rules."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import jax
import numpy as np
from jax.sharding import Mesh

from pdx.nn import axes

# Paddle's fleet order: outermost (slowest, across nodes) to innermost (fastest, within a node).
_DEFAULT_ORDER = ("dp", "pp", "sharding", "ep", "sep", "mp")
# Attention under context parallelism (sep_degree > 1): see pdx.parallel.context_attention.
CONTEXT_PARALLEL_IMPLS = ("ring", "allgather")
_DEGREE_OF_AXIS = {"dp": "dp_degree", "pp": "pp_degree", "sharding": "sharding_degree", "ep": "ep_degree",
                   "sep": "sep_degree", "mp": "mp_degree"}

# Logical axis name -> mesh axis (or tuple of mesh axes, or None = replicated). ZeRO/FSDP
# sharding over the "sharding" axis is not a rule: it is added per array by the
# sharding stage (see _shard.zero_spec), so the model never mentions it.
_DEFAULT_RULES = {
    # Expert parallelism: each "ep" rank takes its own tokens and holds its own experts
    # (tokens reach their experts by all-to-all, inserted by the compiler).
    axes.BATCH: ("dp", "sharding", "ep"),
    axes.EXPERT: "ep",
    axes.SEQ: "sep",
    axes.EMBED: None,
    axes.MLP: "mp",
    axes.HEADS: "mp",
    axes.KV_HEADS: "mp",
    axes.HEAD_DIM: None,
    axes.VOCAB: "mp",
    axes.NORM: None,
    axes.CONV_IN: None,
    axes.CONV_OUT: None,
    # A LayerStack's layer dimension: with pp_degree > 1 each stage holds its own layers
    # (contiguous blocks, GPipe's chunks); with pp_degree == 1 the size-1 axis is dropped.
    axes.LAYERS: "pp",
    axes.STAGE: "pp",
}


class _Rules(Mapping):
    """A read-only, hashable copy of a config's rule overrides, so a HybridConfig is hashable
    (the mesh scope of `use_mesh` is part of every compiled-function cache key)."""

    __slots__ = ("_items", "_hash")

    def __init__(self, rules: Mapping):
        self._items = dict(rules)
        self._hash = hash(frozenset(self._items.items()))

    def __getitem__(self, name):
        return self._items[name]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other.items())

    def __repr__(self) -> str:
        return repr(self._items)


def default_rules() -> dict:
    """The default logical-axis rules: logical name -> mesh axis (None = replicated).

    Example:
      >>> import pdx
      >>> pdx.parallel.default_rules()["mlp"]
      'mp'
    """
    return dict(_DEFAULT_RULES)


@dataclasses.dataclass(frozen=True)
class HybridConfig:
    """Paddle's `hybrid_configs` as a device mesh: dp x pp x sharding x ep x sep x mp.

    Every degree multiplies into the number of devices of all processes
    (`jax.device_count()`); `dp_degree=-1` takes whatever the others leave.
    The mesh has one axis per parallelism ("dp", "pp", "sharding", "ep",
    "sep", "mp") laid out in `order` (outermost first, Paddle's default), so the
    tensor-parallel group is made of neighbouring devices.

    Args:
      dp_degree: data-parallel replicas (-1: the devices left over).
      sharding_degree: ZeRO group size; the batch is split over it too.
      sharding_stage: 1 = optimizer state sharded over the ZeRO group,
        2 = + gradients reduce-scattered, 3 = + parameters sharded (FSDP).
      mp_degree: tensor (model) parallel group size: "mlp", "heads",
        "kv_heads" and "vocab" dimensions are split over it.
      pp_degree: pipeline stages ("stage" dimension).
      sep_degree: sequence/context parallel group size ("seq" dimension).
      ep_degree: expert-parallel group size: mixture-of-experts weights are
        split over it by their "expert" dimension, and the batch too.
      order: mesh axes from outermost to innermost.
      rules: overrides of the logical-axis rules, e.g. `{"embed": "mp"}`.
      accumulate_steps: pipeline microbatches per step (Paddle's
        `pp_configs.accumulate_steps`); the batch is split into this many.
      virtual_pp_degree: layer chunks per pipeline stage; > 1 runs the
        interleaved (circular) schedule, which shrinks the bubble.
      context_parallel: attention when sep_degree > 1: "ring" (K/V blocks
        passed round the sep ring, causal work load-balanced) or "allgather"
        (each device gathers the whole K/V); see `context_attention`.
      sequence_parallel: Megatron-style sequence parallelism in the tensor
        parallel group: activations between blocks (and the norms on them)
        are split over "mp" along the sequence too ("seq" -> ("sep", "mp")),
        so XLA all-gathers them before column-parallel layers and
        reduce-scatters after row-parallel ones.

    Example:
      >>> import pdx
      >>> cfg = pdx.parallel.HybridConfig(dp_degree=2, mp_degree=4)
      >>> dict(cfg.mesh().shape)
      {'dp': 2, 'pp': 1, 'sharding': 1, 'ep': 1, 'sep': 1, 'mp': 4}
    """

    dp_degree: int = -1
    sharding_degree: int = 1
    sharding_stage: int = 1
    mp_degree: int = 1
    pp_degree: int = 1
    sep_degree: int = 1
    ep_degree: int = 1
    order: tuple[str, ...] = _DEFAULT_ORDER
    rules: Mapping[str, object] | None = None
    accumulate_steps: int = 1
    virtual_pp_degree: int = 1
    context_parallel: str = "ring"
    sequence_parallel: bool = False

    def __post_init__(self):
        for field in ("sharding_degree", "mp_degree", "pp_degree", "sep_degree", "ep_degree", "accumulate_steps",
                      "virtual_pp_degree"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"HybridConfig: {field} must be a positive int; got {value!r}")
        if not isinstance(self.dp_degree, int) or (self.dp_degree < 1 and self.dp_degree != -1):
            raise ValueError(f"HybridConfig: dp_degree must be a positive int or -1 (the devices left over); got {self.dp_degree!r}")
        if self.sharding_stage not in (1, 2, 3):
            raise ValueError(f"HybridConfig: sharding_stage must be 1, 2 or 3; got {self.sharding_stage!r}")
        if self.context_parallel not in CONTEXT_PARALLEL_IMPLS:
            raise ValueError(f"HybridConfig: context_parallel must be one of {CONTEXT_PARALLEL_IMPLS}; "
                             f"got {self.context_parallel!r}")
        order = tuple(self.order)
        if sorted(order) != sorted(_DEFAULT_ORDER):
            raise ValueError(f"HybridConfig: order must be a permutation of {list(_DEFAULT_ORDER)}; got {list(order)}")
        object.__setattr__(self, "order", order)
        if self.rules is not None:
            unknown = [name for name, target in self.rules.items() if not _valid_target(target)]
            if unknown:
                raise ValueError(f"HybridConfig: rules map {unknown} to something that is not a mesh axis "
                                 f"(one of {list(_DEFAULT_ORDER)}, a tuple of them, or None)")
            object.__setattr__(self, "rules", _Rules(self.rules))

    def degrees(self, device_count: int | None = None) -> dict[str, int]:
        """Mesh axis -> size, with `dp_degree=-1` resolved against `device_count`."""
        n = jax.device_count() if device_count is None else device_count
        others = self.sharding_degree * self.mp_degree * self.pp_degree * self.sep_degree * self.ep_degree
        dp = self.dp_degree
        if dp == -1:
            if n % others:
                raise ValueError(f"HybridConfig: sharding*mp*pp*sep*ep = {others} does not divide the {n} devices; "
                                 "pick degrees whose product divides the device count")
            dp = n // others
        if dp * others != n:
            raise ValueError(f"HybridConfig: dp*sharding*mp*pp*sep*ep = {dp}*{self.sharding_degree}*{self.mp_degree}*"
                             f"{self.pp_degree}*{self.sep_degree}*{self.ep_degree} = {dp * others}, but there are "
                             f"{n} devices; make the product equal the device count (or set dp_degree=-1)")
        sizes = {"dp": dp, "pp": self.pp_degree, "sharding": self.sharding_degree, "ep": self.ep_degree,
                 "sep": self.sep_degree, "mp": self.mp_degree}
        return {axis: sizes[axis] for axis in self.order}

    def mesh(self, devices=None) -> Mesh:
        """The `jax.sharding.Mesh` over `devices` (default: all devices of all processes)."""
        devices = list(jax.devices() if devices is None else devices)
        sizes = self.degrees(len(devices))
        grid = np.array(devices, dtype=object).reshape(tuple(sizes.values()))
        return Mesh(grid, tuple(sizes))

    def axis_rules(self) -> dict:
        """Logical axis name -> mesh axis for this config (defaults plus overrides)."""
        rules = default_rules()
        rules.update(self.rules or {})
        seq = rules.get(axes.SEQ)
        if self.sequence_parallel and seq is not None:
            seq = (seq,) if isinstance(seq, str) else tuple(seq)
            rules[axes.SEQ] = seq + (("mp",) if "mp" not in seq else ())
        return rules

    @property
    def world_size(self) -> int:
        """Devices this config spans."""
        return math.prod(self.degrees().values())


def _valid_target(target) -> bool:
    if target is None or target in _DEFAULT_ORDER:
        return True
    return isinstance(target, tuple) and all(t in _DEFAULT_ORDER for t in target)
