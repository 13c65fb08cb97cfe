"""The 1F1B pipeline schedule (PipeDream-flush, Paddle's default): memory set by the stages, not the microbatches.

Autodiff of a forward schedule (GPipe, `pipeline`) keeps every microbatch's
activations until the backward pass starts, so activation memory grows with
the number of microbatches. 1F1B interleaves: stage s runs the forward of
microbatch i at tick i + s and its backward at tick i + 2p - 2 - s (p
stages), so a stage holds at most 2p - 1 microbatch inputs at any time.
Ticks: m + 2p - 2. That
cannot come from differentiating a forward program; the schedule computes
the gradients itself:

- one `lax.scan` over ticks t = 0 .. m + 2p - 3; every stage (a vmap over
  the stage-stacked weights, the stage dimension on the "pp" mesh axis)
  does one forward slot and one backward slot per tick (masked when idle);
- activations go to the next stage and cotangents to the previous one with
  `jnp.roll` on the pp-sharded dimension (collective-permutes);
- a stage keeps only the *input* of each microbatch in flight (a ring buffer
  of 2p slots) and re-runs its forward inside `jax.vjp` at the backward slot
  (stage-level recompute);
- the last stage applies the loss head (`tail`) right after its forward and
  starts that microbatch's backward in the same tick.

Every tick costs one forward and one backward on every stage (idle slots
are masked, not skipped: a branch per stage does not survive the vmap over
the pp-sharded stage dimension), so the idle share of compute slots is
(2p - 2) / (m + 2p - 2), larger than an event-driven 1F1B's (p - 1) / (m + p - 1);
the win is memory.

`pipeline_1f1b_loss` wraps the schedule in a `jax.custom_vjp` whose forward
pass runs it (loss and all gradients at once) and whose backward pass only
scales the stored gradients, so `pdx.value_and_grad` / `jax.grad` of a model
that calls it train with 1F1B's memory.
"""

from __future__ import annotations

import functools
import logging

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

from pdx._graph import Graph, run_with_values

__all__ = ["pipeline_1f1b_loss"]

_log = logging.getLogger("pdx.parallel")


def _schedule(stage_fn, tail_fn, weights, tail_values, micro_x, micro_y, p: int, mesh):
    """(mean loss, grads of weights, grads of micro_x, grads of tail_values) by the 1F1B schedule."""
    m = micro_x.shape[0]
    slots = 2 * p
    stages = jnp.arange(p)
    vmap = functools.partial(jax.vmap, spmd_axis_name="pp" if mesh is not None else None)

    def place(a):
        if mesh is None:
            return a
        return jax.lax.with_sharding_constraint(a, NamedSharding(mesh, PartitionSpec("pp")))

    def tail_loss(tv, h, y):
        return tail_fn(tv, h, y)

    def tick(carry, t):
        fwd_in, bwd_in, stash, gw, gx, gt, loss = carry
        # forward slot: stage s runs microbatch t - s
        i_f = t - stages
        valid_f = (i_f >= 0) & (i_f < m)
        first = micro_x[jnp.clip(t, 0, m - 1)]
        h_in = fwd_in.at[0].set(first)
        out = vmap(stage_fn)(weights, h_in)
        slot_f = jnp.mod(i_f, slots)
        stash = vmap(lambda st, k, h, ok: st.at[k].set(jnp.where(ok, h, st[k])))(stash, slot_f, h_in, valid_f)
        # the loss head on the last stage's output, and the cotangent that starts its backward
        i_last = t - (p - 1)
        ok_last = (i_last >= 0) & (i_last < m)
        y = micro_y[jnp.clip(i_last, 0, m - 1)]
        value, pull = jax.vjp(lambda tv, h: tail_loss(tv, h, y), tail_values, out[p - 1])
        g_tail, g_last = pull(jnp.ones_like(value))
        loss = loss + jnp.where(ok_last, value, 0.0)
        gt = jax.tree.map(lambda a, g: a + jnp.where(ok_last, g, 0.0), gt, g_tail)
        # backward slot: stage s runs microbatch t - (2p - 2 - s) from its stored input; the last stage
        # starts the one whose forward it just finished, from the head's gradient
        i_b = t - (2 * p - 2 - stages)
        valid_b = (i_b >= 0) & (i_b < m)
        saved = vmap(lambda st, k: st[k])(stash, jnp.mod(i_b, slots))
        bwd_in = bwd_in.at[p - 1].set(jnp.where(ok_last, g_last, 0.0).astype(bwd_in.dtype))

        def backward(w, h, g):
            _, pull_stage = jax.vjp(stage_fn, w, h)
            return pull_stage(g)

        dw, dh = vmap(backward)(weights, saved, bwd_in)
        gw = jax.tree.map(lambda a, d: a + jnp.where(valid_b.reshape((p,) + (1,) * (d.ndim - 1)), d, 0.0), gw, dw)
        k0 = jnp.clip(i_b[0], 0, m - 1)
        gx = gx.at[k0].set(jnp.where(valid_b[0], dh[0], gx[k0]))
        # activations move one stage forward, cotangents one stage back
        fwd_in = place(jnp.roll(out, 1, axis=0))
        bwd_in = place(jnp.roll(dh, -1, axis=0))
        return (fwd_in, bwd_in, stash, gw, gx, gt, loss), None

    shape = micro_x.shape[1:]
    zeros = jnp.zeros((p,) + shape, micro_x.dtype)
    carry = (place(zeros), place(zeros), jnp.zeros((p, slots) + shape, micro_x.dtype),
             jax.tree.map(jnp.zeros_like, weights), jnp.zeros_like(micro_x),
             jax.tree.map(jnp.zeros_like, tail_values), jnp.zeros((), jnp.float32))
    (_, _, _, gw, gx, gt, loss), _ = jax.lax.scan(tick, carry, jnp.arange(m + 2 * p - 2))
    scale = 1.0 / m
    return (loss * scale, jax.tree.map(lambda g: g * scale, gw), gx * scale,
            jax.tree.map(lambda g: g * scale, gt))


