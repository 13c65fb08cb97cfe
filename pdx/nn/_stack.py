"""LayerStack: N identical layers stored as one layer whose Variables hold (N, ...) arrays.

A model built from many copies of one block (a transformer's decoder
layers) can keep their weights stacked: one `block` Layer whose every
Variable has a leading layer dimension tagged with the logical axis name
`pdx.nn.axes.LAYERS`. Running the stack is one `lax.scan` over that
dimension (the block is traced once, so compile time does not grow with
depth); the optimizer updates one (N, ...) array per parameter instead of
N arrays; `pdx.parallel` places the layer dimension on the "pp" mesh axis,
so each pipeline stage holds only its own layers.

State-dict names drop the layer index: a stack stored as `layers` in a
model names its parameters `layers.self_attn.q_proj.weight` with shape
(N, in, out), where a LayerList would have `layers.0.self_attn...`,
`layers.1.self_attn...`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from pdx import _nnx, _placement
from pdx._graph import Graph, check_identical, run_with_values
from pdx.nn import axes
from pdx.nn._layer import Layer, restore_attribute_order

__all__ = ["LayerStack", "scan_values"]


def _copy(layer):
    """A copy of `layer` with new Variables, attributes in the original's (definition) order."""
    copy = nnx.clone(layer)
    restore_attribute_order(layer, copy)
    return copy


def scan_values(template, graph: Graph, stacked: Sequence, fn: Callable, carry, xs=None, *, policy=None):
    """`lax.scan` of `fn(template, carry, x) -> (carry, y)` with graph's Variables holding slice i of `stacked`.

    Returns:
      (final carry, stacked ys, {variable index: stacked new value} for the
      non-parameter Variables the body changed: buffers, RNG state).
    """
    from pdx.nn._recompute import _policy

    changed: list[int] = []

    def body(carry, slices):
        values, x = slices
        (carry, y), new_values = run_with_values(graph, values, fn, template, carry, x)
        # Decided while tracing: only what the body wrote comes out of the scan.
        changed[:] = [i for i, (var, old, new) in enumerate(zip(graph.variables, values, new_values))
                      if not isinstance(var, nnx.Param) and new is not old]
        return carry, (y, [new_values[i] for i in changed])

    if policy is not None:
        body = jax.checkpoint(body, policy=_policy(policy))
    carry, (ys, new) = jax.lax.scan(body, carry, (list(stacked), xs))
    return carry, ys, dict(zip(changed, new))


