"""Paddle's top-level environment names: dtype objects, constants, the execution mode, print options.

Dtypes are numpy dtype objects (what `jax.Array.dtype` is), so
`x.dtype == pdx.float32`, `isinstance(x.dtype, pdx.dtype)` and
`pdx.zeros([2], pdx.bfloat16)` all work. 64-bit requests narrow to 32 bits
unless JAX's x64 mode is on (see pdx._dtype).
"""

from __future__ import annotations

import builtins
import math

import jax.numpy as jnp
import numpy as np

from pdx import _random

__all__ = [
    "LazyGuard", "batch", "bfloat16", "bool", "cdouble", "cfloat", "complex64", "complex128",
    "disable_signal_handler", "disable_static", "double", "dtype", "e",
    "enable_static", "float", "float8_e4m3fn", "float8_e5m2", "float16", "float32", "float64",
    "get_cuda_rng_state", "get_default_device", "get_flags", "half", "in_dynamic_mode", "inf", "int8",
    "int16", "int32", "int64", "manual_seed", "nan", "newaxis", "pi", "set_cuda_rng_state",
    "set_default_device", "set_flags", "set_printoptions", "uint8", "uint16", "uint32", "uint64",
]

dtype = np.dtype

# Paddle's names rebind bool/int/float in this module (and in pdx); code below spells builtins.bool.
bool = np.dtype("bool")  # noqa: A001
int8, int16, int32, int64 = (np.dtype(f"int{b}") for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (np.dtype(f"uint{b}") for b in (8, 16, 32, 64))
float16, float32, float64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
bfloat16 = jnp.dtype("bfloat16")
float8_e4m3fn, float8_e5m2 = jnp.dtype("float8_e4m3fn"), jnp.dtype("float8_e5m2")
complex64, complex128 = np.dtype("complex64"), np.dtype("complex128")
half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001 (attributes of pdx, left out of __all__ as in Paddle)
cfloat, cdouble = complex64, complex128

pi, e, inf, nan = math.pi, math.e, math.inf, math.nan
newaxis = None


def in_dynamic_mode():
    """Always True: pdx runs eagerly, and `pdx.jit` compiles functions on request.

    Returns:
      True.

    Example:
      >>> import pdx
      >>> pdx.in_dynamic_mode()
      True
    """
    return True


def disable_static(place=None):
    """Accepted for Paddle: pdx is always in dynamic (eager) mode.

    Args:
      place: optional device; when given it becomes the default device (`pdx.set_device`).

    Returns:
      None.

    Example:
      >>> import pdx
      >>> pdx.disable_static()
    """
    if place is not None:
        from pdx.device import set_device

        set_device(place)


def enable_static():
    """Raises: pdx has one mode (eager); compile functions with `pdx.jit` (Paddle's `to_static`).

    Returns:
      Never returns.

    Example:
      >>> import pdx
      >>> try:
      ...     pdx.enable_static()
      ... except RuntimeError as err:
      ...     print("pdx.jit" in str(err))
      True
    """
    raise RuntimeError("pdx.enable_static: pdx has no separate static-graph mode. Ops run eagerly; compile a "
                       "function or Layer with pdx.jit (Paddle's paddle.jit.to_static), which traces it to "
                       "StableHLO and compiles it with XLA. Export with pdx.jit.save.")


def set_printoptions(precision=None, threshold=None, edgeitems=None, sci_mode=None, linewidth=None):
    """Set how tensors print (tensors print through numpy, so this sets numpy's print options).

    Args:
      precision: digits after the decimal point (Paddle's default 8; numpy's 8).
      threshold: total elements above which the output is summarized.
      edgeitems: elements shown at each edge of a summarized dim.
      sci_mode: True forces scientific notation, False suppresses it, None lets numpy choose.
      linewidth: characters per line.

    Returns:
      None.

    Example:
      >>> import pdx
      >>> pdx.set_printoptions(precision=4)
    """
    options = {k: v for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                                 ("linewidth", linewidth)) if v is not None}
    if sci_mode is not None:
        options["suppress"] = not sci_mode
        digits = precision if precision is not None else np.get_printoptions()["precision"]
        options["formatter"] = {"float_kind": lambda v: f"{v:.{digits}e}"} if sci_mode else None
    np.set_printoptions(**options)


def get_cuda_rng_state():
    """The generator state as a one-element list (pdx has one generator for every device).

    Returns:
      `[key]`, for `set_cuda_rng_state`.

    Example:
      >>> import pdx
      >>> len(pdx.get_cuda_rng_state())
      1
    """
    return [_random.get_rng_state()]


def set_cuda_rng_state(state_list):
    """Restore a state from `get_cuda_rng_state` (the first entry; pdx has one generator).

    Args:
      state_list: the list returned by `get_cuda_rng_state` (or a single key).

    Returns:
      None.

    Example:
      >>> import pdx
      >>> pdx.set_cuda_rng_state(pdx.get_cuda_rng_state())
    """
    state = state_list[0] if isinstance(state_list, (list, tuple)) else state_list
    _random.set_rng_state(state)


