"""PyLayer: a Python op with a hand-written backward, on `jax.custom_vjp`.

`forward(ctx, *args, **kwargs)` runs as the primal and `backward(ctx, *grads)`
as the VJP. Every array attribute the forward puts on `ctx` (saved tensors,
`ctx.scale = ...`) travels to the backward as a residual, everything else
(Python numbers, functions) as a static value, so the op works eagerly, under
`jax.jit` / `pdx.jit`, and under `jax.grad` / `pdx.grad` (higher orders too,
through `backward` itself).
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from pdx import _trace_context

__all__ = ["Function", "PyLayer", "PyLayerContext", "saved_tensors_hooks"]

# (pack_hook, unpack_hook) of the innermost saved_tensors_hooks, or None: a PyLayer traced
# under them saves what pack_hook gives.
_HOOKS = _trace_context.SAVED_TENSORS_HOOKS


def _is_tensor(x) -> bool:
    return isinstance(x, (jax.Array, np.ndarray))


class PyLayerContext:
    """The `ctx` passed to a PyLayer's forward and backward.

    `save_for_backward(*tensors)` / `saved_tensor()` carry tensors to the
    backward; any other attribute set in forward is visible in backward.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> class Cube(pdx.autograd.PyLayer):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x ** 3
        ...     @staticmethod
        ...     def backward(ctx, dy):
        ...         (x,) = ctx.saved_tensor()
        ...         return 3 * x ** 2 * dy
        >>> pdx.grad(lambda x: Cube.apply(x).sum())(jnp.array([1., 2.]))
        Array([ 3., 12.], dtype=float32)
    """

    def __init__(self):
        self._saved = ()
        self._unpack = None
        self._non_differentiable = ()

    def save_for_backward(self, *tensors):
        """Keep tensors for `backward` (read them with `saved_tensor()`)."""
        hooks = _HOOKS.get()
        if hooks is not None:
            pack, unpack = hooks
            self._saved, self._unpack = tuple(pack(t) for t in tensors), unpack
        else:
            self._saved, self._unpack = tuple(tensors), None

    def saved_tensor(self):
        """The tensors given to `save_for_backward`, as a tuple."""
        if self._unpack is None:
            return self._saved
        return tuple(self._unpack(t) for t in self._saved)

    def mark_non_differentiable(self, *tensors):
        """Accepted for Paddle compatibility; those outputs' gradients are simply unused."""
        self._non_differentiable = tuple(tensors)

    def mark_not_inplace(self, *tensors):
        """Accepted for Paddle compatibility (pdx never works in place)."""

    def set_materialize_grads(self, value: bool):
        """Accepted for Paddle compatibility: pdx always passes zero gradients as zeros."""

    def set_grad_in_dtype_consistent(self, value: bool):
        """Accepted for Paddle compatibility: gradients are cast to the input dtypes anyway."""


