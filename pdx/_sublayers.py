"""Walking a Layer tree and swapping sublayers in place (what layer-replacing transforms share).

`pdx.quantization` (QAT/PTQ, weight-only) and `pdx.peft` (LoRA) both visit
every sublayer with its dotted name and put a new layer in its place.

Example:
    >>> import pdx
    >>> net = pdx.nn.Sequential(pdx.nn.Linear(2, 2), pdx.nn.ReLU())
    >>> names = []
    >>> walk(net, "", lambda parent, name, full, child: names.append(full))
    >>> names
    ['0', '1']
"""

from __future__ import annotations

from flax import nnx

__all__ = ["set_child", "walk"]


def set_child(parent, name: str, child) -> None:
    """Replace the direct child `name` of `parent` ("a" or "container.key" as named_children names it)."""
    head, _, key = name.partition(".")
    if not key:
        if hasattr(type(parent), "__setitem__") and not hasattr(parent, head):
            parent[int(head) if head.isdigit() else head] = child
        else:
            setattr(parent, head, child)
        return
    container = getattr(parent, head)
    container[int(key) if isinstance(container, (list, nnx.List)) else key] = child


def walk(layer, prefix: str, visit) -> None:
    """Call visit(parent, child_name, dotted_name, child) for every sublayer, parents before children;
    a visit returning False skips that child's own sublayers."""
    for name, child in list(layer.named_children()):
        full = f"{prefix}.{name}" if prefix else name
        if visit(layer, name, full, child) is False:
            continue
        if hasattr(child, "named_children"):
            walk(child, full, visit)
