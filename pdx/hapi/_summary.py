"""`pdx.summary` and `pdx.flops`: what a network holds and what it costs.

Both trace the network abstractly (`jax.eval_shape` / `jax.jit(...).lower`)
on a split copy of it: nothing is computed, nothing in the network changes.
`summary` records each sublayer's input and output shapes while the trace
runs; `flops` asks XLA's cost analysis of the compiled forward pass.
"""

from __future__ import annotations

import contextlib
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pdx._dtype import convert_dtype

__all__ = ["summary", "flops"]

_CONTAINERS = ("Sequential", "LayerList", "LayerDict")


def _known_batch(shape, fname):
    """Paddle's rule: one dim (the batch) may be None or -1 and is summarized as 1."""
    unknown = [i for i, d in enumerate(shape) if d is None or (isinstance(d, int) and d == -1)]
    if len(unknown) > 1:
        raise ValueError(f"{fname}: Option input_size only the dim of batch_size can be None or -1; got input_size={shape}")
    shape = tuple(1 if i in unknown else d for i, d in enumerate(shape))
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0 for d in shape):
        raise ValueError(f"{fname}: input_size {shape} must hold positive ints (and at most one None/-1, the batch dim)")
    return tuple(int(d) for d in shape)


def _is_spec(x) -> bool:
    """An InputSpec (or anything with a shape and a dtype that is not an array)."""
    return hasattr(x, "shape") and hasattr(x, "dtype") and not hasattr(x, "__array__") \
        and not isinstance(x, (list, tuple))


def _input_specs(input_size, dtypes, input, fname):
    if input is not None:  # Paddle's `net(input)`: a tensor, or a list / dict the forward takes as one argument
        return [jax.tree.map(lambda a: jax.ShapeDtypeStruct(tuple(a.shape), a.dtype), input)]
    if input_size is None:
        raise ValueError(f"{fname}: pass input_size (e.g. (1, 3, 224, 224)) or input=<example tensor>")
    specs = [input_size] if _is_spec(input_size) else list(input_size) if isinstance(input_size, (list, tuple)) else []
    if specs and all(_is_spec(s) for s in specs):  # InputSpecs (Paddle's form too): their shapes and dtypes
        if dtypes is None:
            dtypes = [s.dtype for s in specs]
        input_size = [tuple(s.shape) for s in specs]
    if isinstance(input_size, (list, tuple)) and input_size and all(isinstance(s, (list, tuple)) for s in input_size):
        sizes = [tuple(s) for s in input_size]
    elif isinstance(input_size, (list, tuple)):
        sizes = [tuple(input_size)]
    else:
        raise TypeError(f"{fname}: input_size must be a shape tuple or a list of shapes; got {input_size!r}")
    sizes = [_known_batch(s, fname) for s in sizes]
    if dtypes is None:
        dtypes = ["float32"] * len(sizes)
    elif isinstance(dtypes, str) or not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes] * len(sizes)
    if len(dtypes) != len(sizes):
        raise ValueError(f"{fname}: got {len(dtypes)} dtypes for {len(sizes)} inputs")
    return [jax.ShapeDtypeStruct(s, convert_dtype(d)) for s, d in zip(sizes, dtypes)]


def _shapes(tree):
    leaves = [x for x in jax.tree.leaves(tree) if hasattr(x, "shape")]
    shapes = [list(x.shape) for x in leaves]
    return shapes[0] if len(shapes) == 1 else shapes


@contextlib.contextmanager
def _record_calls(records: list):
    """Record (layer, inputs, output) of every Layer call inside the block."""
    from pdx.nn import Layer

    original = Layer.__call__

    def recording(self, *inputs, **kwargs):
        out = original(self, *inputs, **kwargs)
        records.append((self, inputs, out))
        return out

    Layer.__call__ = recording
    try:
        yield
    finally:
        Layer.__call__ = original


def _trace(net, specs):
    """Abstractly run a split copy of `net`; returns [(name, layer, inputs, output)] in call order."""
    graphdef, state = nnx.split(net)
    records: list = []
    names: dict = {}

    def run(state, *xs):
        copy = nnx.merge(graphdef, state)
        names.update({id(layer): (name, layer) for name, layer in copy.named_sublayers(include_self=True)})
        with _record_calls(records):
            return copy(*xs)

    jax.eval_shape(run, state, *specs)
    return [(names.get(id(layer), ("?", layer))[0], layer, ins, out) for layer, ins, out in records]


def _own_params(layer):
    total = trainable = 0
    for _, p in layer.named_parameters(include_sublayers=False):
        n = int(np.prod(p.get_value().shape))
        total += n
        meta = p.get_metadata()
        if meta.get("trainable", True) and not meta.get("stop_gradient", False):
            trainable += n
    return total, trainable


def _nbytes(shape_dtype_tree) -> int:
    return sum(int(np.prod(x.shape)) * jnp.dtype(x.dtype).itemsize for x in jax.tree.leaves(shape_dtype_tree)
               if hasattr(x, "shape"))


