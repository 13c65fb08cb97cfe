"""pdx.incubate.autograd: Paddle's functional autodiff — `jvp`, `vjp`, `Jacobian`, `Hessian` over a function.

Paddle's `paddle.incubate.autograd` takes the function and its inputs, as
JAX does, so these are JAX's transforms in Paddle's layout:

* `vjp(func, xs, v=None)` -> `(func(*xs), v^T J)`: `jax.vjp`; `v` defaults
  to ones shaped like the outputs; the result has `xs`' structure (a tensor
  for one tensor, a list for a sequence).
* `jvp(func, xs, v=None)` -> `(func(*xs), J v)`: `jax.jvp`; `v` defaults to
  ones shaped like `xs`; the result has the outputs' structure.
* `Jacobian(func, xs, is_batched=False)`: every input flattened and
  concatenated (`N` columns), every output too (`M` rows): `J[:]` is `[M, N]`,
  batched `[B, M, N]` (the batch axis first in every input and output).
  Paddle evaluates rows lazily; pdx computes the matrix at once with
  `jax.jacrev` and indexes it.
* `Hessian(func, xs, is_batched=False)`: the Jacobian of the gradient of a
  function with one output element (per sample when batched).
* `enable_prim` / `disable_prim` / `prim_enabled`: Paddle's switch for its
  primitive-operator lowering of static programs. pdx always differentiates
  JAX primitives, so the switch is recorded and changes nothing.

Example:
    >>> import pdx, jax.numpy as jnp
    >>> from pdx.incubate import autograd
    >>> x = jnp.ones((2, 2))
    >>> _, g = autograd.vjp(lambda x: pdx.matmul(x, x), x)
    >>> g.tolist()
    [[4.0, 4.0], [4.0, 4.0]]
    >>> autograd.Jacobian(lambda x, y: x * y, [jnp.ones(3), jnp.ones(3)]).shape
    (3, 6)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

__all__ = ["Hessian", "Jacobian", "disable_prim", "enable_prim", "jvp", "prim_enabled", "vjp"]

_PRIM = {"enabled": False}


def _inputs(func, xs, name: str) -> tuple[bool, tuple]:
    if not callable(func):
        raise TypeError(f"pdx.incubate.autograd.{name}: `func` must be callable; got {type(func).__name__}")
    seq = isinstance(xs, Sequence)
    items = tuple(xs) if seq else (xs,)
    try:
        items = tuple(jnp.asarray(x) for x in items)
    except TypeError:
        raise TypeError(f"pdx.incubate.autograd.{name}: `xs` must be a Tensor or a sequence of Tensors; "
                        f"got {xs!r}") from None
    return seq, items


def _like(v, ref, what: str, name: str):
    """`v` in the structure of `ref` (ones when None), each part checked against ref's shape."""
    parts = jax.tree_util.tree_leaves(ref)
    if v is None:
        values = [jnp.ones(p.shape, p.dtype) for p in parts]
    else:
        values = [jnp.asarray(t) for t in (v if isinstance(v, Sequence) else (v,))]
        if len(values) != len(parts) or any(a.shape != p.shape for a, p in zip(values, parts)):
            raise ValueError(f"pdx.incubate.autograd.{name}: `v` must match the shapes of {what} "
                             f"{[tuple(p.shape) for p in parts]}; got {[tuple(a.shape) for a in values]}")
        values = [a.astype(p.dtype) for a, p in zip(values, parts)]
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(ref), values)


def vjp(func: Callable, xs, v=None):
    """Vector-Jacobian product: `(func(*xs), v^T J)` (Paddle's `paddle.incubate.autograd.vjp`).

    Args:
      func: maps the tensor(s) `xs` to a tensor or a sequence of tensors.
      xs: a tensor, or a sequence passed as `func(*xs)`.
      v: cotangents shaped like func's outputs; None means ones.

    Returns:
      `(outputs, vjp)`: vjp is a tensor for a tensor `xs`, a list for a sequence.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> _, g = pdx.incubate.autograd.vjp(lambda x: x * x, jnp.array([1.0, 2.0]))
        >>> g.tolist()
        [2.0, 4.0]
    """
    seq, items = _inputs(func, xs, "vjp")
    ys, pullback = jax.vjp(func, *items)
    grads = pullback(_like(v, ys, "func's outputs", "vjp"))
    return ys, list(grads) if seq else grads[0]


def jvp(func: Callable, xs, v=None):
    """Jacobian-vector product: `(func(*xs), J v)` (Paddle's `paddle.incubate.autograd.jvp`).

    Args:
      func: maps the tensor(s) `xs` to a tensor or a sequence of tensors.
      xs: a tensor, or a sequence passed as `func(*xs)`.
      v: tangents shaped like `xs`; None means ones.

    Returns:
      `(outputs, jvp)`: jvp has the structure of the outputs.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> _, t = pdx.incubate.autograd.jvp(lambda x: x * x, jnp.array([1.0, 2.0]))
        >>> t.tolist()
        [2.0, 4.0]
    """
    _, items = _inputs(func, xs, "jvp")
    tangents = _like(v, list(items), "xs", "jvp")
    return jax.jvp(func, items, tuple(tangents))


