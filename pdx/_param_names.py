"""Parameters' `state_dict` names, recovered from the Layer that listed them.

An `nnx.Param` carries no name of its own: its name is its path in a Layer
(`"fc.weight"` in a generator, `"0.fc.weight"` in `nn.Sequential(gen, dis)`).
Paddle's `layer.parameters()` is a plain list, and Paddle code builds
optimizers from such lists (`parameters=gen.parameters()`, filtered by
`trainable`, or two layers' lists concatenated). So `Layer.parameters()`
records here which Layer listed each parameter (a weak reference: nothing is
kept alive), and an optimizer built from a list names each parameter by its
`state_dict` name in the Layer that listed it last, and `param.name` is that
name (Paddle's idiom `decay = [p.name for n, p in model.named_parameters()
if ...]` with `AdamW(apply_decay_param_fun=lambda name: name in decay)`: pdx's
AdamW passes the same names).

A record is a hint checked against the Layer when it is read: a parameter
the Layer no longer holds (or a Layer that is gone) gives no name, so a
reused object id never names the wrong parameter.

Example:
    >>> import pdx
    >>> from pdx import _param_names
    >>> net = pdx.nn.Sequential(pdx.nn.Linear(2, 2))
    >>> _param_names.listed_names(net.parameters())
    ['0.weight', '0.bias']
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence

from flax import nnx

__all__ = ["listed_names", "param_name", "record_listing"]

# id(parameter) -> weak reference to the Layer that last listed it
_LISTED: dict[int, weakref.ref] = {}
_PRUNE_AT = [1024]  # prune dead Layers' entries when the table grows past this size


def record_listing(layer, params: Iterable) -> None:
    """Remember that `layer` listed `params` (its own parameters, by `named_parameters()`)."""
    ref = weakref.ref(layer)
    for p in params:
        _LISTED[id(p)] = ref
    if len(_LISTED) > _PRUNE_AT[0]:
        for key in [k for k, r in _LISTED.items() if r() is None]:
            del _LISTED[key]
        _PRUNE_AT[0] = max(1024, 2 * len(_LISTED))


def listed_names(params: Sequence) -> list[str | None]:
    """Each parameter's dotted name in the Layer that last listed it (None if none did,
    or that Layer no longer holds it)."""
    names_by_layer: dict[int, dict[int, str]] = {}
    out = []
    for p in params:
        ref = _LISTED.get(id(p))
        layer = ref() if ref is not None else None
        if layer is None:
            out.append(None)
            continue
        names = names_by_layer.get(id(layer))
        if names is None:
            names = names_by_layer[id(layer)] = {id(v): n for n, v in layer.named_parameters()}
        out.append(names.get(id(p)))
    return out


def param_name(param) -> str:
    """`param.name`: its `name` metadata when given, else its dotted name in the Layer that last listed it
    (`param_<id>` before any Layer has listed it).

    Example:
        >>> import pdx
        >>> net = pdx.nn.Sequential(pdx.nn.Linear(2, 2))
        >>> [p.name for _, p in net.named_parameters()]
        ['0.weight', '0.bias']
    """
    given = param.get_metadata().get("name")
    if given is not None:
        return given
    name = listed_names([param])[0]
    # (no Layer has listed it: a name of its own, as Paddle's generated ones, unique while it lives)
    return name if name is not None else f"param_{id(param):x}"


if "name" not in vars(nnx.Param):  # Paddle's `param.name`, on flax's parameter type (read only)
    nnx.Param.name = property(param_name, doc=param_name.__doc__.split("\n")[0])
