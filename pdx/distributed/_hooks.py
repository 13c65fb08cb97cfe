"""Paddle-style forward pre/post hooks and contexts on one Layer instance, for the parallel plans.

A hooked layer's class is swapped for a subclass (made once per class)
whose `forward` runs the instance's hooks around the original one. Hooks
are kept as a static tuple on the layer, so they survive `nnx.split` /
`nnx.merge` and run inside `pdx.jit` traces. A hook must not capture the
layer object itself (it receives the layer as its first argument), since a
compiled step runs a merged copy.
"""

from __future__ import annotations

import contextlib

__all__ = ["add_context", "add_forward_post_hook", "add_forward_pre_hook"]

_HOOKED: dict[type, type] = {}
_PRE, _POST, _CTX = "_pdx_forward_pre_hooks", "_pdx_forward_post_hooks", "_pdx_forward_contexts"


def _hooked_forward(base: type):
    def forward(self, *args, **kwargs):
        for hook in getattr(self, _PRE, ()):
            new = hook(self, args)
            if new is not None:
                args = new if isinstance(new, tuple) else (new,)
        with contextlib.ExitStack() as stack:
            for make in getattr(self, _CTX, ()):
                stack.enter_context(make())
            out = base.forward(self, *args, **kwargs)
        for hook in getattr(self, _POST, ()):
            new = hook(self, args, out)
            if new is not None:
                out = new
        return out

    return forward


def _hook_class(layer) -> None:
    cls = type(layer)
    if cls in _HOOKED.values():
        return
    if cls not in _HOOKED:
        _HOOKED[cls] = type(cls.__name__, (cls,), {
            "forward": _hooked_forward(cls), "__module__": cls.__module__, "__qualname__": cls.__qualname__})
    object.__setattr__(layer, "__class__", _HOOKED[cls])


def _append(layer, attr: str, fn) -> None:
    if not callable(fn):
        raise TypeError(f"hook must be callable; got {fn!r}")
    _hook_class(layer)
    setattr(layer, attr, tuple(getattr(layer, attr, ())) + (fn,))


def add_forward_pre_hook(layer, hook) -> None:
    """Run `hook(layer, inputs) -> new inputs or None` before `layer.forward`."""
    _append(layer, _PRE, hook)


def add_forward_post_hook(layer, hook) -> None:
    """Run `hook(layer, inputs, output) -> new output or None` after `layer.forward`."""
    _append(layer, _POST, hook)


def add_context(layer, make_context) -> None:
    """Run `layer.forward` inside `make_context()` (e.g. `pdx.parallel.use_mesh(...)`)."""
    _append(layer, _CTX, make_context)
