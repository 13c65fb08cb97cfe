"""Pipeline parallelism: GPipe and interleaved (circular) schedules over stage-stacked layers.

The layers' weights are stacked as (virtual, stage, layers-per-chunk, ...)
with the stage dimension on the "pp" mesh axis; a buffer of one microbatch
activation per stage rotates through the stages (`jnp.roll` on the
pp-sharded dimension, which XLA lowers to a collective-permute). Each
iteration every stage runs its chunk of layers on its slot; a microbatch
goes round the ring `virtual` times. Autodiff of the schedule is the
backward pipeline.

Chunk c = r * stages + s of the layers (r = repeat, s = stage) runs on stage
s in repeat r. Microbatches enter in groups of `stages`; stage 0 at time u
works on microbatch (u // (stages*virtual)) * stages + u % stages in repeat
(u % (stages*virtual)) // stages, and stage s does at time t what stage 0 did
at t - s. Steps: microbatches * virtual + stages - 1; the bubble is
(stages - 1) / steps.
"""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec

from pdx._graph import Graph, _set_raw, run_with_values

_log = logging.getLogger("pdx.parallel")


def bubble_fraction(num_stages: int, num_microbatches: int, virtual_stages: int = 1) -> float:
    """Idle fraction of a pipeline schedule: (stages - 1) / (microbatches * virtual + stages - 1).

    Example:
      >>> import pdx
      >>> round(pdx.parallel.bubble_fraction(4, 8), 3), round(pdx.parallel.bubble_fraction(4, 8, 2), 3)
      (0.273, 0.158)
    """
    return (num_stages - 1) / (num_microbatches * virtual_stages + num_stages - 1)


def _active():
    from pdx.parallel._shard import _MESH_STACK

    return _MESH_STACK[-1] if _MESH_STACK else (None, None)


def run_layers(layers, x, *args, scan: bool = False, policy=None):
    """`for layer in layers: x = layer(x, *args)`, laid out for the active HybridConfig.

    Under `pdx.parallel.use_mesh(config)` with `config.pp_degree > 1` this is
    the pipeline schedule (`accumulate_steps` microbatches,
    `virtual_pp_degree` chunks per stage); otherwise one `lax.scan`
    (`scan=True`) or a Python loop, each layer optionally recomputed
    (`policy`). Models call this so the same code runs under any layout.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> blocks = pdx.nn.LayerList([pdx.nn.Linear(4, 4) for _ in range(2)])
      >>> pdx.parallel.run_layers(blocks, jnp.ones((2, 4))).shape
      (2, 4)
    """
    from pdx.nn import recompute, scan_layers

    mesh, config = _active()
    if config is not None and config.pp_degree > 1:
        return pipeline(layers, x, *args, num_stages=config.pp_degree, num_microbatches=config.accumulate_steps,
                        virtual_stages=config.virtual_pp_degree, policy=policy, mesh=mesh)
    if scan:
        return scan_layers(layers, x, *args, policy=policy)
    for layer in layers:
        x = (recompute(layer, policy=policy) if policy else layer)(x, *args)
    return x


def _stage_spec(var, mesh, extra_dims: int):
    """(virtual, stage, chunk, *the parameter's own placement)."""
    own = var.get_metadata().get("pdx_sharding")
    rest = tuple(own.spec) if own is not None else ()
    return NamedSharding(mesh, PartitionSpec(None, "pp", None, *rest)) if extra_dims == 3 else None


