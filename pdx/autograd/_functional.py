"""jacobian / hessian / grad in functional form, and backward's pointer to pdx.grad.

Paddle differentiates tensors recorded on a tape (`jacobian(ys, xs)` with
`ys` computed from `xs`). pdx records no tape, so these take the function
instead: `jacobian(func, xs)` evaluates `ys = func(*xs)` and differentiates
it with `jax.jacrev`. The result has the shape and indexing of Paddle's lazy
`Jacobian` (`J[:]` is the full matrix), computed at once rather than row
by row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

__all__ = ["Hessian", "Jacobian", "backward", "grad", "hessian", "jacobian"]

_NEEDS_FUNCTION = (
    "pdx.autograd.{name}: pdx keeps no autograd tape, so pass the function instead of its output: "
    "{name}(func, xs, ...) with ys = func(*xs) (got {kind} as the first argument). "
    "pdx.grad / pdx.value_and_grad transform functions the same way."
)


@jax.tree_util.register_pytree_node_class
class Jacobian:
    """A Jacobian matrix with Paddle's shape and indexing (`J[:]`, `J[:, i]`, `J.shape`).

    Unbatched its shape is `ys.shape[0:1] + xs.shape[0:1]` (0-D dims dropped),
    batched `[B] + ys.shape[1:2] + xs.shape[1:2]`. Arithmetic and array
    conversion use the full matrix. It is a pytree, so jit may return it.
    """

    def __init__(self, value):
        self._value = value

    @property
    def shape(self) -> list[int]:
        """The shape of the full matrix, as a list."""
        return list(self._value.shape)

    def __getitem__(self, index):
        if self._value.ndim == 0:
            raise IndexError("0-D tensor can not be indexed; use the Jacobian in arithmetic or jnp.asarray(J)")
        return self._value[index]

    def __array__(self, dtype=None, copy=None):
        import numpy as np

        return np.asarray(self._value, dtype=dtype)

    def __add__(self, other):
        return self._value + _value(other)

    def __sub__(self, other):
        return self._value - _value(other)

    def __mul__(self, other):
        return self._value * _value(other)

    __radd__ = __add__
    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape})"

    def tree_flatten(self):
        return (self._value,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0])


@jax.tree_util.register_pytree_node_class
class Hessian(Jacobian):
    """A Hessian matrix: a `Jacobian` of a Jacobian, with the same indexing."""


def _value(x):
    return x._value if isinstance(x, Jacobian) else x


def _check_function(func, name: str):
    if not callable(func):
        kind = f"a {type(func).__name__}"
        raise TypeError(_NEEDS_FUNCTION.format(name=name, kind=kind))


def _check_batch_axis(batch_axis, name: str):
    if batch_axis is not None and (isinstance(batch_axis, bool) or batch_axis != 0):
        raise ValueError(f"pdx.autograd.{name}: `batch_axis` must be None or 0 (as in Paddle); got {batch_axis!r}")


def _as_inputs(xs, name: str):
    seq = isinstance(xs, Sequence)
    items = tuple(xs) if seq else (xs,)
    try:
        items = tuple(jnp.asarray(x) for x in items)
    except TypeError:
        raise TypeError(f"pdx.autograd.{name}: `xs` must be a tensor or a tuple of tensors; got {xs!r}") from None
    for x in items:
        if not jnp.issubdtype(x.dtype, jnp.inexact):
            raise ValueError(f"pdx.autograd.{name}: `xs` must be floating point to differentiate; got dtype {x.dtype}")
    return seq, items


def _matrix(f: Callable, xs: tuple, j: int, batched: bool, name: str):
    """d f(*xs) / d xs[j] laid out as Paddle's flattened Jacobian."""
    x = xs[j]

    def with_x(xj):
        return f(*xs[:j], xj, *xs[j + 1:])

    ys = jax.eval_shape(with_x, x)
    if not batched:
        for arg, shape in (("xs", x.shape), ("ys", ys.shape)):
            if len(shape) > 1:
                raise ValueError(f"pdx.autograd.{name}: `{arg}` must be 0-D or 1-D when batch_axis=None; "
                                 f"got shape {tuple(shape)} (use batch_axis=0 for [B, N] data)")
        jac = jax.jacrev(lambda xj: jnp.reshape(with_x(xj), (-1,)))(x)
        return jnp.reshape(jac, tuple(ys.shape[0:1]) + tuple(x.shape[0:1]))
    for arg, shape in (("xs", x.shape), ("ys", ys.shape)):
        if not 1 <= len(shape) <= 2:
            raise ValueError(f"pdx.autograd.{name}: `{arg}` must be 1-D or 2-D when batch_axis=0; got shape {tuple(shape)}")
    b = x.shape[0]
    # Paddle's batched Jacobian differentiates sum over the batch of ys[:, i]
    # with respect to xs[b]: the per-sample Jacobian when samples are independent.
    jac = jax.jacrev(lambda xj: jnp.reshape(with_x(xj), (b, -1)).sum(0))(x)  # (M, B, ...)
    jac = jnp.moveaxis(jnp.reshape(jac, (jac.shape[0], b, -1)), 0, 1)  # (B, M, N)
    return jnp.reshape(jac, (b,) + tuple(ys.shape[1:2]) + tuple(x.shape[1:2]))


