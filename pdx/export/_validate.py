"""Input validation shared by every runtime (XLA, IREE, TranslatedLayer).

A signature is the manifest's view of the inputs: per input a name, a dtype
and per dim an int (static) or a symbol name (dynamic). Dims that share a
symbol must agree across inputs (a `None` batch dim is one symbol, `batch`,
for all inputs), and every dynamic dim must be >= 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["Signature", "check_arrays"]


class Signature:
    """Names, dtypes and dims (int or symbol str) of a program's inputs."""

    def __init__(self, entries: Sequence[dict]):
        self.names = tuple(e["name"] for e in entries)
        self.dtypes = tuple(np.dtype(_np_dtype(e["dtype"])) for e in entries)
        self.dims = tuple(tuple(e["shape"]) for e in entries)

    def describe(self, i: int) -> str:
        dims = ", ".join(str(d) for d in self.dims[i])
        return f"{self.names[i]}: {self.dtypes[i].name}[{dims}]"


def _np_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return name


def check_arrays(sig: Signature, arrays: Sequence, *, fn: str, convert: bool) -> list:
    """Check `arrays` against `sig`; raise ValueError naming the input, expected vs got.

    Args:
      sig: the program's input signature.
      arrays: one value per input. Arrays (numpy, jax, anything with a
        dtype) must have the declared dtype exactly; with `convert`, nested
        lists and scalars (decoded JSON) are converted to the declared dtype.
      fn: the caller's name, for messages.
      convert: return numpy arrays (host runtimes) instead of the inputs as given.

    Returns:
      The inputs, as numpy arrays when `convert`.
    """
    if len(arrays) != len(sig.names):
        expected = "; ".join(sig.describe(i) for i in range(len(sig.names)))
        raise ValueError(f"{fn}: expected {len(sig.names)} input(s) ({expected}) but got {len(arrays)}; "
                         "pass one array per input, in this order")
    out, bound = [], {}
    for i, x in enumerate(arrays):
        name, want_dtype, dims = sig.names[i], sig.dtypes[i], sig.dims[i]
        if not hasattr(x, "dtype") or not hasattr(x, "shape"):
            if not convert:
                raise ValueError(f"{fn}: input {name!r} must be an array; got {type(x).__name__}")
            x = _from_python(x, want_dtype, name, fn)
        elif np.dtype(x.dtype) != want_dtype:
            raise ValueError(f"{fn}: input {name!r} has dtype {np.dtype(x.dtype).name}, expected "
                             f"{want_dtype.name} ({sig.describe(i)}); cast it first, e.g. "
                             f"x.astype('{want_dtype.name}')")
        shape = tuple(x.shape)
        if len(shape) != len(dims):
            raise ValueError(f"{fn}: input {name!r} has rank {len(shape)} (shape {list(shape)}), expected "
                             f"rank {len(dims)} ({sig.describe(i)})")
        for axis, (got, want) in enumerate(zip(shape, dims)):
            if isinstance(want, int):
                if got != want:
                    raise ValueError(f"{fn}: input {name!r} has shape {list(shape)}, expected {sig.describe(i)} "
                                     f"(dim {axis} must be {want}, got {got})")
                continue
            if got < 1:
                raise ValueError(f"{fn}: input {name!r} has shape {list(shape)}: dynamic dim {axis} ({want}) "
                                 f"must be >= 1, got {got}")
            first = bound.setdefault(want, (got, name, axis))
            if first[0] != got:
                raise ValueError(f"{fn}: input {name!r} dim {axis} is {got} but input {first[1]!r} dim "
                                 f"{first[2]} is {first[0]}; both are the dynamic dim {want!r} and must agree")
        out.append(np.asarray(x) if convert else x)
    return out


def _from_python(value, dtype: np.dtype, name: str, fn: str) -> np.ndarray:
    try:
        raw = np.asarray(value)
    except ValueError as e:  # ragged nested lists
        raise ValueError(f"{fn}: input {name!r} is not a rectangular array ({e})") from None
    if raw.dtype == object or raw.dtype.kind not in "biuf":
        raise ValueError(f"{fn}: input {name!r} must hold numbers; got values of type {raw.dtype}")
    with np.errstate(invalid="ignore", over="ignore"):
        cast = raw.astype(dtype)
    if dtype.kind in "biu" and not np.array_equal(cast.astype(raw.dtype), raw):
        raise ValueError(f"{fn}: input {name!r} is {dtype.name} but the given values do not fit "
                         f"(e.g. fractions or out-of-range numbers)")
    return cast