def pipeline_1f1b_loss(layers, x, targets, tail, tail_fn, *, num_stages: int, num_microbatches: int, mesh=None):
    """Mean over microbatches of `tail_fn(tail, layers(x_i), targets_i)`, trained with the 1F1B schedule.

    Args:
      layers: a `pdx.nn.LayerStack` of identical blocks (`block(h) -> h`); its
        layer count must be a multiple of num_stages (stage s runs layers
        [s*N/p, (s+1)*N/p), where a pp-sharded LayerStack already keeps them).
      x: block input, batch first; split into num_microbatches (rows j, j+m, ...).
      targets: per-row targets, batch first, split the same way.
      tail: a Layer (or list of Layers) with the head's parameters (final norm, output projection).
      tail_fn: `tail_fn(tail, h, y) -> scalar` loss of one microbatch's last hidden states.
      num_stages, num_microbatches: p and m (m >= p).
      mesh: the mesh whose "pp" axis holds the stages (default: from `use_mesh`).

    Returns:
      The scalar loss; `jax.grad` / `pdx.value_and_grad` through it give the
      gradients the schedule computed (layers' and tail's parameters and x).

    Example: `loss = pipeline_1f1b_loss(model.layers, h, labels, [model.norm, model.lm_head],
    lambda t, h, y: F.cross_entropy(t[1](t[0](h)), y), num_stages=4, num_microbatches=8)`.
    """
    from pdx.nn import LayerStack
    from pdx.parallel._pipeline import _active, bubble_fraction

    if not isinstance(layers, LayerStack):
        raise TypeError(f"pipeline_1f1b_loss: layers must be a pdx.nn.LayerStack; got {type(layers).__name__}")
    p, m = num_stages, num_microbatches
    n = layers.num_layers
    if n % p:
        raise ValueError(f"pipeline_1f1b_loss: {n} layers cannot be split into {p} stages; make the layer count a "
                         "multiple of pp_degree")
    if m < p:
        raise ValueError(f"pipeline_1f1b_loss: 1F1B needs at least as many microbatches as stages; got "
                         f"num_microbatches={m} < num_stages={p}")
    if x.shape[0] % m or targets.shape[0] != x.shape[0]:
        raise ValueError(f"pipeline_1f1b_loss: batch {x.shape[0]} (targets {targets.shape[0]}) is not divisible "
                         f"into num_microbatches={m}")
    mesh = _active()[0] if mesh is None else mesh
    _log.info("pipeline 1F1B: %d stages, %d microbatches, %d ticks, idle slots %.1f%% (event-driven 1F1B: %.1f%%)",
              p, m, m + 2 * p - 2, 100 * (2 * p - 2) / (m + 2 * p - 2), 100 * bubble_fraction(p, m))
    graph = Graph([layers.block])
    template = layers.block
    stacked = graph.values()
    weights = [w.reshape((p, n // p) + w.shape[1:]) for w in stacked]
    tail_graph = Graph([tail] if not isinstance(tail, (list, tuple)) else list(tail))
    tail_values = tail_graph.values()

    def stage_fn(w, h):
        def body(carry, layer_values):
            return run_with_values(graph, layer_values, template, carry)[0], None

        return jax.lax.scan(body, h, w)[0]

    def run_tail(tv, h, y):
        return run_with_values(tail_graph, tv, tail_fn, tail, h, y)[0]

    micro = lambda a: jnp.swapaxes(a.reshape((a.shape[0] // m, m) + a.shape[1:]), 0, 1)  # noqa: E731
    unmicro = lambda a: jnp.swapaxes(a, 0, 1).reshape((-1,) + a.shape[2:])  # noqa: E731
    micro_y = micro(targets)

    @jax.custom_vjp
    def loss_of(weights, x, tail_values):
        return _schedule(stage_fn, run_tail, weights, tail_values, micro(x), micro_y, p, mesh)[0]

    def fwd(weights, x, tail_values):
        loss, gw, gx, gt = _schedule(stage_fn, run_tail, weights, tail_values, micro(x), micro_y, p, mesh)
        return loss, (gw, unmicro(gx), gt)

    def bwd(res, ct):
        gw, gx, gt = res
        return (jax.tree.map(lambda g: g * ct, gw), gx * ct, jax.tree.map(lambda g: g * ct, gt))

    loss_of.defvjp(fwd, bwd)
    return loss_of(weights, x, tail_values)