class LayerStack(Layer):
    """`num_layers` identical layers stored stacked and run with one `lax.scan`.

    `LayerStack(layers)(x, *args)` equals `for layer in layers: x = layer(x, *args)`.
    The layers' values are stacked once, at construction, into the Variables
    of `block` (a copy of layer 0): each holds an (N, ...) array whose
    logical axis names start with `pdx.nn.axes.LAYERS`. Layers must be
    structurally identical (same classes, settings, shapes and dtypes);
    what changes in forward besides parameters (batch-norm statistics, dropout
    keys) is written back per layer.

    Differences from a `LayerList`: state-dict names have no layer index
    (`block_name.weight` with shape (N, ...)); `stack[i]` returns a *copy* of
    layer i for inspection (changing it does not change the stack); layers
    cannot be appended or removed.

    Args:
      layers: a sequence (or LayerList) of identical Layers; at least one.
      policy: recompute policy for each layer in the scan (see
        `pdx.nn.recompute`): None (keep activations), "full", "dots",
        "dots_with_no_batch_dims", or a `jax.checkpoint_policies` function.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> stack = pdx.nn.LayerStack([pdx.nn.Linear(4, 4) for _ in range(3)])
      >>> stack(jnp.ones((2, 4))).shape, stack.block.weight.shape
      ((2, 4), (3, 4, 4))
      >>> list(stack.state_dict())
      ['weight', 'bias']
    """

    def __init__(self, layers: Sequence, *, policy=None):
        super().__init__()
        from pdx.nn._recompute import _policy

        layers = list(layers)
        if not layers or not all(isinstance(layer, nnx.Module) for layer in layers):
            raise TypeError(f"LayerStack: layers must be a non-empty sequence of Layers; got "
                            f"{[type(layer).__name__ for layer in layers] or 'an empty sequence'}")
        check_identical(layers, "LayerStack")
        _policy(policy)  # an unknown policy fails here, not at the first call
        block = _copy(layers[0])
        graphs = [Graph([layer]) for layer in layers]
        for i, var in enumerate(Graph([block]).variables):
            stacked = jnp.stack([g.values()[i] for g in graphs])
            _nnx.store_value(var, stacked)
            names = _placement.logical_axes(var)
            _placement.set_logical_axes(var, (axes.LAYERS,) + (names if names is not None else (None,) * (stacked.ndim - 1)))
            # A placement describes the whole (unstacked) array; the stack is placed anew.
            _placement.drop_placement(var)
        self.block = block
        self.num_layers = len(layers)
        self.policy = policy

    # -- running -----------------------------------------------------------------
    def forward(self, x, *args, **kwargs):
        """`x` through every layer in order; `*args, **kwargs` reach each layer unchanged."""
        return self.scan(lambda layer, h, _: (layer(h, *args, **kwargs), None), x)[0]

    def scan(self, fn: Callable, carry, xs=None, *, policy=None):
        """`lax.scan` over the layers: `fn(layer, carry, x_i) -> (carry, y_i)`.

        For per-layer inputs and outputs besides the carried activation, e.g.
        a KV cache stacked as (N, ...): `h, cache = stack.scan(lambda layer, h,
        c: layer.decode(h, c), h, cache)`.

        Args:
          fn: called with the block holding layer i's values, the carry and
            slice i of `xs`; returns the new carry and this layer's output.
          carry: the value passed from layer to layer.
          xs: a pytree of (N, ...) arrays sliced per layer, or None.
          policy: recompute policy for each layer; None: the stack's own
            ("none" runs without recompute whatever the stack's is).

        Returns:
          (final carry, the per-layer outputs stacked as (N, ...)).
        """
        graph = Graph([self.block])
        policy = self.policy if policy is None else policy
        carry, ys, new = scan_values(self.block, graph, graph.values(), fn, carry, xs, policy=policy)
        graph.write(new)
        return carry, ys

    # -- inspection ----------------------------------------------------------------
    def __len__(self) -> int:
        return self.num_layers

    def __getitem__(self, index: int) -> Layer:
        """A copy of layer `index` (its own arrays; changing it leaves the stack alone)."""
        if not isinstance(index, int) or not -self.num_layers <= index < self.num_layers:
            raise IndexError(f"LayerStack: index {index!r} out of range for {self.num_layers} layers")
        layer = _copy(self.block)
        for var, value in zip(Graph([layer]).variables, Graph([self.block]).values()):
            _nnx.store_value(var, value[index])
            names = _placement.logical_axes(var)
            if names is not None:
                _placement.set_logical_axes(var, names[1:])
            _placement.drop_placement(var)  # the stack's placement describes the whole stack
        return layer

    def __iter__(self):
        return (self[i] for i in range(self.num_layers))

    def named_sublayers(self, prefix: str = "", include_self: bool = False, layers_set=None):
        """The block's sublayers under the stack's own name (no `block.` in state-dict names)."""
        seen = set() if layers_set is None else layers_set
        if include_self and id(self) not in seen:
            seen.add(id(self))
            yield prefix, self
        if id(self.block) in seen:
            return
        seen.add(id(self.block))
        yield prefix, self.block
        if isinstance(self.block, Layer):
            yield from self.block.named_sublayers(prefix=prefix, include_self=False, layers_set=seen)

    def __repr__(self) -> str:
        policy = f", policy={self.policy!r}" if self.policy is not None else ""
        block = repr(self[0]).replace("\n", "\n  ")
        return f"LayerStack(num_layers={self.num_layers}{policy}\n  (block): {block}\n)"
