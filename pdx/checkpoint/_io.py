"""`pdx.save` / `pdx.load` and safetensors import/export, never pickle.

A file from `pdx.save` is a plain safetensors file: every array is a tensor
named by its path in the object (`"fc.weight"`, `"opt/fc.weight"`), and the
header's metadata carries `pdx.tree`, the JSON skeleton of the object
(containers, numbers, strings) with arrays replaced by their tensor names.
Any safetensors reader (Hugging Face, PyTorch) can open it; loading it
builds only arrays and JSON values.

Reading follows pdx's loader rule (`pdx._safefile`): the file must be a
regular file (a link is resolved first; a FIFO or device is refused), the
header length is checked against the file size and a cap before it is read,
the header and the skeleton are parsed as UTF-8 JSON with depth limits,
every tensor's dtype, shape and byte range is checked (tensors tile the data
section exactly, as the safetensors spec says), and the skeleton may use only
the node kinds `save` writes, each tensor exactly once (so the output is
never larger than the file). Every failure is a `CheckpointCorruptError`
naming the file. A safetensors file carries no checksum: flipped bits in
tensor data load as different numbers.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import safetensors.numpy

from pdx._safefile import load_json, open_regular
from pdx.checkpoint._errors import CheckpointCorruptError

__all__ = ["save", "load", "save_safetensors", "load_safetensors"]

_TREE_KEY = "pdx.tree"
_FORMAT_KEY = "format"
_FORMAT = "pdx"
_SEP = "/"
_DTYPES = {name: np.dtype(dtype) for name, dtype in {
    "BOOL": np.bool_, "U8": "<u1", "I8": "<i1", "U16": "<u2", "I16": "<i2", "U32": "<u4", "I32": "<i4",
    "U64": "<u8", "I64": "<i8", "F16": "<f2", "F32": "<f4", "F64": "<f8", "C64": "<c8",
    "BF16": ml_dtypes.bfloat16, "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2}.items()}
MAX_HEADER_BYTES = 100 << 20  # the safetensors spec's own limit
_HEADER_DEPTH = 3  # {name: {"shape": [...]}}
MAX_NESTING = 60  # containers inside containers that pdx.save accepts
MAX_TREE_DEPTH = 2 * MAX_NESTING + 2  # JSON levels of the skeleton: a dict or tuple node is two


def _to_numpy(value, where: str) -> np.ndarray | None:
    if hasattr(value, "get_value") and hasattr(value, "get_metadata"):  # an nnx.Variable
        value = value.get_value()
    if isinstance(value, (jax.Array, np.ndarray, np.generic)):
        if isinstance(value, jax.Array) and jnp.issubdtype(value.dtype, jax.dtypes.prng_key):
            raise TypeError(f"pdx.save: {where} is a PRNG key; save jax.random.key_data(key) instead "
                            "(or use pdx.checkpoint.CheckpointManager, which keeps keys)")
        return np.asarray(value, order="C")  # ascontiguousarray would turn 0-d into 1-d
    if type(value).__module__.startswith("paddle") and hasattr(value, "numpy"):
        return np.asarray(value.numpy(), order="C")
    return None


def _encode(obj, path: tuple, tensors: dict):
    where = repr(_SEP.join(path)) if path else "the object"
    if len(path) > MAX_NESTING:  # pdx.load refuses deeper skeletons: never write one
        raise ValueError(f"pdx.save: {where} nests more than {MAX_NESTING} containers deep; flatten the object")
    array = _to_numpy(obj, where)
    if array is not None:
        if array.dtype.hasobject:
            raise TypeError(f"pdx.save: {where} is an object array; only numeric arrays can be saved")
        name = _SEP.join(path) or "tensor"
        if name in tensors:
            raise ValueError(f"pdx.save: two entries map to the tensor name {name!r}; rename one key")
        tensors[name] = array
        return {"__tensor__": name}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, Mapping):
        bad = [k for k in obj if not isinstance(k, str)]
        if bad:
            raise TypeError(f"pdx.save: dict keys must be str; {where} has key {bad[0]!r} "
                            f"({type(bad[0]).__name__})")
        return {"__dict__": {k: _encode(v, path + (k,), tensors) for k, v in obj.items()}}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, path + (str(i),), tensors) for i, v in enumerate(obj)]
        return {"__tuple__": items} if isinstance(obj, tuple) else items
    hint = " (save layer.state_dict() instead of the Layer)" if hasattr(obj, "state_dict") else ""
    raise TypeError(f"pdx.save: {where} is a {type(obj).__name__}, which has no safe format{hint}; "
                    "pdx.save stores arrays, numbers, strings, None and dict/list/tuple of them "
                    "(no pickle, by design)")


class _Tree:
    """Decodes a `pdx.tree` skeleton: the node kinds `_encode` writes, each tensor used exactly once."""

    def __init__(self, tensors: dict, convert, path: Path):
        self.tensors, self.convert, self.path = tensors, convert, path
        self.used: set[str] = set()

    def fail(self, why: str):
        raise CheckpointCorruptError(f"pdx.load({str(self.path)!r}): the pdx.tree skeleton {why}; the file was not "
                                     "written by pdx.save (or was altered)", path=self.path)

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if isinstance(node, dict) and len(node) == 1:
            (kind, value), = node.items()
            if kind == "__tensor__" and isinstance(value, str):
                return self.tensor(value)
            if kind == "__tuple__" and isinstance(value, list):
                return tuple(self.decode(v) for v in value)
            if kind == "__dict__" and isinstance(value, dict):
                return {k: self.decode(v) for k, v in value.items()}
        self.fail(f"has a node that is none of JSON scalar, list, {{'__tensor__': name}}, {{'__tuple__': [...]}}, "
                  f"{{'__dict__': {{...}}}}: {json.dumps(node)[:120]}")

    def tensor(self, name: str):
        if name not in self.tensors:
            self.fail(f"references tensor {name!r}, which the file does not hold")
        if name in self.used:  # pdx.save writes each tensor once: sharing would multiply the output
            self.fail(f"references tensor {name!r} more than once")
        self.used.add(name)
        return self.convert(self.tensors[name])

    def load(self, text: str):
        tree = load_json(text.encode("utf-8", "surrogatepass"), what=f"the pdx.tree skeleton of {str(self.path)!r}",
                         max_depth=MAX_TREE_DEPTH, error=_corrupt(self.path))
        obj = self.decode(tree)
        unused = sorted(set(self.tensors) - self.used)
        if unused:
            self.fail(f"does not reference the file's tensor(s) {unused[:5]}")
        return obj


def _corrupt(path: Path):
    return lambda message: CheckpointCorruptError(message, path=path)


def _read_exact(fd: int, n: int, path: Path) -> bytearray:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if k == 0:
            raise CheckpointCorruptError(f"{str(path)!r} ended after {got} of {n} bytes (it changed while being read)",
                                         path=path)
        got += k
    return buf


def _header_entries(header, data_len: int, path: Path) -> tuple[list[tuple], dict]:
    """Validated `(name, dtype, shape, start, end)` of every tensor, sorted by offset, and the metadata."""
    def bad(why: str):
        raise CheckpointCorruptError(f"{str(path)!r} is not a valid safetensors file: {why}", path=path)

    if not isinstance(header, dict):
        bad(f"the header is a JSON {type(header).__name__}, not an object")
    meta = header.get("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        bad("__metadata__ must map str to str")
    entries = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            bad(f"tensor {name!r} has entry {str(entry)[:120]} (want dtype, shape, data_offsets)")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if not isinstance(dtype, str) or dtype not in _DTYPES:
            bad(f"tensor {name!r} has dtype {str(dtype)[:40]!r}; known: {sorted(_DTYPES)}")
        ints = lambda v: isinstance(v, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                     for d in v)  # noqa: E731
        if not ints(shape) or not ints(offsets) or len(offsets) != 2 or offsets[0] > offsets[1]:
            bad(f"tensor {name!r} has shape {str(shape)[:80]} and data_offsets {str(offsets)[:80]} "
                "(want lists of non-negative ints, start <= end)")
        nbytes = math.prod(shape) * _DTYPES[dtype].itemsize
        if nbytes != offsets[1] - offsets[0]:
            bad(f"tensor {name!r} of shape {shape} and dtype {dtype} needs {nbytes} bytes, "
                f"its data_offsets {offsets} hold {offsets[1] - offsets[0]}")
        entries.append((name, _DTYPES[dtype], tuple(shape), offsets[0], offsets[1]))
    entries.sort(key=lambda e: (e[3], e[4]))
    end = 0
    for name, _, _, start, stop in entries:  # the spec: tensors tile the data buffer, no gaps or overlaps
        if start != end:
            bad(f"tensor {name!r} starts at byte {start}, expected {end} (gaps or overlapping tensors)")
        end = stop
    if end != data_len:
        bad(f"the tensors cover {end} bytes but the data section holds {data_len}")
    return entries, meta


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Tensors and metadata of a safetensors file, every header field checked before use."""
    fd, size = _open(path)
    try:
        return _read_fd(fd, size, path)
    finally:
        os.close(fd)


