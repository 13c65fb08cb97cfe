"""Activation recomputation and scanning over identical layers.

Both run a Layer as a pure function of its Variables' values (the same
swap pdx.jit uses): `recompute` wraps it in `jax.checkpoint` so the backward
pass recomputes activations instead of storing them; `scan_layers` runs N
structurally identical layers with one `lax.scan` (a `LayerStack` stores
them stacked; a LayerList is stacked per call).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from pdx import _nnx
from pdx._graph import Graph, run_with_values
from pdx._remat import remat_policy as _policy
from pdx.nn._stack import LayerStack, check_identical, scan_values

def _write_back(graph: Graph, new_values: Sequence) -> None:
    """Keep what the forward changed in buffers (batch-norm statistics, RNG counters)."""
    for var, value in zip(graph.variables, new_values):
        if not isinstance(var, nnx.Param) and value is not _nnx.stored_value(var):
            _nnx.store_value(var, value)


def recompute(function, *, policy="full") -> Callable:
    """Wrap a Layer (or a function) so its activations are recomputed in the backward pass.

    Paddle's `paddle.distributed.fleet.utils.recompute(function, *args)` calls
    at once; pdx returns the wrapped callable (call it like the original).

    Args:
      function: a `pdx.nn.Layer` or a function of arrays (it may close over layers).
      policy: what may be kept instead of recomputed: "full" (nothing; Paddle's
        behaviour), "dots" (matmul outputs), "dots_with_no_batch_dims", "none"
        (keep everything), or a `jax.checkpoint_policies` function.

    Returns:
      A callable with the same signature and results.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> block = pdx.nn.Linear(4, 4)
      >>> y = pdx.nn.recompute(block)(jnp.ones((2, 4)))
      >>> y.shape
      (2, 4)
    """
    chosen = _policy(policy)
    if not isinstance(function, nnx.Module):
        if not callable(function):
            raise TypeError(f"recompute: expected a Layer or a function; got {type(function).__name__}")
        return jax.checkpoint(function, policy=chosen)
    layer = function

    def call(*args, **kwargs):
        graph = Graph([layer])

        def pure(values, args, kwargs):
            return run_with_values(graph, values, layer, *args, **kwargs)

        out, new_values = jax.checkpoint(pure, policy=chosen)(graph.values(), args, kwargs)
        _write_back(graph, new_values)
        return out

    call.__doc__ = f"{type(layer).__name__}.forward, recomputed in the backward pass (policy={policy!r})."
    return call


def scan_layers(layers: Sequence, x, *args, policy=None, **kwargs):
    """Run `x` through identical layers one after another with one `lax.scan`.

    Equivalent to `for layer in layers: x = layer(x, *args, **kwargs)`, but the
    body is traced once. Given a `LayerStack` this is its forward. Given a
    LayerList (or a list), each layer keeps its own parameters and state-dict
    names, and their values are stacked on every call: one extra copy of the
    weights, and stacking/unstacking ops that grow with depth in the compiled
    program (and in the optimizer, which updates N arrays per parameter).
    Store the layers as a `pdx.nn.LayerStack` to avoid both.

    Args:
      layers: a LayerStack, or Layers with identical structure (same classes, shapes, dtypes).
      x: the carried activation; each layer returns the next one.
      *args, **kwargs: extra inputs given to every layer unchanged.
      policy: optional recompute policy for the body (see `recompute`).

    Returns:
      The last layer's output.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> blocks = pdx.nn.LayerList([pdx.nn.Linear(4, 4) for _ in range(3)])
      >>> pdx.nn.scan_layers(blocks, jnp.ones((2, 4))).shape
      (2, 4)
    """
    if isinstance(layers, LayerStack):
        return layers.scan(lambda layer, h, _: (layer(h, *args, **kwargs), None), x, policy=policy)[0]
    layers = list(layers)
    if not layers:
        return x
    check_identical(layers, "scan_layers")
    graphs = [Graph([layer]) for layer in layers]
    stacked = [jnp.stack(vals) for vals in zip(*(g.values() for g in graphs))]
    out, _, new = scan_values(layers[0], graphs[0], stacked,
                              lambda layer, h, _: (layer(h, *args, **kwargs), None), x, policy=policy)
    for i, g in enumerate(graphs):
        g.write({k: v[i] for k, v in new.items()})
    return out
