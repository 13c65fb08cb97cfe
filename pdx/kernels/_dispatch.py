"""Which implementation of a hot op runs: the Pallas kernel, XLA, or cuDNN.

Every public kernel takes `impl="auto" | "pallas" | "xla" | "cudnn"`:

* ``"auto"``: the Pallas kernel on a GPU when the shapes fit it, cuDNN
  (through `jax.nn.dot_product_attention`) for half-precision attention on a
  GPU, and the pure-JAX reference (compiled by XLA) everywhere else, CPU and
  TPU included.
* ``"pallas"``: the Pallas kernel. On a CPU the same kernel runs in Pallas
  interpret mode, so tests and users can exercise it anywhere (slowly).
* ``"xla"``: the pure-JAX reference.
* ``"cudnn"``: attention only; `jax.nn.dot_product_attention(...,
  implementation="cudnn")`. Needs a GPU.

A global override (`set_impl`, or the `use_impl` context manager) replaces
the requested implementation of every op, which is handy for debugging
("does the model still diverge with `use_impl('xla')`?"). The override is
read when a function is traced: functions compiled before the change keep
the implementation they were compiled with.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings

import jax

__all__ = ["IMPLS", "get_impl", "resolve", "set_impl", "use_impl"]

IMPLS = ("auto", "pallas", "xla", "cudnn")

_OVERRIDE: contextvars.ContextVar[str | None] = contextvars.ContextVar("pdx_kernels_impl", default=None)
_NOTED: set[tuple[str, str]] = set()


def _check(impl, *, where: str) -> str:
    if impl not in IMPLS:
        raise ValueError(f"pdx.kernels.{where}: impl={impl!r} is not one of {list(IMPLS)}")
    return impl


def set_impl(impl: str | None) -> None:
    """Force one implementation for every kernel op (None restores per-call choices).

    Args:
      impl: "auto", "pallas", "xla", "cudnn", or None to remove the override.
        For ops without a cuDNN version (norms, cross-entropy) "cudnn" means "xla".

    Example:
      >>> pdx.kernels.set_impl("xla")   # every op runs its pure-JAX reference
      >>> pdx.kernels.get_impl()
      'xla'
      >>> pdx.kernels.set_impl(None)
    """
    _OVERRIDE.set(None if impl is None else _check(impl, where="set_impl"))


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
    token = _OVERRIDE.set(None if impl is None else _check(impl, where="use_impl"))
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


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


def resolve(impl: str, *, op: str, unfit: str | None = None, cudnn: bool = False) -> str:
    """Turn a requested implementation into the one that runs.

    Args:
      impl: the call's `impl` argument (the global override wins over it).
      op: the op's name, for messages.
      unfit: None if the Pallas kernel supports the call's shapes/dtypes,
        else a short reason why not.
      cudnn: auto should prefer cuDNN on a GPU (half-precision attention).

    Returns:
      "pallas", "xla" or "cudnn".
    """
    impl = requested(impl, op=op)
    on = platform()
    if impl == "cudnn":
        if op != "flash_attention":
            return "xla"
        if on != "gpu":
            raise ValueError(f"pdx.kernels.{op}: impl='cudnn' needs a GPU but the default backend is {on!r}; "
                             "use impl='auto' or impl='xla'")
        return "cudnn"
    if impl == "pallas":
        if unfit is not None:
            raise ValueError(f"pdx.kernels.{op}: the Pallas kernel does not support this call: {unfit}; "
                             "use impl='auto' or impl='xla'")
        if on == "tpu":
            raise ValueError(f"pdx.kernels.{op}: the Pallas kernels target GPUs (Triton); on TPU use impl='xla'")
        return "pallas"
    if impl == "xla" or on != "gpu":
        return "xla"
    if cudnn:
        return "cudnn"
    if unfit is not None:
        note(op, unfit)
        return "xla"
    return "pallas"


def interpret() -> bool:
    """Pallas kernels run in interpret mode everywhere but on a GPU."""
    return platform() != "gpu"