def _flat(parts, batched: bool):
    leaves = jax.tree_util.tree_leaves(parts)
    if batched:
        return jnp.concatenate([jnp.reshape(p, (p.shape[0], -1)) for p in leaves], axis=1)
    return jnp.concatenate([jnp.reshape(p, (-1,)) for p in leaves])


def _jacobian_matrix(func: Callable, items: tuple, batched: bool, name: str):
    """Paddle's flattened Jacobian: `[M, N]`, or `[B, M, N]` batched."""
    if batched and any(x.ndim == 0 for x in items):
        raise ValueError(f"pdx.incubate.autograd.{name}: is_batched=True needs a batch axis first in every input; "
                         f"got shapes {[tuple(x.shape) for x in items]}")
    sizes = [x.size // (x.shape[0] if batched else 1) for x in items]
    batch = items[0].shape[0] if batched else None

    def split(flat):
        out, start = [], 0
        for x, n in zip(items, sizes):
            piece = flat[:, start:start + n] if batched else flat[start:start + n]
            out.append(jnp.reshape(piece, x.shape))
            start += n
        return out

    def f(flat):
        ys = _flat(func(*split(flat)), batched)
        # Paddle's batched rows differentiate the batch sum of ys[:, i] (the per-sample Jacobian for
        # independent samples)
        return ys.sum(0) if batched else ys

    jac = jax.jacrev(f)(_flat(list(items), batched))  # [M, N] or [M, B, N]
    return jnp.moveaxis(jac, 1, 0) if batch is not None else jac


class Jacobian:
    """Paddle's `paddle.incubate.autograd.Jacobian(func, xs, is_batched=False)`: `J[:]`, `J[i, :]`, `J.shape`.

    Args:
      func: maps the tensor(s) `xs` to a tensor or a sequence of tensors.
      xs: a tensor, or a sequence passed as `func(*xs)`.
      is_batched: the first axis of every input and output is a batch axis.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> J = pdx.incubate.autograd.Jacobian(lambda x: x ** 2, jnp.array([1.0, 2.0]))
        >>> J[:].tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """

    _name = "Jacobian"

    def __init__(self, func: Callable, xs, is_batched: bool = False) -> None:
        _, items = _inputs(func, xs, self._name)
        self._value = jax.jit(lambda *a: _jacobian_matrix(self._of(func), a, bool(is_batched), self._name))(*items)

    def _of(self, func: Callable) -> Callable:
        return func

    @property
    def shape(self):
        """The shape of the flattened matrix."""
        return self._value.shape

    def __getitem__(self, index):
        return self._value[index]

    def __array__(self, dtype=None, copy=None):
        import numpy as np

        return np.asarray(self._value, dtype=dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={list(self.shape)})"


class Hessian(Jacobian):
    """Paddle's `paddle.incubate.autograd.Hessian(func, xs, is_batched=False)`: the Jacobian of the gradient.

    `func` returns one element (one per sample when batched); `H[:]` is `[N, N]`
    (`[B, N, N]` batched) over the flattened, concatenated inputs.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> H = pdx.incubate.autograd.Hessian(lambda x: (x ** 3).sum(), jnp.array([1.0, 2.0]))
        >>> H[:].tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """

    _name = "Hessian"

    def _of(self, func: Callable) -> Callable:
        def gradient(*xs):
            out = func(*xs)
            if jax.tree_util.tree_structure(out).num_leaves != 1:
                raise ValueError("pdx.incubate.autograd.Hessian: `func` must return one tensor")
            return list(jax.grad(lambda *a: jnp.sum(func(*a)), argnums=tuple(range(len(xs))))(*xs))
        return gradient


def enable_prim() -> None:
    """Paddle's switch to primitive-operator autodiff; pdx always differentiates JAX primitives (recorded only).

    Example:
        >>> import pdx
        >>> pdx.incubate.autograd.enable_prim(); pdx.incubate.autograd.prim_enabled()
        True
    """
    _PRIM["enabled"] = True


def disable_prim() -> None:
    """Turn the recorded switch of `enable_prim` off.

    Example:
        >>> import pdx
        >>> pdx.incubate.autograd.disable_prim(); pdx.incubate.autograd.prim_enabled()
        False
    """
    _PRIM["enabled"] = False


def prim_enabled() -> bool:
    """Whether `enable_prim` was called last (it changes nothing in pdx).

    Example:
        >>> import pdx
        >>> isinstance(pdx.incubate.autograd.prim_enabled(), bool)
        True
    """
    return _PRIM["enabled"]
