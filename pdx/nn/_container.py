"""Containers: Sequential, LayerList, LayerDict (Paddle's names and naming).

Children are plain attributes of the container named '0', '1', ... (or the
given names), so state_dict keys read `0.weight`, `layers.1.bias`, exactly as
in Paddle, and nnx sees an ordinary module tree. Their order is a static
tuple of names, so it survives nnx's split/merge (which sorts attributes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flax import nnx

from pdx._args import is_int
from pdx.nn._common import layer_error
from pdx.nn._layer import Layer

__all__ = ["LayerDict", "LayerList", "Sequential"]


def _check_child(owner: Layer, name, layer) -> str:
    """A valid child name that does not shadow a Layer attribute or method."""
    kind = type(owner).__name__
    if not isinstance(layer, nnx.Module):
        raise TypeError(f"pdx.nn.{kind}: child {name!r} must be a Layer; got {type(layer).__name__}")
    name = str(name)
    if not name or "." in name:
        raise layer_error(kind, f"child name {name!r} must be non-empty and contain no '.'")
    current = vars(owner).get(name)
    if hasattr(type(owner), name) or (current is not None and not isinstance(current, nnx.Module)):
        raise layer_error(kind, f"child name {name!r} would shadow the attribute {kind}.{name}; choose another name")
    return name


class _Container(Layer):
    """Children as attributes, in the order recorded by `_order`.

    nnx rebuilds a module's attributes in sorted order when it merges a graph
    (inside nnx.jit / pdx.jit), which would run '10' before '2'; the static
    `_order` tuple travels in the graph definition and keeps Paddle's order.
    """

    _order: tuple[str, ...] = ()

    def __init__(self):
        super().__init__()
        self._order = ()

    def _children(self) -> list[tuple[str, nnx.Module]]:
        return [(name, getattr(self, name)) for name in self._order]

    def _add(self, name, layer) -> None:
        name = _check_child(self, name, layer)
        setattr(self, name, layer)
        if name not in self._order:
            self._order = self._order + (name,)

    def _remove(self, name: str) -> None:
        delattr(self, name)
        self._order = tuple(n for n in self._order if n != name)

    def _reset(self, named) -> None:
        """Replace all children by `named` (a list of (name, layer)), in that order."""
        for name in self._order:
            delattr(self, name)
        self._order = ()
        for name, layer in named:
            self._add(name, layer)

    def named_children(self):
        yield from self._children()

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self):
        return iter([layer for _, layer in self._children()])


def _index(i, n: int, kind: str, *, insert: bool = False) -> int:
    if not is_int(i):
        raise TypeError(f"pdx.nn.{kind}: index must be an int; got {i!r}")
    hi = n + 1 if insert else n
    if not -n <= i < hi:
        raise IndexError(f"pdx.nn.{kind}: index {i} is out of range for {n} sublayers")
    return int(i) + n if i < 0 else int(i)


class Sequential(_Container):
    """Run sublayers in order, each on the previous one's output (Paddle's `nn.Sequential`).

    Args:
      *layers: Layers (named '0', '1', ...), or (name, layer) pairs, or one OrderedDict.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> net = pdx.nn.Sequential(pdx.nn.Linear(3, 4), pdx.nn.ReLU(), pdx.nn.Linear(4, 2))
      >>> net(jnp.ones((1, 3))).shape, list(net.state_dict())[:2]
      ((1, 2), ['0.weight', '0.bias'])
    """

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], Mapping):
            named = list(layers[0].items())
        elif layers and isinstance(layers[0], (list, tuple)):
            if not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in layers):
                raise layer_error("Sequential", "mixing (name, layer) pairs with plain layers is not supported; "
                                                "give every sublayer a name or none")
            named = [(name, layer) for name, layer in layers]
        else:
            named = [(str(i), layer) for i, layer in enumerate(layers)]
        for name, layer in named:
            self._add(name, layer)

    def __getitem__(self, name):
        named = self._children()
        if isinstance(name, slice):
            return type(self)(*[layer for _, layer in named[name]])
        if isinstance(name, str):
            if name not in dict(named):
                raise KeyError(f"pdx.nn.Sequential: no sublayer named {name!r}; have {[k for k, _ in named]}")
            return getattr(self, name)
        return named[_index(name, len(named), "Sequential")][1]

    def __setitem__(self, name, layer) -> None:
        if is_int(name):
            name = self._order[_index(name, len(self), "Sequential")]
        self._add(name, layer)

    def __delitem__(self, name) -> None:
        if is_int(name):
            name = self._order[_index(name, len(self), "Sequential")]
        if str(name) not in self._order:
            raise KeyError(f"pdx.nn.Sequential: no sublayer named {name!r}")
        self._remove(str(name))

    def append(self, module) -> "Sequential":
        """Add `module` at the end, named by its index."""
        self._add(str(len(self)), module)
        return self

    def insert(self, index, module) -> "Sequential":
        """Insert `module` before `index`; the children are renamed '0', '1', ... in order."""
        layers = list(self)
        layers.insert(_index(index, len(layers), "Sequential", insert=True), module)
        self._reset([(str(i), layer) for i, layer in enumerate(layers)])
        return self

    def extend(self, sequential: Iterable) -> "Sequential":
        """Append each layer of `sequential`."""
        for layer in sequential:
            self.append(layer)
        return self

    def forward(self, input):  # noqa: A002  (Paddle's argument name)
        for _, layer in self._children():
            input = layer(input)
        return input


class LayerList(_Container):
    """A list of sublayers, named '0', '1', ... (Paddle's `nn.LayerList`).

    Use it (not a Python list) to hold layers: their parameters are then
    registered, saved and sharded. Supports indexing, slicing, len, iteration,
    append, extend, insert, pop and `+`.

    Args:
      sublayers: an iterable of Layers.

    Example:
      >>> import pdx
      >>> layers = pdx.nn.LayerList([pdx.nn.Linear(2, 2) for _ in range(3)])
      >>> len(layers), list(layers.state_dict())[-1]
      (3, '2.bias')
    """

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.extend(sublayers)

    def __getitem__(self, idx):
        layers = list(self)
        if isinstance(idx, slice):
            return type(self)(layers[idx])
        return layers[_index(idx, len(layers), "LayerList")]

    def __setitem__(self, idx, sublayer) -> None:
        self._add(str(_index(idx, len(self), "LayerList")), sublayer)

    def __delitem__(self, idx) -> None:
        layers = list(self)
        if isinstance(idx, slice):
            del layers[idx]
        else:
            del layers[_index(idx, len(layers), "LayerList")]
        self._reset([(str(i), layer) for i, layer in enumerate(layers)])

    def __iadd__(self, modules) -> "LayerList":
        return self.extend(modules)

    def __add__(self, other) -> "LayerList":
        return LayerList([*self, *other])

    def append(self, sublayer) -> "LayerList":
        """Add `sublayer` at the end."""
        self._add(str(len(self)), sublayer)
        return self

    def extend(self, sublayers) -> "LayerList":
        """Append each layer of `sublayers`."""
        if isinstance(sublayers, nnx.Module) and not isinstance(sublayers, (LayerList, Sequential)):
            raise TypeError("pdx.nn.LayerList.extend needs an iterable of Layers; got a single Layer "
                            "(use append)")
        for layer in sublayers:
            self.append(layer)
        return self

    def insert(self, index, sublayer) -> None:
        """Insert `sublayer` before `index` (Paddle's `insert`)."""
        layers = list(self)
        layers.insert(_index(index, len(layers), "LayerList", insert=True), sublayer)
        self._reset([(str(i), layer) for i, layer in enumerate(layers)])

    def pop(self, key=-1):
        """Remove and return the layer at `key`."""
        layer = self[key]
        del self[key]
        return layer


class LayerDict(_Container):
    """An ordered mapping name -> sublayer (Paddle's `nn.LayerDict`).

    Args:
      sublayers: a mapping, a LayerDict or an iterable of (name, layer) pairs.

    Example:
      >>> import pdx
      >>> d = pdx.nn.LayerDict({"proj": pdx.nn.Linear(2, 3), "act": pdx.nn.ReLU()})
      >>> list(d.keys()), list(d.state_dict())
      (['proj', 'act'], ['proj.weight', 'proj.bias'])
    """

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key: str):
        if key not in self:
            raise KeyError(f"pdx.nn.LayerDict: no sublayer named {key!r}; have {list(self.keys())}")
        return getattr(self, key)

    def __setitem__(self, key: str, sublayer) -> None:
        self._add(key, sublayer)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(f"pdx.nn.LayerDict: no sublayer named {key!r}")
        self._remove(key)

    def __iter__(self):
        return iter(self.keys())

    def __contains__(self, key) -> bool:
        return key in self._order

    def clear(self) -> None:
        self._reset([])

    def pop(self, key: str):
        layer = self[key]
        del self[key]
        return layer

    def keys(self):
        return list(self._order)

    def items(self):
        return self._children()

    def values(self):
        return [v for _, v in self._children()]

    def update(self, sublayers) -> None:
        """Add or replace sublayers from a mapping or (name, layer) pairs."""
        if isinstance(sublayers, (Mapping, LayerDict)):
            pairs = list(sublayers.items())
        else:
            pairs = list(sublayers)
            for i, kv in enumerate(pairs):
                if not isinstance(kv, (list, tuple)) or len(kv) != 2:
                    raise layer_error("LayerDict", f"entry {i} of sublayers must be a (name, layer) pair; got {kv!r}")
        for key, layer in pairs:
            self[key] = layer
