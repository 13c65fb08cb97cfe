"""Which implementation of a hot op runs: the Pallas kernel, XLA, cuDNN or oneDNN.

Each op is an `Op`: a name and an immutable mapping from implementation name
to a callable. Every public kernel takes `impl="auto" | "pallas" | "xla" |
"cudnn" | "onednn"`:

* ``"auto"``: the op's implementations in the order `AUTO_ORDER` gives for
  the platform (GPU: "cudnn", "pallas", "xla"; CPU: "onednn", "xla"; TPU:
  "xla"), skipping those it does not register or whose `prefer_if`
  predicate says no.
* a name: that implementation alone (an op that does not register it, such
  as "cudnn" for the norms, runs its reference). On a CPU the Pallas kernels
  run in Pallas interpret mode, so tests and users can exercise them anywhere
  (slowly).

An implementation that cannot take a call (shapes, dtype, platform) raises
`Unsupported` (a `NotImplementedError`) before doing any work; "auto" then
tries the next one and warns once when it lands on the reference, while a
call that named that implementation gets a ValueError with the reason and
the fix. There are no per-op branches here: what an op supports lives next
to its implementations.

Optional backends add themselves: `register_impl(op, "onednn", fn,
prefer_if=...)`, called once when the backend's module is imported (the CPU
backend `pdx.kernels.onednn` is imported by `pdx.kernels`), so neither the
kernel modules nor the layers name a backend. A layer's own op
(`pdx.nn.functional`) declares its portable implementations and a `Delegate`
to the kernel op; the implementations registered there join the layer's op,
with the rules the backend gave for layers (`layer_prefer_if`, `layer_takes`).

A global override (`set_impl`, or the `use_impl` context manager) replaces
the requested implementation of every op, which is handy for debugging
("does the model still diverge with `use_impl('xla')`?"). The override is
read when a function is traced and is a trace-context setting
("pdx.kernels.impl", `pdx/_trace_context.py`): a function compiled before
the change traces once more when called under the new override.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

import jax

from pdx import _trace_context

__all__ = ["AUTO_ORDER", "IMPLS", "Delegate", "Impl", "Implementation", "Op", "Unsupported", "get_impl",
           "register_impl", "set_impl", "use_impl"]

Impl: TypeAlias = Literal["auto", "pallas", "xla", "cudnn", "onednn"]
Implementation: TypeAlias = Literal["pallas", "xla", "cudnn", "onednn"]

IMPLS: tuple[Impl, ...] = ("auto", "pallas", "xla", "cudnn", "onednn")
REFERENCE: Implementation = "xla"
AUTO_ORDER: Mapping[str, tuple[Implementation, ...]] = types.MappingProxyType({  # "auto" per platform
    "gpu": ("cudnn", "pallas", "xla"), "cpu": ("onednn", "xla"), "tpu": ("xla",)})

_OVERRIDE = _trace_context.KERNEL_IMPL
_NOTED: set[tuple[str, str]] = set()
_FIX = "use impl='auto' or impl='xla'"


class Unsupported(NotImplementedError):
    """Raised by an implementation that cannot run a call; the dispatch tries the next one.

    Args:
      reason: what about the call the implementation does not support.
      fix: what a caller who asked for this implementation should do instead.

    Example:
      >>> def kernel(x):
      ...     if x.ndim != 2:
      ...         raise Unsupported(f"x.ndim={x.ndim} is not 2")
      ...     return x
    """

    def __init__(self, reason: str, fix: str = _FIX):
        super().__init__(f"{reason}; {fix}")
        self.reason = reason
        self.fix = fix


@dataclasses.dataclass(frozen=True)
class Delegate:
    """How a layer's op hands a call to a kernel op, whose registered backends then serve the layer too.

    Attributes:
      op: the kernel op (`pdx.kernels.OPS[name]`).
      args: the layer op's arguments -> (args, kwargs) as the kernel op would
        receive them (arrays or `jax.ShapeDtypeStruct`s of the same shapes and
        dtypes); only the backends' rules read them.
      call: (impl, *layer op's arguments) -> the result, through the kernel's
        public function with that `impl` (so the kernel op dispatches once more
        and validates as it always does).

    Example:
      >>> mm = Op("matmul", {"xla": jnp.matmul}, delegate=Delegate(
      ...     OPS["matmul"], lambda a, b: ((a, b), {"transpose_a": False, "transpose_b": False}),
      ...     lambda impl, a, b: matmul(a, b, impl=impl)))
    """

    op: Op
    args: Callable[..., tuple[tuple, dict]]
    call: Callable[..., Any]


@dataclasses.dataclass(frozen=True, eq=False)
class Op:
    """One op's implementations and the choice between them.

    Attributes:
      name: the op's name, for messages (`pdx.kernels.<name>: ...`).
      implementations: implementation name -> callable taking the op's
        arguments; must hold the reference, "xla". Stored read-only; a backend
        adds its own with `register_impl`.
      prefer_if: implementation name -> predicate over the same arguments;
        "auto" tries that implementation only where the predicate is true
        (e.g. cuDNN attention only for bf16/fp16 with head_dim 64 or 128).
        A call that names the implementation ignores it.
      delegate: for a layer's op, the kernel op whose implementations beyond
        this op's own it offers as well (`Delegate`); None for a kernel op.
      layer_prefer_if, layer_takes: the rules `register_impl` was given for
        layer ops delegating to this op (see there).

    Example:
      >>> double = Op("double", {"xla": lambda x: 2 * x})
      >>> double("auto", 3)
      6
    """

    name: str
    implementations: Mapping[Implementation, Callable[..., Any]]
    prefer_if: Mapping[Implementation, Callable[..., bool]] = dataclasses.field(default_factory=dict)
    delegate: Delegate | None = None
    layer_prefer_if: Mapping[Implementation, Callable[..., bool]] = dataclasses.field(
        default_factory=dict, init=False, repr=False)
    layer_takes: Mapping[Implementation, Callable[..., bool]] = dataclasses.field(
        default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        unknown = sorted(set(self.implementations) - set(IMPLS[1:]))
        if unknown or REFERENCE not in self.implementations:
            raise ValueError(f"pdx.kernels.Op({self.name!r}): implementations must be named from "
                             f"{list(IMPLS[1:])} and include the reference {REFERENCE!r}; got "
                             f"{list(self.implementations)}")
        for field in ("implementations", "prefer_if", "layer_prefer_if", "layer_takes"):
            object.__setattr__(self, field, types.MappingProxyType(dict(getattr(self, field))))

    def _delegated(self, name: str) -> bool:
        """Whether `name` is the delegate kernel op's (a registered backend), not this op's own."""
        return (self.delegate is not None and name not in self.implementations
                and name in self.delegate.op.implementations)

    def _plan(self, impl: Impl, args, kwargs):
        """(the requested impl, the implementations to try, the kernel op's arguments or None)."""
        impl = requested(impl, op=self.name)
        delegated = impl == "auto" or self._delegated(impl)
        kernel_args = self.delegate.args(*args, **kwargs) if delegated and self.delegate is not None else None
        if impl != "auto":
            return impl, (impl if impl in self.implementations or delegated else REFERENCE,), kernel_args
        names = []
        for n in AUTO_ORDER.get(platform(), (REFERENCE,)):
            if n in self.implementations:
                if n not in self.prefer_if or self.prefer_if[n](*args, **kwargs):
                    names.append(n)
            elif self._delegated(n):
                kernel = self.delegate.op
                rule = kernel.layer_prefer_if.get(n, kernel.prefer_if.get(n))
                if rule is None or rule(*kernel_args[0], **kernel_args[1]):
                    names.append(n)
        return impl, tuple(names), kernel_args

    def candidates(self, impl: Impl, *args, **kwargs) -> tuple[Implementation, ...]:
        """The implementations a call with `impl` tries, in order (the global override applied)."""
        return self._plan(impl, args, kwargs)[1]

    def __call__(self, impl: Impl, *args, **kwargs):
        """Run the first implementation that takes the call.

        Args:
          impl: the call's `impl` argument (the global override wins over it).
          *args, **kwargs: passed to the implementation.

        Raises:
          ValueError: the named implementation cannot take this call (the
            message says why and what to use instead).
        """
        impl, names, kernel_args = self._plan(impl, args, kwargs)
        declined = None
        for name in names:
            if name == REFERENCE and declined is not None:
                note(self.name, getattr(declined, "reason", str(declined)))
            try:
                if name not in self.implementations:  # a backend of the delegate kernel op
                    takes = self.delegate.op.layer_takes.get(name)
                    if takes is not None and not takes(*kernel_args[0], **kernel_args[1]):
                        return self.implementations[REFERENCE](*args, **kwargs)
                    return self.delegate.call(impl, *args, **kwargs)
                return self.implementations[name](*args, **kwargs)
            except NotImplementedError as e:
                if len(names) == 1:
                    raise ValueError(f"pdx.kernels.{self.name}: {e}") from None
                declined = e
        raise ValueError(f"pdx.kernels.{self.name}: no implementation of {list(names)} takes this call; "
                         f"the last said: {declined}")


def register_impl(op: Op, name: Implementation, fn: Callable[..., Any], *,
                  prefer_if: Callable[..., bool] | None = None,
                  layer_prefer_if: Callable[..., bool] | None = None,
                  layer_takes: Callable[..., bool] | None = None) -> None:
    """Add a backend's implementation to a kernel op; called once, when the backend's module is imported.

    Args:
      op: the kernel op (`pdx.kernels.OPS[...]`).
      name: the implementation's name, one of `IMPLS` other than "auto" and
        the reference, not yet in `op`.
      fn: takes the op's arguments; raises `Unsupported` for calls it cannot run.
      prefer_if: predicate over the op's arguments; the op's "auto" tries `fn`
        only where it is true (None: always).
      layer_prefer_if: the same for a layer's op delegating to `op`
        (`Delegate`), over the arguments it would pass; None: `prefer_if`.
      layer_takes: predicate over the same arguments; where it is false a
        delegating layer op runs its own reference instead, even when the
        implementation is named (`use_impl(name)`), so a layer keeps working
        for the calls the backend leaves out. None: it takes every call.

    Raises:
      ValueError: `name` is not a backend's name, or `op` already has it.

    Example:
      >>> register_impl(OPS["layer_norm"], "onednn", my_layer_norm,
      ...               prefer_if=lambda x, *_, **__: x.dtype == jnp.float32)
    """
    if name not in IMPLS[1:] or name == REFERENCE or name in op.implementations:
        raise ValueError(f"pdx.kernels.register_impl({op.name!r}, {name!r}): the name must be one of "
                         f"{[n for n in IMPLS[1:] if n != REFERENCE]} that the op does not have yet; it has "
                         f"{list(op.implementations)}")
    for field, value in (("implementations", fn), ("prefer_if", prefer_if), ("layer_prefer_if", layer_prefer_if),
                         ("layer_takes", layer_takes)):
        if value is not None:
            object.__setattr__(op, field, types.MappingProxyType({**getattr(op, field), name: value}))


def _check(impl, *, where: str) -> str:
    if impl not in IMPLS:
        raise ValueError(f"pdx.kernels.{where}: impl={impl!r} is not one of {list(IMPLS)}")
    return impl


def set_impl(impl: str | None) -> None:
    """Force one implementation for every kernel op (None restores per-call choices).

    The override is process-wide; a `use_impl` block overrides it on its thread.

    Args:
      impl: "auto", "pallas", "xla", "cudnn", or None to remove the override.
        For ops without a cuDNN version (norms, cross-entropy) "cudnn" means "xla".

    Example:
      >>> pdx.kernels.set_impl("xla")   # every op runs its pure-JAX reference
      >>> pdx.kernels.get_impl()
      'xla'
      >>> pdx.kernels.set_impl(None)
    """
    _OVERRIDE.set_global(None if impl is None else _check(impl, where="set_impl"))


def get_impl() -> str | None:
    """The global override set by `set_impl` / `use_impl`, or None.

    Returns:
      The overriding implementation name, or None when calls choose their own.

    Example:
      >>> pdx.kernels.get_impl() is None
      True
    """
    return _OVERRIDE.get()


@contextlib.contextmanager
def use_impl(impl: str | None):
    """Context manager form of `set_impl`; restores the previous override on exit.

    Args:
      impl: as for `set_impl`.

    Example:
      >>> with pdx.kernels.use_impl("pallas"):   # interpret mode on a CPU
      ...     y = pdx.kernels.rms_norm(jnp.ones((4, 8)))
      >>> y.shape
      (4, 8)
    """
    with _OVERRIDE.set(None if impl is None else _check(impl, where="use_impl")):
        yield


def requested(impl: str, *, op: str) -> str:
    """The implementation a call asks for once the global override is applied."""
    _check(impl, where=op)
    return _OVERRIDE.get() or impl


def platform() -> str:
    """The platform new arrays land on: "cpu", "gpu" or "tpu"."""
    return jax.default_backend()


def note(op: str, reason: str) -> None:
    """Warn once per (op, reason) that "auto" fell back from the kernel."""
    if (op, reason) not in _NOTED:
        _NOTED.add((op, reason))
        warnings.warn(f"pdx.kernels.{op}: using the XLA reference because {reason}", stacklevel=3)


def pallas_fits(unfit: str | None) -> None:
    """Raise `Unsupported` unless a Pallas kernel can run here: `unfit` is None
    (the kernel takes the call's shapes/dtypes) and the platform is not TPU."""
    if unfit is not None:
        raise Unsupported(f"the Pallas kernel does not support this call: {unfit}")
    if platform() == "tpu":
        raise Unsupported("the Pallas kernels target GPUs (Triton), not TPU", "use impl='xla'")


def interpret() -> bool:
    """Pallas kernels run in interpret mode everywhere but on a GPU."""
    return platform() != "gpu"
