"""Read Paddle `.pdparams` / `.pdopt` pickles without running their code.

`paddle.load` unpickles, and a pickle can call any importable function
(Paddle's SECURITY.md warns about exactly this). Here the unpickler resolves
only an allow-list of globals that build numpy arrays and plain containers;
any other global (os.system, subprocess, eval, ...) is refused before it is
imported, so nothing in the file ever runs.
"""

from __future__ import annotations

import collections
import io
import pickle
from pathlib import Path

import numpy as np

try:
    from numpy._core.multiarray import scalar as _numpy_scalar
except ImportError:  # numpy < 2
    from numpy.core.multiarray import scalar as _numpy_scalar

__all__ = ["load_pdparams", "PickleRefusedError"]


_NAME_TABLE = "StructuredToParameterName@@"


class PickleRefusedError(pickle.UnpicklingError):
    """The pickle asks for something other than arrays and plain containers."""


def _safe_dtype(*args, **kwargs):
    dtype = np.dtype(*args, **kwargs)
    if dtype.hasobject:
        raise PickleRefusedError(
            f"the pickle builds an array of dtype {dtype} (Python objects); only numeric arrays are allowed")
    return dtype


def _safe_reconstruct(cls, *args):
    if cls is not np.ndarray:
        raise PickleRefusedError(f"the pickle reconstructs {cls!r}; only numpy.ndarray is allowed")
    return np.ndarray.__new__(np.ndarray, *args)


def _safe_scalar(dtype, *args):
    if not isinstance(dtype, np.dtype) or dtype.hasobject:
        raise PickleRefusedError(f"the pickle builds a numpy scalar of dtype {dtype!r}; only numeric dtypes are allowed")
    return _numpy_scalar(dtype, *args)


_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _safe_dtype,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "tuple"): tuple,
    ("builtins", "list"): list,
    ("builtins", "dict"): dict,
}
for _mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
    _ALLOWED[(_mod, "_reconstruct")] = _safe_reconstruct
    _ALLOWED[(_mod, "scalar")] = _safe_scalar
for _mod in ("numpy.core.numeric", "numpy._core.numeric"):
    _ALLOWED[(_mod, "_frombuffer")] = lambda buf, dtype, shape, order: np.frombuffer(
        buf, dtype=_safe_dtype(dtype)).reshape(shape, order=order).copy()


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, file, path):
        super().__init__(file)
        self._path = path

    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise PickleRefusedError(
                f"{self._path}: refusing to load global {module}.{name}: .pdparams may only contain "
                "numpy arrays and plain containers, and this file asks for something that could run "
                "code. If you trust and need it, convert it in Paddle to safetensors "
                "(e.g. safetensors.paddle.save_file) and load that with pdx.load.") from None

    def persistent_load(self, pid):
        raise PickleRefusedError(f"{self._path}: persistent ids are not allowed in .pdparams files")


def _untag(obj):
    # paddle.save stores tensors nested in containers as (name, ndarray) pairs
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], np.ndarray):
        return obj[1]
    if isinstance(obj, dict):
        return type(obj)((k, _untag(v)) for k, v in obj.items())
    if isinstance(obj, list):
        return [_untag(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_untag(v) for v in obj)
    return obj


def load_pdparams(path) -> dict:
    """Load a Paddle `.pdparams` (or `.pdopt`) file safely.

    Only numpy arrays, numbers, strings and dict/list/tuple/OrderedDict are
    built; a file that asks for anything else raises `PickleRefusedError`
    without running it. The result can go straight to `Layer.set_state_dict`
    (pdx layers use Paddle's parameter names and shapes).

    Args:
      path: a file written by `paddle.save(layer.state_dict(), path)`.

    Returns:
      The saved object with numpy arrays for tensors (for a state dict: an
      OrderedDict name -> np.ndarray). bfloat16 tensors come back as Paddle stored
      them, as uint16 bits: view them with `.view(ml_dtypes.bfloat16)`.

    Example:
      >>> sd = pdx.checkpoint.load_pdparams("linear.pdparams")   # doctest: +SKIP
      >>> layer.set_state_dict(sd)                              # doctest: +SKIP
    """
    path = Path(path)
    data = path.read_bytes()
    if not data.startswith(b"\x80"):
        raise ValueError(f"load_pdparams({str(path)!r}): not a pickle file (Paddle .pdparams are pickles); "
                         "for safetensors files use pdx.load or pdx.checkpoint.load_safetensors")
    try:
        obj = _AllowListUnpickler(io.BytesIO(data), path).load()
    except PickleRefusedError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as e:
        raise ValueError(f"load_pdparams({str(path)!r}): the file is not a valid Paddle pickle: {e}") from None
    obj = _untag(obj)
    if isinstance(obj, dict):
        obj.pop(_NAME_TABLE, None)  # Paddle's structured-name -> variable-name table, as paddle.load drops it
    return obj
