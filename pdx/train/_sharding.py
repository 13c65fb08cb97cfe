"""Where each leaf of a `TrainState` lives on a mesh, computed once from logical names.

`state_shardings(state, config)` gives a pytree shaped like the state whose
leaves are `NamedSharding`s: parameters and buffers follow their logical
axis names through the config's rules (ZeRO stage 3 adds the "sharding"
axis to parameters); optimizer state shaped like a parameter follows that
parameter plus the "sharding" axis (stage >= 1); counters, the PRNG key, the
learning rate and the loss scale are replicated. The same rules as
`pdx.parallel.shard`, applied to the state's arrays instead of Variables, so
a state and a live model placed by either agree.

`jit_step(step, shardings)` compiles a `make_step` step with those
shardings as `in_shardings` / `out_shardings` and the state donated: one
placement decision, made before the first call, that XLA keeps.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from pdx.parallel import HybridConfig, ZeroPlacement, logical_to_spec, zero_placement

__all__ = ["state_shardings", "jit_step", "place_state"]


def _opt_param(path, by_opt_name: dict):
    """The model parameter name a per-parameter optimizer-state leaf belongs to (or None)."""
    for key in reversed(path):
        name = getattr(key, "key", None)
        if isinstance(name, str) and name in by_opt_name:
            return by_opt_name[name]
    return None


def state_shardings(state, config: HybridConfig, mesh: Mesh | None = None):
    """A pytree like `state` (a `TrainState`) of the `NamedSharding` of each leaf.

    Args:
      state: a TrainState (arrays or `jax.ShapeDtypeStruct`s; only shapes are read).
      config: the `pdx.parallel.HybridConfig` whose rules map logical names to mesh axes.
      mesh: the mesh (default `config.mesh()`).

    Returns:
      The shardings, usable as `jax.jit(in_shardings=...)`, by `jax.device_put`
      and by `CheckpointManager.restore(shardings=...)`.

    Example:
      >>> import jax, pdx
      >>> net = pdx.nn.Linear(8, 16)
      >>> state = pdx.TrainState.create(net, pdx.optimizer.Adam(1e-3, parameters=net))
      >>> cfg = pdx.parallel.HybridConfig(mp_degree=2)
      >>> shardings = pdx.train.state_shardings(state, cfg, cfg.mesh(jax.devices()[:2]))
      >>> tuple(shardings.params["weight"].spec)
      (None, 'mp')
    """
    if not isinstance(config, HybridConfig):
        raise TypeError(f"state_shardings: config must be a pdx.parallel.HybridConfig; got {type(config).__name__}")
    mesh = config.mesh() if mesh is None else mesh
    rules, stage = config.axis_rules(), config.sharding_stage
    axes = dict(state.spec.axes)
    replicated = NamedSharding(mesh, PartitionSpec())

    def zero_of(name, shape) -> ZeroPlacement:
        names = axes.get(name)
        return zero_placement(logical_to_spec(names, shape, mesh, rules), shape, mesh, names, stage=stage)

    params = {n: NamedSharding(mesh, zero_of(n, tuple(v.shape)).param) for n, v in state.params.items()}
    buffers = {n: NamedSharding(mesh, logical_to_spec(axes.get(n), tuple(v.shape), mesh, rules))
               for n, v in state.buffers.items()}
    by_opt_name = {o: m for m, o in state.spec.opt_names}

    def opt_leaf(path, leaf):
        name = _opt_param(path, by_opt_name)
        if name is not None and tuple(leaf.shape) == tuple(state.params[name].shape):
            return NamedSharding(mesh, zero_of(name, tuple(leaf.shape)).state)  # moments and masters
        return replicated

    opt_state = jax.tree_util.tree_map_with_path(opt_leaf, state.opt_state)
    return state.replace(params=params, buffers=buffers, opt_state=opt_state,
                         **{f: jax.tree.map(lambda _: replicated, getattr(state, f))
                            for f in ("rng", "step", "loss_scale", "lr", "nonfinite_steps")})


def place_state(state, shardings):
    """`state` moved onto `shardings` (from `state_shardings`); a multi-process
    mesh fills each process's shards from its (identical) host copy."""

    def put(x, s):
        if s.is_fully_addressable:
            return jax.device_put(x, s)
        host = jax.device_get(x)
        return jax.make_array_from_callback(host.shape, s, lambda index: host[index])

    return jax.tree.map(put, state, shardings)


def jit_step(step: Callable, shardings, *, batch=None, metrics=None, donate: bool = True) -> Callable:
    """`jax.jit(step)` with the state's shardings fixed on the way in and out.

    Args:
      step: `(state, batch) -> (state, metrics)` from `make_step`.
      shardings: `state_shardings(state, config)`.
      batch: the batch's sharding (a Sharding or a pytree of them), or None
        to take the batch as it comes.
      metrics: the metrics' sharding (e.g. replicated, so every process can
        read them), or None to let XLA choose.
      donate: donate the input state's buffers to the output state.

    Returns:
      The compiled step.
    """
    return jax.jit(step, in_shardings=(shardings, batch), out_shardings=(shardings, metrics),
                   donate_argnums=(0,) if donate else ())