def pipeline(layers, x, *args, num_stages: int, num_microbatches: int, virtual_stages: int = 1, policy=None,
             mesh=None):
    """Run `x` through identical `layers` as a pipeline over `num_stages` stages.

    Args:
      layers: structurally identical Layers, `len(layers)` divisible by
        num_stages * virtual_stages.
      x: activations, batch first; the batch splits into num_microbatches.
      *args: inputs every layer receives unchanged (shared by all microbatches).
      num_stages: pipeline stages (the mesh's "pp" size).
      num_microbatches: microbatches; a multiple of num_stages when virtual_stages > 1.
      virtual_stages: layer chunks per stage (interleaved schedule when > 1).
      policy: optional recompute policy for each stage's chunk.
      mesh: the mesh whose "pp" axis holds the stages (default: from `use_mesh`).

    Returns:
      The output of the last layer, shaped like x.

    Example: inside `with pdx.parallel.use_mesh(HybridConfig(pp_degree=2, accumulate_steps=4)):`
    a model calling `pdx.parallel.run_layers(self.layers, h)` runs this schedule.
    """
    from pdx.nn._recompute import _policy

    layers = list(layers)
    n, p, v, m = len(layers), num_stages, virtual_stages, num_microbatches
    if n % (p * v):
        raise ValueError(f"pipeline: {n} layers cannot be split into {p} stages x {v} virtual stages; "
                         "make the layer count a multiple of pp_degree * virtual_pp_degree")
    if x.shape[0] % m:
        raise ValueError(f"pipeline: batch {x.shape[0]} is not divisible into accumulate_steps={m} microbatches")
    if v > 1 and m % p:
        raise ValueError(f"pipeline: the interleaved schedule needs accumulate_steps ({m}) to be a multiple of "
                         f"pp_degree ({p})")
    if mesh is None:
        mesh = _active()[0]
    chunk = n // (p * v)
    graphs = [Graph([layer]) for layer in layers]
    first = nnx.graphdef(layers[0])
    if any(nnx.graphdef(layer) != first for layer in layers[1:]):
        raise ValueError("pipeline: all layers must have the same structure (classes, shapes, settings)")
    template, graph = layers[0], graphs[0]
    saved = graph.values()
    stacked = []
    for i, values in enumerate(zip(*(g.values() for g in graphs))):
        w = jnp.stack(values).reshape((v, p, chunk) + values[0].shape)
        spec = _stage_spec(graph.variables[i], mesh, 3) if mesh is not None else None
        stacked.append(jax.lax.with_sharding_constraint(w, spec) if spec is not None else w)
    steps = m * v + p - 1
    _log.info("pipeline: %d stages x %d virtual, %d microbatches, %d steps, bubble %.1f%%",
              p, v, m, steps, 100 * bubble_fraction(p, m, v))

    def stage(values, h):  # values: per variable (chunk, ...); h: (micro, ...)
        def body(carry, layer_values):
            out, _ = run_with_values(graph, layer_values, template, carry, *args)
            return out, None

        return jax.lax.scan(body, h, values)[0]

    if policy is not None:
        stage = jax.checkpoint(stage, policy=_policy(policy))
    micro = x.reshape((m, x.shape[0] // m) + x.shape[1:])
    buf_spec = NamedSharding(mesh, PartitionSpec("pp")) if mesh is not None else None
    stage_ids = jnp.arange(p)

    def step(carry, t):
        buf, outs = carry                                   # (p, micro...), (m, micro...)
        u = t - stage_ids
        group, within = u // (p * v), u % (p * v)
        repeat, slot = within // p, within % p
        mb = group * p + slot
        valid = (u >= 0) & (mb < m)
        fresh = micro[jnp.clip(mb[0], 0, m - 1)]
        buf = buf.at[0].set(jnp.where(repeat[0] == 0, fresh, buf[0]))
        weights = [jax.vmap(lambda w, r: w[r], in_axes=(1, 0))(w, jnp.clip(repeat, 0, v - 1)) for w in stacked]
        out = jax.vmap(stage)(weights, buf)
        done = valid[p - 1] & (repeat[p - 1] == v - 1)
        k = jnp.clip(mb[p - 1], 0, m - 1)
        outs = outs.at[k].set(jnp.where(done, out[p - 1], outs[k]))
        buf = jnp.roll(out, 1, axis=0)                      # stage s -> s + 1; the last stage -> stage 0
        if buf_spec is not None:
            buf = jax.lax.with_sharding_constraint(buf, buf_spec)
        return (buf, outs), None

    buf0 = jnp.zeros((p,) + micro.shape[1:], x.dtype)
    try:
        (_, outs), _ = jax.lax.scan(step, (buf0, jnp.zeros_like(micro)), jnp.arange(steps))
    finally:
        for var, value in zip(graph.variables, saved):
            _set_raw(var, value)
    return outs.reshape(x.shape)
