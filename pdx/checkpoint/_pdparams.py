"""Read Paddle `.pdparams` / `.pdopt` files as data: a parser of the pickle opcode stream.

`paddle.load` unpickles, and a pickle can call any importable function;
allow-list unpicklers have been bypassed (a numpy dtype given a `BUILD`
state reads memory outside the file; shared references expand to billions
of objects). Here nothing of Python's or numpy's unpickling machinery runs.
The opcodes are walked one by one and only the object graphs that
`paddle.save` writes are accepted (the grammar below was read off files
written by paddlepaddle 3.3.1 with protocols 2, 3 and 4, plus numpy's
protocol-5 form of an array):

    value   := None | bool | int | float | str | list | dict | OrderedDict | tuple
             | array | scalar | tensor
    array   := _reconstruct(ndarray, (0,), b'b') BUILD (1, shape, dtype, fortran, raw)
             | _frombuffer(raw, dtype, shape, 'C'|'F')
    dtype   := numpy.dtype(CODE, False, True) BUILD (3, '<'|'>'|'|', None, None, None, -1, -1, 0)
    scalar  := numpy scalar(dtype, raw)
    tensor  := builtins.tuple(((name, array),))           -> the array (paddle's tagged Tensor)
             | builtins.eval('data', {'data': array})     -> the array (paddle's DenseTensor)
    raw     := bytes opcodes | _codecs.encode(str, 'latin1') | builtins.bytes()   (protocol 2)

`CODE` is a numeric or bool dtype code (`_pdparams_parser._DTYPE_CODES`). The
"calls" above are never made: the global names are tokens, and an array is
`np.frombuffer` over bytes sliced from the file, after checking that the
byte count equals `prod(shape) * itemsize`. Every other opcode, global or
shape is refused with `PickleRefusedError`, as is anything over the limits.
The opcode machine is `_pdparams_parser.py`.
"""

from __future__ import annotations

import gc
import math
import os

import numpy as np

from pdx._safefile import read_file
from pdx.checkpoint._errors import PickleRefusedError
from pdx.checkpoint._pdparams_parser import _FIX, parse

__all__ = ["load_pdparams", "PickleRefusedError"]

DEFAULT_MAX_BYTES = 32 << 30
DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_ELEMENTS = 1_000_000

_NAME_TABLE = "StructuredToParameterName@@"
_BIG_PARAMS = "UnpackBigParamInfor@@"  # protocol 2/3 files split tensors over 1 GiB into slices


def _join_big_params(obj: dict, path: str) -> None:
    """Paddle's `_pack_loaded_dict`: protocol 2/3 files store tensors over 1 GiB as 1-D slices."""
    table = obj.pop(_BIG_PARAMS)

    def refuse(what):
        raise PickleRefusedError(f"{path}: {_BIG_PARAMS} {what}. {_FIX}", path=path)

    if not isinstance(table, dict):
        refuse("is not a dict")
    for key, entry in table.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("slices"), list)
                and all(type(name) is str for name in entry["slices"])
                and isinstance(entry.get("OriginShape"), (tuple, list)) and len(entry["OriginShape"]) <= 32):
            refuse(f"entry {key!r:.80} is not {{'OriginShape': shape, 'slices': [names]}}")
        parts = [obj.get(name) for name in entry["slices"]]
        if not parts or not all(isinstance(a, np.ndarray) and a.ndim == 1 and a.dtype == parts[0].dtype
                                for a in parts):
            refuse(f"slices of {key!r:.80} are not 1-D arrays of one dtype stored in the file")
        shape = entry["OriginShape"]
        if not all(type(d) is int and d >= 0 for d in shape) or math.prod(shape) != sum(a.size for a in parts):
            refuse(f"slices of {key!r:.80} do not add up to its shape {shape!r:.80}")
        for name in entry["slices"]:
            obj.pop(name, None)
        obj[key] = np.concatenate(parts).reshape(shape)


def load_pdparams(path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH,
                  max_elements: int = DEFAULT_MAX_ELEMENTS):
    """Load a Paddle `.pdparams` (or `.pdopt`) file as data, without unpickling it.

    The pickle opcodes are parsed, not executed: only dicts, lists, tuples,
    strings, numbers and numeric numpy arrays are built, in exactly the forms
    `paddle.save` writes them. Anything else, a truncated file, or a file over
    a limit raises `PickleRefusedError` naming the file, the byte offset and
    the opcode.

    Args:
      path: a file written by `paddle.save(obj, path)` (protocol 2, 3 or 4;
        numpy's protocol-5 array form is read too).
      max_bytes: largest file size read (checked before reading).
      max_depth: deepest nesting of containers.
      max_elements: most values (containers, keys, items, arrays) built, with
        each shared reference counted again.

    Returns:
      What `paddle.load(path, return_numpy=True)` returns: tensors as numpy
      arrays (a state dict: name -> np.ndarray, without Paddle's
      `StructuredToParameterName@@` table). bfloat16 tensors come back as
      Paddle stores them, as uint16 bits: view them with
      `.view(ml_dtypes.bfloat16)`. One difference: Paddle turns every
      `(str, ndarray)` tuple into the array; here only the tensors
      `paddle.save` wrote are, and a plain tuple of a string and an array
      stays a tuple.

    Example:
      >>> sd = pdx.checkpoint.load_pdparams("linear.pdparams")   # doctest: +SKIP
      >>> layer.set_state_dict(sd)                              # doctest: +SKIP
    """
    path = str(path)
    # a link the caller names is followed (HF-style caches link every file); its target must be a
    # regular file like any other
    real = os.path.realpath(path)
    what = ".pdparams file" if real == os.path.abspath(path) else f".pdparams file {path!r}, a link to"
    data = read_file(real, max_bytes=max_bytes, what=what, error=lambda message: PickleRefusedError(message, path=path))
    collecting = gc.isenabled()
    gc.disable()  # the parser builds no cycles; the collector would only rescan its growing stack
    try:
        obj = parse(data, path, max_depth=max_depth, max_elements=max_elements)
    finally:
        if collecting:
            gc.enable()
    if isinstance(obj, dict):
        if _BIG_PARAMS in obj:
            _join_big_params(obj, path)
        obj.pop(_NAME_TABLE, None)  # Paddle's structured-name -> variable-name table; paddle.load drops it
    return obj