def _open(path: Path) -> tuple[int, int]:
    # A file named explicitly may be a link (Hugging Face's cache links snapshots to blobs);
    # what it resolves to must be a regular file.
    if not os.path.lexists(path):
        raise FileNotFoundError(f"pdx.load: no file at {str(path)!r}")
    return open_regular(os.path.realpath(path), what=f"weights file {str(path)!r} (resolved)",
                        error=_corrupt(path))


def _read_fd(fd: int, size: int, path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    if size < 8:
        raise CheckpointCorruptError(f"{str(path)!r} has {size} bytes: too short for a safetensors header", path=path)
    header_len = int.from_bytes(_read_exact(fd, 8, path), "little")
    if header_len > min(MAX_HEADER_BYTES, size - 8):
        raise CheckpointCorruptError(
            f"{str(path)!r} declares a {header_len}-byte safetensors header, but the file has {size} bytes "
            f"(and headers are capped at {MAX_HEADER_BYTES}): not a safetensors file", path=path)
    header = load_json(_read_exact(fd, header_len, path), what=f"safetensors header of {str(path)!r}",
                       max_depth=_HEADER_DEPTH, error=_corrupt(path))
    data_len = size - 8 - header_len
    entries, meta = _header_entries(header, data_len, path)
    data = _read_exact(fd, data_len, path)
    tensors = {}
    for name, dtype, shape, start, stop in entries:
        array = np.frombuffer(data, dtype, count=(stop - start) // dtype.itemsize, offset=start) if stop > start \
            else np.zeros(0, dtype)
        if dtype == np.bool_ and array.view(np.uint8).max(initial=0) > 1:
            raise CheckpointCorruptError(f"{str(path)!r}: bool tensor {name!r} holds bytes other than 0 and 1",
                                         path=path)
        tensors[name] = array.reshape(shape)
    return tensors, meta


def _is_pickle(fd: int) -> bool:
    head = os.pread(fd, 9, 0)
    # safetensors: 8-byte header length, then the JSON header's "{"; pickle 2+: 0x80, protocol
    return head[:1] == b"\x80" and head[8:9] != b"{"


def save(obj, path, protocol: int = 4, **configs) -> None:
    """Save a state dict or a small object to `path` (Paddle's `paddle.save`), as safetensors.

    Arrays (jax, numpy, paddle tensors, nnx Variables) become tensors; numbers,
    strings, None, dicts (str keys), lists and tuples are kept in the header.
    Nothing is pickled: anything else raises TypeError naming it.

    Args:
      obj: e.g. `layer.state_dict()`, `opt.state_dict()`, or `{"model": ..., "epoch": 3}`.
      path: file path; parent directories are created. The extension is free
        (`.pdparams`, `.safetensors`, ...).
      protocol: accepted for Paddle compatibility and ignored (there is no pickle).
      **configs: accepted for Paddle compatibility and ignored.

    Example:
      >>> pdx.save(model.state_dict(), "model.pdparams")          # doctest: +SKIP
      >>> model.set_state_dict(pdx.load("model.pdparams"))         # doctest: +SKIP
    """
    path = Path(path)
    tensors: dict[str, np.ndarray] = {}
    tree = json.dumps(_encode(obj, (), tensors))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    safetensors.numpy.save_file(tensors, str(tmp), metadata={_FORMAT_KEY: _FORMAT, _TREE_KEY: tree})
    tmp.replace(path)


def load(path, *, return_numpy: bool = False, **configs):
    """Load what `pdx.save` wrote (Paddle's `paddle.load`).

    Also reads any safetensors file (as a flat dict name -> array) and Paddle
    `.pdparams` pickles through `load_pdparams`, a parser of the pickle opcode
    stream that builds only arrays and containers and never runs code from the file.

    Args:
      path: the file.
      return_numpy: numpy arrays instead of jax.Arrays.
      **configs: accepted for Paddle compatibility and ignored.

    Returns:
      The saved object.

    Raises:
      FileNotFoundError: nothing at `path`.
      CheckpointCorruptError: not a regular file (FIFO, device), a malformed safetensors
        header, or a `pdx.tree` skeleton that `pdx.save` would not write (unknown node kinds,
        a tensor used twice or never, nesting past the limit); names the file.

    Example:
      >>> import pdx
      >>> pdx.save({"w": pdx.ones([2]), "epoch": 3}, "/tmp/x.pdparams")
      >>> pdx.load("/tmp/x.pdparams")["epoch"]
      3
    """
    path = Path(path)
    convert = (lambda a: a) if return_numpy else jnp.asarray
    fd, size = _open(path)
    try:
        pickled = _is_pickle(fd)
        if not pickled:
            tensors, meta = _read_fd(fd, size, path)
    finally:
        os.close(fd)
    if pickled:
        from pdx.checkpoint._pdparams import load_pdparams

        obj = load_pdparams(path)
        return obj if return_numpy else jax.tree.map(
            lambda v: convert(v) if isinstance(v, np.ndarray) else v, obj)
    if meta.get(_FORMAT_KEY) == _FORMAT and _TREE_KEY in meta:
        return _Tree(tensors, convert, path).load(meta[_TREE_KEY])
    return {k: convert(v) for k, v in tensors.items()}


def _mapped(name_map, name: str):
    if name_map is None:
        return name
    if callable(name_map):
        return name_map(name)
    return name_map.get(name, name)


def save_safetensors(state_dict: Mapping, path, *, name_map: Mapping | Callable | None = None,
                     value_map: Callable | None = None, metadata: Mapping[str, str] | None = None) -> None:
    """Export a flat state dict as a standard safetensors file (e.g. for Hugging Face).

    Args:
      state_dict: name -> array (e.g. `layer.state_dict()`).
      path: the output file.
      name_map: renames keys: a dict old -> new, or a callable name -> new name
        (return None to drop the entry).
      value_map: optional callable (new_name, np.ndarray) -> np.ndarray, e.g. to
        transpose Linear weights to PyTorch's [out, in] layout.
      metadata: str -> str pairs stored in the header (`{"format": "pt"}` for HF).

    Example:
      >>> save_safetensors(model.state_dict(), "model.safetensors",
      ...                  name_map=lambda n: "bert." + n)                 # doctest: +SKIP
    """
    tensors = {}
    for name, value in state_dict.items():
        new = _mapped(name_map, name)
        if new is None:
            continue
        array = _to_numpy(value, name)
        if array is None:
            raise TypeError(f"save_safetensors: {name!r} is a {type(value).__name__}, not an array")
        if value_map is not None:
            array = np.asarray(value_map(new, array), order="C")
        if new in tensors:
            raise ValueError(f"save_safetensors: name_map sends two keys to {new!r}")
        tensors[new] = array
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    safetensors.numpy.save_file(tensors, str(path), metadata=dict(metadata or {}))


def load_safetensors(path, *, name_map: Mapping | Callable | None = None, value_map: Callable | None = None,
                     return_numpy: bool = True) -> dict:
    """Import a safetensors file (e.g. Hugging Face weights) as a flat state dict.

    Args:
      path: the .safetensors file.
      name_map: renames keys: a dict file-name -> pdx-name, or a callable (return
        None to drop the tensor), e.g. HF `"encoder.layer.0.attention.self.query.weight"`
        -> pdx `"encoder.layers.0.self_attn.q_proj.weight"`.
      value_map: optional callable (new_name, np.ndarray) -> np.ndarray (transpose, cast).
      return_numpy: numpy arrays (default) or jax.Arrays.

    Returns:
      dict name -> array, ready for `Layer.set_state_dict`.
    """
    tensors, _ = _read(Path(path))
    out = {}
    for name, array in tensors.items():
        new = _mapped(name_map, name)
        if new is None:
            continue
        if value_map is not None:
            array = value_map(new, array)
        out[new] = array if return_numpy else jnp.asarray(array)
    return out