def _split_outputs(func, xs):
    out = jax.eval_shape(func, *xs)
    if isinstance(out, Sequence):
        return True, len(out)
    return False, 1


def jacobian(func: Callable, xs, batch_axis: int | None = None):
    """Jacobian of `ys = func(*xs)` with respect to `xs`, in Paddle's layout.

    Paddle's `jacobian(ys, xs)` reads a tape; pdx takes the function that
    computes `ys` instead (pdx records no tape).

    Args:
      func: maps the tensor(s) `xs` to a tensor or a tuple of tensors `ys`.
      xs: a tensor or a tuple of tensors (passed as `func(*xs)`).
      batch_axis: None (xs and ys 0-D or 1-D; result `[M, N]`) or 0 (xs and
        ys `[B]` or `[B, N]`; result `[B, M, N]`).

    Returns:
      A `Jacobian`; a tuple of them when one of xs/ys is a tuple; a tuple of
      tuples (indexed `[i_ys][i_xs]`) when both are.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> J = pdx.autograd.jacobian(lambda x: x ** 2, jnp.array([1., 2.]))
        >>> J[:]
        Array([[2., 0.],
               [0., 4.]], dtype=float32)
    """
    _check_function(func, "jacobian")
    _check_batch_axis(batch_axis, "jacobian")
    xs_seq, items = _as_inputs(xs, "jacobian")
    ys_seq, n_out = _split_outputs(func, items)
    batched = batch_axis is not None

    def one_at(a, i_out, j):
        f = (lambda *args: func(*args)[i_out]) if ys_seq else func
        return Jacobian(_matrix(f, a, j, batched, "jacobian"))

    # One compiled program for all blocks instead of op-by-op eager dispatch.
    rows = jax.jit(lambda *a: [tuple(one_at(a, i, j) for j in range(len(a))) for i in range(n_out)])(*items)
    if ys_seq and xs_seq:
        return tuple(rows)
    if ys_seq:
        return tuple(r[0] for r in rows)
    return rows[0] if xs_seq else rows[0][0]