def manual_seed(seed):
    """Seed the global generator (alias of `pdx.seed`, Paddle's torch-style name).

    Args:
      seed: an int.

    Returns:
      The new global key.

    Example:
      >>> import pdx
      >>> _ = pdx.manual_seed(0)
    """
    return _random.seed(seed)


def set_default_device(device):
    """Alias of `pdx.set_device` (Paddle's torch-style name).

    Args:
      device: 'cpu', 'gpu:N', an int GPU id or a Place.

    Returns:
      The Place now in use.

    Example:
      >>> import pdx
      >>> pdx.set_default_device("cpu")
      Place(cpu)
    """
    from pdx.device import set_device

    return set_device(device)


def get_default_device():
    """The current default device name ('cpu', 'gpu:0', ...), as `pdx.get_device()`.

    Returns:
      A string.

    Example:
      >>> import pdx
      >>> pdx.get_default_device()
      'cpu'
    """
    from pdx.device import get_device

    return get_device()


# Paddle flags pdx understands. FLAGS_check_nan_inf switches JAX's NaN/Inf checks; the others
# configure Paddle's own kernels and allocator, which XLA replaces: they are recorded and reported only.
_FLAGS = {
    "FLAGS_check_nan_inf": False,
    "FLAGS_cudnn_deterministic": False,
    "FLAGS_embedding_deterministic": 0,
    "FLAGS_cudnn_exhaustive_search": False,
    "FLAGS_conv_workspace_size_limit": 512,
    "FLAGS_allocator_strategy": "auto_growth",
    "FLAGS_fraction_of_gpu_memory_to_use": 0.92,
    "FLAGS_eager_delete_tensor_gb": 0.0,
    "FLAGS_use_autotune": False,
    "FLAGS_enable_pir_api": True,
}


def _flag_names(flags, op):
    names = [flags] if isinstance(flags, str) else list(flags)
    for n in names:
        if n not in _FLAGS:
            raise ValueError(f"pdx.{op}: flag {n!r} is not one pdx understands; known flags: {sorted(_FLAGS)}")
    return names


def get_flags(flags):
    """Values of Paddle flags (see `set_flags` for the ones pdx understands).

    Args:
      flags: a flag name or a list of names.

    Returns:
      A dict name -> value.

    Example:
      >>> import pdx
      >>> pdx.get_flags("FLAGS_check_nan_inf")
      {'FLAGS_check_nan_inf': False}
    """
    return {n: _FLAGS[n] for n in _flag_names(flags, "get_flags")}


def set_flags(flags):
    """Set Paddle flags. `FLAGS_check_nan_inf` turns on JAX's NaN/Inf checks (`jax_debug_nans`/`jax_debug_infs`);
    kernel and allocator flags (cudnn_deterministic, allocator_strategy, ...) are recorded only, since XLA
    chooses kernels and memory (use XLA_FLAGS / XLA_PYTHON_CLIENT_* for those).

    Args:
      flags: a dict name -> value.

    Returns:
      None.

    Example:
      >>> import pdx
      >>> pdx.set_flags({"FLAGS_cudnn_deterministic": True})
    """
    if not isinstance(flags, dict):
        raise TypeError(f"pdx.set_flags: `flags` must be a dict of name -> value; got {type(flags).__name__}")
    _flag_names(flags, "set_flags")
    for name, value in flags.items():
        _FLAGS[name] = value
        if name == "FLAGS_check_nan_inf":
            import jax

            jax.config.update("jax_debug_nans", builtins.bool(value))
            jax.config.update("jax_debug_infs", builtins.bool(value))


def disable_signal_handler():
    """Accepted for Paddle: pdx installs no signal handlers, so there is nothing to disable.

    Returns:
      None.

    Example:
      >>> import pdx
      >>> pdx.disable_signal_handler()
    """


class LazyGuard:
    """Accepted for Paddle: layers built inside still initialize their parameters at once.

    Paddle delays parameter creation inside `LazyGuard`; to build a large model
    without allocating it in pdx, use `flax.nnx.eval_shape(lambda: Model())`.

    Example:
      >>> import pdx
      >>> with pdx.LazyGuard():
      ...     layer = pdx.nn.Linear(2, 3)
    """

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def batch(reader, batch_size, drop_last=False):
    """Wrap a sample reader (a function returning an iterator) into one that yields lists of `batch_size`.

    Paddle's legacy reader decorator; `pdx.io.DataLoader` is the modern path.

    Args:
      reader: a callable returning an iterable of samples.
      batch_size: samples per batch (> 0).
      drop_last: drop the last, short batch.

    Returns:
      A callable returning an iterator of lists.

    Example:
      >>> import pdx
      >>> list(pdx.batch(lambda: iter(range(5)), 2)())
      [[0, 1], [2, 3], [4]]
    """
    if not isinstance(batch_size, builtins.int) or isinstance(batch_size, builtins.bool) or batch_size <= 0:
        raise ValueError(f"pdx.batch: `batch_size` must be a positive int; got {batch_size!r}")

    def batched():
        chunk = []
        for sample in reader():
            chunk.append(sample)
            if len(chunk) == batch_size:
                yield chunk
                chunk = []
        if chunk and not drop_last:
            yield chunk

    return batched