def summary(net, input_size=None, dtypes=None, input=None):
    """Print a table of the network's layers and return its parameter counts (Paddle's `paddle.summary`).

    The table has Paddle's columns plus 'Trainable #' (parameters an optimizer
    would update), then totals and a memory estimate (inputs, activations
    times two for the backward pass, parameters).

    Args:
      net: a `pdx.nn.Layer`.
      input_size: one input shape with the batch dimension, e.g. (1, 1, 28, 28),
        or a list of shapes for several inputs; or InputSpecs (their dtypes are used; a None batch is 1).
      dtypes: a dtype name, or one per input (default 'float32').
      input: an example input instead of input_size, passed to the forward as its one argument (a tensor,
        or a list / dict of tensors for a forward that takes one), as Paddle does.

    Returns:
      {'total_params': int, 'trainable_params': int}

    Example:
      >>> import pdx
      >>> net = pdx.nn.Sequential(pdx.nn.Linear(8, 4), pdx.nn.ReLU(), pdx.nn.Linear(4, 2))
      >>> info = pdx.summary(net, (1, 8))  # doctest: +ELLIPSIS
      ---...
      >>> info
      {'total_params': 46, 'trainable_params': 46}
    """
    specs = _input_specs(input_size, dtypes, input, "pdx.summary")
    calls = _trace(net, specs)
    rows, counter, seen = [], {}, set()
    act_bytes = 0
    for name, layer, ins, out in calls:
        kind = type(layer).__name__
        if (kind in _CONTAINERS or layer is None) or (not name and len(calls) > 1):
            continue
        counter[kind] = counter.get(kind, 0) + 1
        total, trainable = _own_params(layer) if id(layer) not in seen else (0, 0)  # shared layers count once
        seen.add(id(layer))
        act_bytes += _nbytes(out)
        rows.append((f"{kind}-{counter[kind]}", str(_shapes(ins)), str(_shapes(out)), f"{total:,}", f"{trainable:,}"))
    total = trainable = 0
    for _, p in net.named_parameters():
        n = int(np.prod(p.get_value().shape))
        total += n
        meta = p.get_metadata()
        trainable += n if meta.get("trainable", True) and not meta.get("stop_gradient", False) else 0
    param_bytes = sum(int(np.prod(p.get_value().shape)) * p.get_value().dtype.itemsize for p in net.parameters())
    headers = ("Layer (type)", "Input Shape", "Output Shape", "Param #", "Trainable #")
    widths = [max([len(h)] + [len(r[i]) for r in rows]) + 4 for i, h in enumerate(headers)]
    line = sum(widths)
    out = ["-" * line, "".join(h.center(w) for h, w in zip(headers, widths)), "=" * line]
    out += ["".join(c.center(w) for c, w in zip(r, widths)) for r in rows]
    mb = 1024.0 ** 2
    in_bytes = _nbytes(specs)
    out += ["=" * line, f"Total params: {total:,}", f"Trainable params: {trainable:,}",
            f"Non-trainable params: {total - trainable:,}", "-" * line,
            f"Input size (MB): {in_bytes / mb:.2f}",
            f"Forward/backward pass size (MB): {2 * act_bytes / mb:.2f}",
            f"Params size (MB): {param_bytes / mb:.2f}",
            f"Estimated Total Size (MB): {(in_bytes + 2 * act_bytes + param_bytes) / mb:.2f}", "-" * line]
    print("\n".join(out))
    return {"total_params": total, "trainable_params": trainable}


def _xla_flops(fn, *args) -> float:
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    return float((cost or {}).get("flops", 0.0))


def flops(net, input_size, custom_ops=None, print_detail=False):
    """Floating-point operations of one forward pass, from XLA's cost analysis (Paddle's `paddle.flops`).

    Args:
      net: a `pdx.nn.Layer`.
      input_size: the input shape with batch dimension, e.g. [1, 3, 224, 224]
        (or a list of shapes).
      custom_ops: accepted for Paddle compatibility and ignored: XLA counts
        every op of the compiled program.
      print_detail: also print a table per leaf layer.

    Returns:
      The total as an int. Difference from Paddle: XLA counts a multiply-add
      as 2 operations (Paddle's counter counts 1 for Linear/Conv) and
      includes element-wise ops; what XLA fuses away is not counted.

    Example:
      >>> import pdx
      >>> pdx.flops(pdx.nn.Linear(16, 8), [4, 16])  # 2*4*16*8 + 4*8 for the bias
      1056
    """
    specs = _input_specs(input_size, None, None, "pdx.flops")
    graphdef, state = nnx.split(net)
    total = _xla_flops(lambda st, *xs: nnx.merge(graphdef, st)(*xs), state, *specs)
    if print_detail:
        rows = []
        for name, layer, ins, _ in _trace(net, specs):
            if type(layer).__name__ in _CONTAINERS or any(True for _ in layer.named_children()):
                continue
            layer_gd, layer_state = nnx.split(layer)
            in_specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in jax.tree.leaves(ins) if hasattr(x, "shape")]
            f = _xla_flops(lambda st, *xs: nnx.merge(layer_gd, st)(*xs), layer_state, *in_specs)
            rows.append((name or type(layer).__name__, type(layer).__name__, str(_shapes(ins)), f"{int(f):,}"))
        headers = ("Layer Name", "Type", "Input Shape", "FLOPs")
        widths = [max([len(h)] + [len(r[i]) for r in rows]) + 2 for i, h in enumerate(headers)]
        sep = "+" + "+".join("-" * w for w in widths) + "+"
        print(sep)
        print("|" + "|".join(h.center(w) for h, w in zip(headers, widths)) + "|")
        print(sep)
        for r in rows:
            print("|" + "|".join(c.center(w) for c, w in zip(r, widths)) + "|")
        print(sep)
        print(f"Total FLOPs: {int(total):,}     Total Params: "
              f"{sum(int(math.prod(p.get_value().shape)) for p in net.parameters()):,}")
    return int(total)
