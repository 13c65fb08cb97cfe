"""`pdx.grad` / `pdx.value_and_grad`: gradients of functions of Layers.

Paddle computes gradients by `loss.backward()` and stores them on
parameters; pdx returns them. For an argument that is a Layer, the gradient
is a `Gradients` dict {dotted parameter name: grad} over its trainable
parameters (the same names as `state_dict()`), which `optimizer.step(grads)`
consumes. Other arguments get ordinary JAX gradients. Buffers the function
updates (BatchNorm statistics, dropout RNG) keep their new values, as in an
eager Paddle forward pass.

Example:
    >>> import pdx, jax.numpy as jnp
    >>> net = pdx.nn.Linear(3, 1)
    >>> def loss_fn(model, x):
    ...     return model(x).mean()
    >>> loss, grads = pdx.value_and_grad(loss_fn)(net, jnp.ones((2, 3)))
    >>> sorted(grads)
    ['bias', 'weight']
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import jax
from flax import nnx

from pdx._graph import Graph, is_graph_node, run_with_values, same_leaves

__all__ = ["Gradients", "grad", "no_grad", "value_and_grad"]


@jax.tree_util.register_pytree_with_keys_class
class Gradients(dict):
    """Gradients of a Layer's trainable parameters by dotted name.

    A plain dict for reading (`grads["fc.weight"]`), a pytree for JAX
    (`jax.tree.map(lambda g: g * 0.5, grads)` keeps the type), and it
    remembers `owner`, the Layer its names refer to, so an optimizer bound to
    any subset of that Layer's parameters finds its gradients by identity.
    """

    owner = None

    def tree_flatten_with_keys(self):
        keys = tuple(self.keys())
        return [(jax.tree_util.DictKey(k), self[k]) for k in keys], (keys, self.owner)

    def tree_flatten(self):
        keys = tuple(self.keys())
        return [self[k] for k in keys], (keys, self.owner)

    @classmethod
    def tree_unflatten(cls, aux, children):
        keys, owner = aux
        out = cls(zip(keys, children))
        out.owner = owner
        return out

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k!r}: {getattr(v, 'shape', v)}" for k, v in self.items())
        return f"Gradients({{{shapes}}})"


def _trainable_params(obj) -> list[tuple[str, nnx.Param]]:
    if hasattr(obj, "named_parameters"):
        named = obj.named_parameters()
    else:  # a plain nnx.Module: names from nnx paths
        named = ((".".join(map(str, path)), v) for path, v in nnx.iter_graph(obj)
                 if isinstance(v, nnx.Param))
    trainable = []
    for n, p in named:
        meta = p.get_metadata()
        if meta.get("trainable", True) and not meta.get("stop_gradient", False):
            trainable.append((n, p))
    return trainable


def _normalize_argnums(argnums, nargs: int, fname: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not isinstance(i, int) or not -nargs <= i < nargs:
            raise ValueError(f"{fname}: argnums={argnums!r} is out of range for {nargs} positional arguments")
    return tuple(i % nargs for i in nums)


def value_and_grad(func: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Return a function computing `(func(*args), gradients)`.

    Args:
      func: returns a scalar loss (or `(loss, aux)` with has_aux=True).
      argnums: which positional argument(s) to differentiate. For a Layer the
        gradient is a `Gradients` dict over its trainable parameters.
      has_aux: func returns `(loss, aux)`; the result is then `((loss, aux), grads)`.

    Returns:
      A function with func's signature returning `(value, grads)`; grads is a
      single gradient for an int argnums and a tuple for a sequence.
    """
    _check_function(func, "value_and_grad")
    fname = f"pdx.value_and_grad({getattr(func, '__name__', func)})"

    def wrapper(*args, **kwargs):
        nums = _normalize_argnums(argnums, len(args), fname)
        graph_objs = [a for a in args if is_graph_node(a)]
        graph = Graph(graph_objs) if graph_objs else None
        index = {id(v): i for i, v in enumerate(graph.variables)} if graph else {}
        diff_slots = []  # per argnum: ("layer", names, variable indices) or ("array", None, None)
        for i in nums:
            if is_graph_node(args[i]):
                named = _trainable_params(args[i])
                diff_slots.append(("layer", [n for n, _ in named], [index[id(p)] for _, p in named]))
            else:
                diff_slots.append(("array", None, None))
        values = graph.values() if graph else []

        def inner(diff_values, values):
            values = list(values)
            call_args = list(args)
            for (kind, _, idx), dv, i in zip(diff_slots, diff_values, nums):
                if kind == "layer":
                    for j, v in zip(idx, dv):
                        values[j] = v
                else:
                    call_args[i] = dv
            if graph is None:
                out, new_values = func(*call_args, **kwargs), []
            else:
                out, new_values = run_with_values(graph, values, func, *call_args, **kwargs)
            loss, aux = out if has_aux else (out, None)
            if not (hasattr(loss, "shape") and loss.shape == ()):
                raise TypeError(f"{fname}: the function must return a scalar loss"
                                f"{' as the first element of (loss, aux)' if has_aux else ''}; "
                                f"got {type(loss).__name__} with shape {getattr(loss, 'shape', None)}")
            updates = {j: new for j, (new, old) in enumerate(zip(new_values, values))
                       if not same_leaves(new, old)}
            return loss, (aux, updates)

        diff_values = [[values[j] for j in idx] if kind == "layer" else args[i]
                       for (kind, _, idx), i in zip(diff_slots, nums)]
        (loss, (aux, updates)), raw_grads = jax.value_and_grad(inner, has_aux=True)(diff_values, values)
        if graph is not None and updates:
            # Buffers changed by the forward pass (BatchNorm stats, RNG) keep
            # their new values; parameters only change through the optimizer.
            graph.write({j: jax.lax.stop_gradient(v) for j, v in updates.items()})
        grads = []
        for (kind, names, _), g, i in zip(diff_slots, raw_grads, nums):
            if kind == "layer":
                out = Gradients(zip(names, g))
                out.owner = args[i]
                grads.append(out)
            else:
                grads.append(g)
        grads = grads[0] if isinstance(argnums, int) else tuple(grads)
        return ((loss, aux) if has_aux else loss), grads

    return wrapper