def hessian(func: Callable, xs, batch_axis: int | None = None):
    """Hessian of the scalar `func(*xs)` (per sample with batch_axis=0), in Paddle's layout.

    Args:
      func: maps `xs` to a tensor with one element (batch_axis=None) or one
        element per sample (`[B]` or `[B, 1]`, batch_axis=0).
      xs: a tensor or a tuple of tensors.
      batch_axis: None or 0.

    Returns:
      A `Hessian` (`[N, N]`, or `[B, N, N]` batched); for a tuple xs a tuple
      of tuples `H[i][j]` = d2 y / dx_i dx_j.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> H = pdx.autograd.hessian(lambda x: (x ** 3).sum(), jnp.array([1., 2.]))
        >>> H[:]
        Array([[ 6.,  0.],
               [ 0., 12.]], dtype=float32)
    """
    _check_function(func, "hessian")
    _check_batch_axis(batch_axis, "hessian")
    xs_seq, items = _as_inputs(xs, "hessian")
    ys = jax.eval_shape(func, *items)
    if isinstance(ys, Sequence):
        raise ValueError("pdx.autograd.hessian: `func` must return a single tensor, not a tuple")
    if batch_axis is None:
        if ys.size != 1:
            raise ValueError(f"pdx.autograd.hessian: `func` must return one element when batch_axis=None; "
                             f"got shape {tuple(ys.shape)}")
        scalar = lambda *a: jnp.reshape(func(*a), ())  # noqa: E731
    else:
        if not ys.shape or ys.size != ys.shape[0]:
            raise ValueError(f"pdx.autograd.hessian: `func` must return one element per sample ([B] or [B, 1]) "
                             f"when batch_axis=0; got shape {tuple(ys.shape)}")
        scalar = lambda *a: jnp.reshape(func(*a), (-1,))  # noqa: E731
    batched = batch_axis is not None

    def first(i):
        return lambda *a: _matrix(scalar, a, i, batched, "hessian")

    grid = jax.jit(lambda *a: tuple(tuple(Hessian(_matrix(first(i), a, j, batched, "hessian")) for j in range(len(a)))
                                      for i in range(len(a))))(*items)
    return grid if xs_seq else grid[0][0]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, no_grad_vars=None):
    """Vector-Jacobian product of `outputs = func(*inputs)`, Paddle's `autograd.grad` in functional form.

    pdx keeps no tape: pass the function as `outputs`. Returns a list with
    one gradient per input (of `sum(outputs * grad_outputs)`, grad_outputs
    defaulting to ones). `create_graph` / `retain_graph` have nothing to do:
    the result is an ordinary traced value, so nesting `grad` (or `pdx.grad`)
    gives higher derivatives. Unused inputs get zeros (Paddle: None with
    allow_unused=True).

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> pdx.autograd.grad(lambda x: x ** 3, [jnp.array([1., 2.])])
        [Array([ 3., 12.], dtype=float32)]
    """
    _check_function(outputs, "grad")
    seq, items = _as_inputs(inputs, "grad")
    ys, vjp = jax.vjp(outputs, *items)
    ys_seq = isinstance(ys, Sequence)
    ys_list = list(ys) if ys_seq else [ys]
    if grad_outputs is None:
        cot = [jnp.ones_like(y) for y in ys_list]
    else:
        go = list(grad_outputs) if isinstance(grad_outputs, Sequence) else [grad_outputs]
        if len(go) != len(ys_list):
            raise ValueError(f"pdx.autograd.grad: `grad_outputs` needs one entry per output ({len(ys_list)}); got {len(go)}")
        cot = [jnp.ones_like(y) if g is None else jnp.broadcast_to(jnp.asarray(g, y.dtype), y.shape)
               for g, y in zip(go, ys_list)]
    grads = vjp(type(ys)(cot) if ys_seq else cot[0])
    return list(grads)


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Not available in pdx: there is no tape to run backward on.

    Compute gradients with `pdx.grad(loss_fn)(*args)` or
    `pdx.value_and_grad(loss_fn)(*args)` and pass them to `optimizer.step(grads)`.

    Raises:
      RuntimeError, always, naming the pdx way.

    Example:
        >>> import pdx, jax.numpy as jnp
        >>> loss, grads = pdx.value_and_grad(lambda w: (w ** 2).sum())(jnp.ones(3))
    """
    raise RuntimeError(
        "pdx.autograd.backward: pdx keeps no autograd tape, so tensors have no backward(). "
        "Write the loss as a function and use pdx.grad(loss_fn)(*args) or "
        "pdx.value_and_grad(loss_fn)(*args); pass the gradients to optimizer.step(grads)."
    )
