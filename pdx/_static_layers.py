"""Layers whose calls go through a compiled function, and whether `pdx.jit` compiles at all.

`pdx.jit.to_static(layer)` registers the layer's StaticFunction here;
`Layer.__call__` routes a registered layer through it, and `pdx.jit` /
`pdx.export` read it to reuse that function. Part of the framework core so
that nn, jit and export share it without reaching into each other's modules.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["static_layers", "to_static_switch"]

# Paddle's `paddle.jit.enable_to_static` switch (set by pdx.jit): with "enabled" False every pdx.jit
# function, and the eager gradient's compiled path, runs as plain Python.
to_static_switch = {"enabled": True}

# Layer -> the StaticFunction that runs its forward (weak: a dropped layer leaves no entry).
static_layers: "weakref.WeakKeyDictionary[Any, Callable]" = weakref.WeakKeyDictionary()