class saved_tensors_hooks(contextlib.ContextDecorator):
    """Transform tensors saved by `PyLayerContext.save_for_backward` while active.

    `pack_hook(tensor)` runs at save time, `unpack_hook(packed)` when
    `saved_tensor()` reads it back. pdx has no other saved tensors (JAX keeps
    its own residuals), so only PyLayers see these hooks.

    Example:
        >>> import pdx
        >>> with pdx.autograd.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        ...     pass
    """

    def __init__(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("pdx.autograd.saved_tensors_hooks: `pack_hook` and `unpack_hook` must be callables; "
                            f"got {type(pack_hook).__name__} and {type(unpack_hook).__name__}")
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook
        self._scope = _HOOKS.set((pack_hook, unpack_hook))

    def __enter__(self):
        self._scope.__enter__()
        return self

    def __exit__(self, *exc):
        self._scope.__exit__(*exc)
        return False


def _zero_cotangent(x):
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return jnp.zeros_like(x)
    return np.zeros(x.shape, dtype=jax.dtypes.float0)


class PyLayer:
    """Base class for a custom op with its own backward (Paddle's `paddle.autograd.PyLayer`).

    Subclass with two static methods and call `.apply(*args, **kwargs)`:
    `forward(ctx, *args, **kwargs)` returns a tensor or a tuple of tensors;
    `backward(ctx, *grads)` gets one gradient per output and returns one per
    tensor positional input of forward (a tensor or None for zero). Non-tensor
    arguments (numbers, functions, options) pass through unchanged and get no
    gradient; tensor keyword arguments get zero gradients.

    Works eagerly, under `jax.jit` / `pdx.jit` and under `jax.grad` /
    `pdx.grad`, built on `jax.custom_vjp`.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> class ClipGrad(pdx.autograd.PyLayer):
        ...     @staticmethod
        ...     def forward(ctx, x, bound=1.0):
        ...         ctx.bound = bound
        ...         return x
        ...     @staticmethod
        ...     def backward(ctx, dy):
        ...         return jnp.clip(dy, -ctx.bound, ctx.bound)
        >>> pdx.grad(lambda x: (ClipGrad.apply(x, 0.5) * 3).sum())(jnp.ones(2))
        Array([0.5, 0.5], dtype=float32)
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the outputs; save what backward needs on `ctx`."""
        raise NotImplementedError("pdx.autograd.PyLayer: subclasses must define a static forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        """Return one gradient per tensor input of forward, given one per output."""
        raise NotImplementedError("pdx.autograd.PyLayer: subclasses must define a static backward(ctx, *grads)")

    def __init__(self, *args, **kwargs):
        raise TypeError(f"pdx.autograd.PyLayer: call {type(self).__name__}.apply(...) instead of creating an instance")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward, with `backward` as its gradient."""
        name = cls.__name__
        flat, treedef = jax.tree_util.tree_flatten((args, kwargs), is_leaf=lambda x: x is None)
        tensor_pos = [i for i, x in enumerate(flat) if _is_tensor(x)]
        n_positional = len(jax.tree_util.tree_leaves(args, is_leaf=lambda x: x is None))
        positional_tensors = [i for i in tensor_pos if i < n_positional]
        tensors = [jnp.asarray(flat[i]) for i in tensor_pos]
        box = {}

        def rebuild(ts):
            leaves = list(flat)
            for i, t in zip(tensor_pos, ts):
                leaves[i] = t
            return jax.tree_util.tree_unflatten(treedef, leaves)

        def run_forward(ts):
            a, kw = rebuild(ts)
            ctx = PyLayerContext()
            out = cls.forward(ctx, *a, **kw)
            out_leaves = jax.tree_util.tree_leaves(out)
            if not out_leaves or not all(_is_tensor(o) for o in out_leaves):
                raise TypeError(f"pdx.autograd.PyLayer: {name}.forward must return a tensor or a tuple of tensors; "
                                f"got {type(out).__name__}")
            return ctx, out

        @jax.custom_vjp
        def op(*ts):
            return run_forward(ts)[1]

        def op_fwd(*ts):
            ctx, out = run_forward(ts)
            leaves, ctx_def = jax.tree_util.tree_flatten(dict(vars(ctx)), is_leaf=lambda x: x is None)
            is_arr = [_is_tensor(x) for x in leaves]
            box["ctx"] = (ctx_def, [None if a else x for x, a in zip(leaves, is_arr)], is_arr)
            box["out_def"] = jax.tree_util.tree_structure(out)
            return out, ([x for x, a in zip(leaves, is_arr) if a], ts)

        def op_bwd(res, g):
            arrays, ts = res
            ctx_def, static, is_arr = box["ctx"]
            it = iter(arrays)
            leaves = [next(it) if a else s for s, a in zip(static, is_arr)]
            ctx = PyLayerContext.__new__(PyLayerContext)
            vars(ctx).update(jax.tree_util.tree_unflatten(ctx_def, leaves))
            grads_in = tuple(g) if isinstance(g, (tuple, list)) else (g,)
            result = cls.backward(ctx, *grads_in)
            result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            if len(result) != len(positional_tensors):
                raise ValueError(f"pdx.autograd.PyLayer: {name}.backward must return one gradient per tensor input "
                                 f"of forward ({len(positional_tensors)}); got {len(result)}")
            by_pos = dict(zip(positional_tensors, result))
            out = []
            for i, t in zip(tensor_pos, ts):
                gi = by_pos.get(i)
                if gi is None or not jnp.issubdtype(t.dtype, jnp.inexact):
                    out.append(_zero_cotangent(t))
                else:
                    gi = jnp.asarray(gi)
                    if gi.shape != t.shape:
                        raise ValueError(f"pdx.autograd.PyLayer: {name}.backward returned a gradient of shape "
                                         f"{gi.shape} for an input of shape {t.shape}")
                    out.append(gi.astype(t.dtype))
            return tuple(out)

        op.defvjp(op_fwd, op_bwd)
        return op(*tensors)


Function = PyLayer
