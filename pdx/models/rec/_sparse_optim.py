"""Row-wise (lazy) optimizers for embedding tables: they read and write only the rows a batch touched.

A `SparseOptimizer` is a pair of pure functions, optax-style:

    state = opt.init(table)                                   # (rows, dim) table -> state
    table, state = opt.update(table, state, ids, row_grads)   # ids (N,), row_grads (N, dim)

`ids` may repeat (two examples with the same feature, two fields sharing a
table): `dedup_rows` sums their gradients first (a fixed-size sort-based
unique, then `segment_sum`), so the update equals the full-table gradient's
update on those rows. Padding slots of the fixed-size unique get the
out-of-range row index `rows` and are dropped by the scatter. Per step the
work and the bytes written are proportional to N, never to the table.

Untouched rows keep their values and their optimizer state exactly
(Paddle's `lazy_mode=True` / SelectedRows semantics).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["SparseOptimizer", "SparseAdagradState", "LazyAdamState", "dedup_rows", "sparse_adagrad", "lazy_adam"]


class SparseOptimizer(NamedTuple):
    """A row-wise optimizer for one embedding table: `init(table)` and `update(table, state, ids, grads)`."""

    init: Callable[[jax.Array], Any]
    update: Callable[[jax.Array, Any, jax.Array, jax.Array], tuple[jax.Array, Any]]


class SparseAdagradState(NamedTuple):
    accumulator: jax.Array   # (rows, dim), or (rows,) with rowwise=True


class LazyAdamState(NamedTuple):
    moment1: jax.Array       # (rows, dim)
    moment2: jax.Array       # (rows, dim)
    count: jax.Array         # int32 scalar: updates applied to the table (global, not per row)


def dedup_rows(ids, grads, num_rows: int):
    """Sum the gradients of repeated ids: (N,) ids, (N, dim) grads -> (N,) unique ids, (N, dim) sums.

    The unique ids come first, sorted; the remaining slots hold `num_rows`
    (out of range: a `mode="drop"` scatter ignores them) with zero gradients.

    Example:
      >>> import jax.numpy as jnp
      >>> u, g = dedup_rows(jnp.array([3, 1, 3]), jnp.ones((3, 2)), 10)
      >>> u.tolist(), g[:, 0].tolist()
      ([1, 3, 10], [1.0, 2.0, 0.0])
    """
    ids = jnp.asarray(ids).reshape(-1)
    n = ids.shape[0]
    grads = grads.reshape(n, -1)
    # One single-operand sort plus a binary search for each id's slot: ~4x faster on CPU than
    # jnp.unique(return_inverse=True), which sorts (ids, positions) pairs.
    ordered = jax.lax.sort(ids)
    first = jnp.concatenate([jnp.ones((1,), bool), ordered[1:] != ordered[:-1]])
    slot = jnp.cumsum(first) - 1                                          # slot of each sorted id
    unique = jnp.full((n,), num_rows, ids.dtype).at[jnp.where(first, slot, n)].set(ordered, mode="drop")
    inverse = slot[jnp.searchsorted(ordered, ids)]
    return unique, jax.ops.segment_sum(grads, inverse, num_segments=n)


def _check(name: str, **values):
    for arg, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{name}: {arg} must be a non-negative number; got {value!r}")


def _gather(array, unique):
    return jnp.take(array, unique, axis=0, mode="clip")


def _scatter(array, unique, rows):
    return array.at[unique].set(rows.astype(array.dtype), mode="drop")


def sparse_adagrad(learning_rate: float, *, epsilon: float = 1e-6, initial_accumulator_value: float = 0.0,
                   rowwise: bool = False) -> SparseOptimizer:
    """Adagrad on the touched rows only (Paddle's Adagrad math, lazily).

    Per touched row r with summed gradient g: `acc[r] += g^2;
    table[r] -= lr * g / (sqrt(acc[r]) + epsilon)`. Since a zero gradient
    changes neither, this equals `pdx.optimizer.Adagrad` over the whole table.
    `rowwise=True` keeps one accumulator per row, `acc[r] += mean(g^2)` (the
    "row-wise Adagrad" of large recommendation systems: state is rows, not
    rows x dim).

    Args:
      learning_rate: step size.
      epsilon: keyword-only, added to the denominator outside the square root.
      initial_accumulator_value: keyword-only starting accumulator.
      rowwise: keyword-only, one accumulator per row instead of per element.

    Example:
      >>> import jax.numpy as jnp
      >>> opt = sparse_adagrad(0.1)
      >>> table = jnp.zeros((4, 2)); state = opt.init(table)
      >>> table, state = opt.update(table, state, jnp.array([1]), jnp.ones((1, 2)))
      >>> [round(float(x), 3) for x in table[:, 0]]
      [0.0, -0.1, 0.0, 0.0]
    """
    _check("sparse_adagrad", learning_rate=learning_rate, epsilon=epsilon,
           initial_accumulator_value=initial_accumulator_value)

    def init(table):
        shape = table.shape[:1] if rowwise else table.shape
        return SparseAdagradState(jnp.full(shape, initial_accumulator_value, jnp.float32))

    def update(table, state, ids, grads):
        unique, g = dedup_rows(ids, grads, table.shape[0])
        g = g.astype(jnp.float32)
        acc = _gather(state.accumulator, unique)
        if rowwise:
            acc = acc + jnp.mean(g * g, axis=-1)
            denom = jnp.sqrt(acc)[:, None] + epsilon
        else:
            acc = acc + g * g
            denom = jnp.sqrt(acc) + epsilon
        rows = _gather(table, unique).astype(jnp.float32) - learning_rate * g / denom
        return _scatter(table, unique, rows), SparseAdagradState(_scatter(state.accumulator, unique, acc))

    return SparseOptimizer(init, update)


def lazy_adam(learning_rate: float, *, beta1: float = 0.9, beta2: float = 0.999,
              epsilon: float = 1e-8) -> SparseOptimizer:
    """Adam on the touched rows only: Paddle's `Adam(lazy_mode=True)`.

    Touched rows update their moments and values with Paddle's Adam kernel;
    untouched rows keep values and moments (their moments do not decay).
    The bias correction uses the table's global update count t (Paddle's
    `beta1_pow`/`beta2_pow` accumulators advance every step, whether a row
    was touched or not): `lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)`,
    `table[r] -= lr_t * m[r] / (sqrt(v[r]) + epsilon * sqrt(1 - beta2^t))`.

    Args:
      learning_rate: step size.
      beta1, beta2, epsilon: keyword-only, Paddle's defaults.

    Example:
      >>> import jax.numpy as jnp
      >>> opt = lazy_adam(0.1)
      >>> table = jnp.zeros((4, 2)); state = opt.init(table)
      >>> table, state = opt.update(table, state, jnp.array([2]), jnp.ones((1, 2)))
      >>> [round(float(x), 3) for x in table[:, 0]], int(state.count)
      ([0.0, 0.0, -0.1, 0.0], 1)
    """
    _check("lazy_adam", learning_rate=learning_rate, epsilon=epsilon)
    for arg, value in (("beta1", beta1), ("beta2", beta2)):
        if not 0.0 <= value < 1.0:
            raise ValueError(f"lazy_adam: {arg} must be in [0, 1); got {value!r}")

    def init(table):
        return LazyAdamState(jnp.zeros(table.shape, jnp.float32), jnp.zeros(table.shape, jnp.float32),
                             jnp.zeros((), jnp.int32))

    def update(table, state, ids, grads):
        unique, g = dedup_rows(ids, grads, table.shape[0])
        g = g.astype(jnp.float32)
        count = state.count + 1
        t = count.astype(jnp.float32)
        m = beta1 * _gather(state.moment1, unique) + (1.0 - beta1) * g
        v = beta2 * _gather(state.moment2, unique) + (1.0 - beta2) * g * g
        correction2 = jnp.sqrt(1.0 - beta2 ** t)
        lr_t = learning_rate * correction2 / (1.0 - beta1 ** t)
        rows = _gather(table, unique).astype(jnp.float32) - lr_t * m / (jnp.sqrt(v) + epsilon * correction2)
        return _scatter(table, unique, rows), LazyAdamState(_scatter(state.moment1, unique, m),
                                                            _scatter(state.moment2, unique, v), count)

    return SparseOptimizer(init, update)
