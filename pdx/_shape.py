"""`Shape`: what `x.shape` is with pdx imported — JAX's tuple of dims, which also takes Paddle's list uses.

A floor module (no pdx imports): `pdx._tensor` puts it on JAX's array and tracer
types; code that keys on exact tuples (`pdx._autograd`) treats it as one. It is
a pytree node that flattens as a tuple does, so a shape passed to `jax.jit` /
`pdx.jit` or mapped over with `jax.tree.map` behaves as JAX's tuple did.
"""

from __future__ import annotations

import jax

__all__ = ["Shape"]


class Shape(tuple):
    """`x.shape`: JAX's tuple of dims, which also takes Paddle's list uses of a shape.

    Paddle's `x.shape` is a list; ported code writes `x.shape[:-1] + [h, d]`,
    `[b] + x.shape[1:]` and `x.shape == [3]`. A `Shape` is a tuple, hashed and
    compared with tuples exactly as JAX's (so every JAX use is unchanged); adding a
    list gives a list and comparing with a list compares the dims; slices stay
    `Shape`s. `s[0] = -1` cannot work on a tuple and raises naming `list(x.shape)`.

    Example:
      >>> import pdx
      >>> x = pdx.ones([2, 3, 8])
      >>> x.shape[:-1] + [2, 4], x.shape == [2, 3, 8], x.shape == (2, 3, 8)
      ([2, 3, 2, 4], True, True)
    """

    __slots__ = ()
    __hash__ = tuple.__hash__

    def __add__(self, other):
        return list(self) + other if isinstance(other, list) else tuple.__add__(self, other)

    def __radd__(self, other):
        if isinstance(other, list):
            return other + list(self)
        return tuple.__add__(other, self) if isinstance(other, tuple) else NotImplemented

    def __eq__(self, other):
        return list(self) == other if isinstance(other, list) else tuple.__eq__(self, other)

    def __ne__(self, other):
        return list(self) != other if isinstance(other, list) else tuple.__ne__(self, other)

    def __getitem__(self, index):
        out = tuple.__getitem__(self, index)
        return Shape(out) if isinstance(index, slice) else out

    def __setitem__(self, index, value):
        raise TypeError(f"x.shape is a tuple in pdx (JAX's shape), so `shape[{index!r}] = {value!r}` cannot "
                        "change it: copy it into a list first, `shape = list(x.shape)`, then edit the list")


jax.tree_util.register_pytree_node(Shape, lambda s: (tuple(s), None), lambda _, children: Shape(children))
