"""Pipeline parallelism: GPipe and interleaved (circular) schedules over stage-stacked layers.

The layers' weights (a `pdx.nn.LayerStack`'s as stored, a LayerList's
stacked per call) are viewed as (virtual, stage, layers-per-chunk, ...)
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
from jax.sharding import NamedSharding, PartitionSpec

from pdx import _placement
from pdx._graph import Graph, run_with_values

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
    """(mesh, config) of the innermost `use_mesh`, or (None, None)."""
    from pdx.parallel._shard import active_mesh

    active = active_mesh()
    return (None, None) if active is None else (active.mesh, active.config)


def run_layers(layers, x, *args, scan: bool = False, policy=None):
    """`for layer in layers: x = layer(x, *args)`, laid out for the active HybridConfig.

    Under `pdx.parallel.use_mesh(config)` with `config.pp_degree > 1` this is
    the pipeline schedule (`accumulate_steps` microbatches,
    `virtual_pp_degree` chunks per stage); otherwise one `lax.scan` (a
    `pdx.nn.LayerStack`, or `scan=True`) or a Python loop, each layer
    optionally recomputed (`policy`). Models call this so the same code runs
    under any layout.

    Args:
      layers: a `pdx.nn.LayerStack` (weights stored stacked: nothing is copied
        per call) or a LayerList / list of Layers (stacked per call when
        scanned or pipelined).
      x: the activation carried from layer to layer.
      *args: inputs every layer receives unchanged.
      scan: scan a LayerList instead of looping over it (a LayerStack always scans).
      policy: recompute policy per layer (see `pdx.nn.recompute`); None: none
        (a LayerStack's own policy).

    Returns:
      The last layer's output.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> blocks = pdx.nn.LayerList([pdx.nn.Linear(4, 4) for _ in range(2)])
      >>> pdx.parallel.run_layers(blocks, jnp.ones((2, 4))).shape
      (2, 4)
    """
    from pdx.nn import LayerStack, recompute, scan_layers

    mesh, config = _active()
    if config is not None and config.pp_degree > 1:
        return pipeline(layers, x, *args, num_stages=config.pp_degree, num_microbatches=config.accumulate_steps,
                        virtual_stages=config.virtual_pp_degree, policy=policy, mesh=mesh)
    if scan or isinstance(layers, LayerStack):
        return scan_layers(layers, x, *args, policy=policy)
    for layer in layers:
        x = (recompute(layer, policy=policy) if policy else layer)(x, *args)
    return x


def _stage_sharding(var, mesh, stored: bool):
    """(virtual, stage, chunk, *the parameter's own placement) for a weight reshaped for the schedule."""
    own = _placement.placement_of(var)
    rest = tuple(own.value.spec) if own is not None else ()
    if stored:  # a LayerStack's placement starts with its layer dimension
        rest = rest[1:]
    return NamedSharding(mesh, PartitionSpec(None, "pp", None, *rest))


def _buffer_sharding(shape, mesh):
    """The rotating buffer (stage, microbatch rows, ...): stages on "pp", rows on the data-parallel axes.

    Without the row split every data-parallel replica would run the whole
    microbatch through its stage.
    """
    from pdx.nn import axes
    from pdx.parallel._config import default_rules
    from pdx.parallel._shard import logical_to_spec

    if mesh is None:
        return None
    config = _active()[1]
    rules = config.axis_rules() if config is not None else default_rules()
    names = (axes.STAGE, axes.BATCH) + (None,) * (len(shape) - 2)
    return NamedSharding(mesh, logical_to_spec(names, shape, mesh, rules))


def _stacked_weights(layers):
    """(template layer, its Graph, per-Variable (N, ...) values, stored?) of a LayerStack or a list of layers."""
    from pdx.nn import LayerStack
    from pdx._graph import check_identical

    if isinstance(layers, LayerStack):
        graph = Graph([layers.block])
        return layers.block, graph, graph.values(), True
    layers = list(layers)
    if not layers:
        raise ValueError("pipeline: got no layers")
    check_identical(layers, "pipeline")
    graphs = [Graph([layer]) for layer in layers]
    return layers[0], graphs[0], [jnp.stack(vals) for vals in zip(*(g.values() for g in graphs))], False


def pipeline(layers, x, *args, num_stages: int, num_microbatches: int, virtual_stages: int = 1, policy=None,
             mesh=None):
    """Run `x` through identical `layers` as a pipeline over `num_stages` stages.

    A `pdx.nn.LayerStack` is used as stored: placed by `pdx.parallel.shard`,
    its layer dimension sits on the "pp" mesh axis (rule `layers -> pp`), so
    stage s holds layers [s*N/p, (s+1)*N/p) — exactly GPipe's chunk for that
    stage, and the schedule reads the weights where they are. The
    interleaved schedule (virtual_stages > 1) runs chunk r*p + s on stage s,
    which is not where contiguous storage puts it: the weights are moved to
    the interleaved layout once per step (one all-to-all forward, one for the
    gradients backward). A LayerList is stacked on every call.

    Args:
      layers: a LayerStack, or structurally identical Layers; the layer count
        divisible by num_stages * virtual_stages.
      x: activations, batch first; the batch splits into num_microbatches.
      *args: inputs every layer receives unchanged (shared by all microbatches).
      num_stages: pipeline stages (the mesh's "pp" size).
      num_microbatches: microbatches; a multiple of num_stages when virtual_stages > 1.
      virtual_stages: layer chunks per stage (interleaved schedule when > 1).
      policy: optional recompute policy for each stage's chunk (None: a
        LayerStack's own policy).
      mesh: the mesh whose "pp" axis holds the stages (default: from `use_mesh`).

    Returns:
      The output of the last layer, shaped like x. Changes layers make to
      buffers (batch-norm statistics, dropout keys) are not kept.

    Example: inside `with pdx.parallel.use_mesh(HybridConfig(pp_degree=2, accumulate_steps=4)):`
    a model calling `pdx.parallel.run_layers(self.layers, h)` runs this schedule.
    """
    from pdx._remat import remat_policy as _policy

    template, graph, stacked, stored = _stacked_weights(layers)
    if stored and policy is None:
        policy = layers.policy
    n, p, v, m = stacked[0].shape[0] if stacked else 0, num_stages, virtual_stages, num_microbatches
    if n % (p * v) or n == 0:
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
    weights_by_chunk = []
    for var, w in zip(graph.variables, stacked):
        w = w.reshape((v, p, chunk) + w.shape[1:])
        if mesh is not None:
            w = jax.lax.with_sharding_constraint(w, _stage_sharding(var, mesh, stored))
        weights_by_chunk.append(w)
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
    # Microbatch j takes rows j, j + m, ...: a batch split over the data-parallel axes stays split
    # (its rows dimension is the one _buffer_sharding places there), no reshuffle.
    micro = jnp.swapaxes(x.reshape((x.shape[0] // m, m) + x.shape[1:]), 0, 1)
    buf_spec = _buffer_sharding((p,) + micro.shape[1:], mesh)
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
        weights = [jax.vmap(lambda w, r: w[r], in_axes=(1, 0))(w, jnp.clip(repeat, 0, v - 1))
                   for w in weights_by_chunk]
        # spmd_axis_name: a sharding constraint inside a layer keeps the stage dimension on "pp"
        out = jax.vmap(stage, spmd_axis_name="pp" if mesh is not None else None)(weights, buf)
        done = valid[p - 1] & (repeat[p - 1] == v - 1)
        k = jnp.clip(mb[p - 1], 0, m - 1)
        outs = outs.at[k].set(jnp.where(done, out[p - 1], outs[k]))
        buf = jnp.roll(out, 1, axis=0)                      # stage s -> s + 1; the last stage -> stage 0
        if buf_spec is not None:
            buf = jax.lax.with_sharding_constraint(buf, buf_spec)
        return (buf, outs), None

    buf0 = jnp.zeros((p,) + micro.shape[1:], x.dtype)
    (_, outs), _ = jax.lax.scan(step, (buf0, jnp.zeros_like(micro)), jnp.arange(steps))
    return jnp.swapaxes(outs, 0, 1).reshape(x.shape)