_TAPE_FORM = (
    "pdx.{op}(func, ...) differentiates a function: pdx has no tape, so Paddle's "
    "paddle.grad(outputs, inputs) form cannot work; got {what} as `func`. Write the computation "
    "as a function of the inputs and call pdx.{op}(func)(inputs), e.g. "
    "`loss, grads = pdx.value_and_grad(lambda m, x: loss_fn(m(x)))(model, x)`."
)


def _check_function(func, op: str) -> None:
    if not callable(func) or hasattr(func, "shape"):
        raise TypeError(_TAPE_FORM.format(op=op, what=f"a {type(func).__name__}"))


def grad(func: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Like `value_and_grad` but returns only the gradients (and aux if has_aux).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> net = pdx.nn.Linear(2, 1)
        >>> g = pdx.grad(lambda m, x: m(x).sum())(net, jnp.ones((1, 2)))
        >>> g["weight"].shape
        (2, 1)
    """
    _check_function(func, "grad")
    vg = value_and_grad(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        value, grads = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


class no_grad(contextlib.ContextDecorator):
    """Paddle's `paddle.no_grad`, kept so ported code runs unchanged.

    pdx records nothing for autodiff outside `pdx.grad` (gradients are
    computed only by the function transformation), so this context/decorator
    has nothing to switch off; wrap values in `jax.lax.stop_gradient` to block
    gradients inside a differentiated function.

    Example:
        >>> import pdx
        >>> with pdx.no_grad():
        ...     y = pdx.ones([2]) * 2
    """

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
