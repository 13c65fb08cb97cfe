"""`pdx.save` / `pdx.load` and safetensors import/export, never pickle.

A file from `pdx.save` is a plain safetensors file: every array is a tensor
named by its path in the object (`"fc.weight"`, `"opt/fc.weight"`), and the
header's metadata carries `pdx.tree`, the JSON skeleton of the object
(containers, numbers, strings) with arrays replaced by their tensor names.
Any safetensors reader (Hugging Face, PyTorch) can open it; loading it
builds only arrays and JSON values.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import safetensors
import safetensors.numpy

__all__ = ["save", "load", "save_safetensors", "load_safetensors"]

_TREE_KEY = "pdx.tree"
_FORMAT_KEY = "format"
_FORMAT = "pdx"
_SEP = "/"
_DTYPES = {"BF16": ml_dtypes.bfloat16, "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2}


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


def _decode(node, tensors: dict, convert):
    if isinstance(node, dict):
        if "__tensor__" in node:
            return convert(tensors[node["__tensor__"]])
        if "__tuple__" in node:
            return tuple(_decode(v, tensors, convert) for v in node["__tuple__"])
        return {k: _decode(v, tensors, convert) for k, v in node["__dict__"].items()}
    if isinstance(node, list):
        return [_decode(v, tensors, convert) for v in node]
    return node


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    tensors = {}
    with safetensors.safe_open(str(path), framework="np") as f:
        meta = f.metadata() or {}
        for name in f.keys():
            dtype = f.get_slice(name).get_dtype()
            if dtype in _DTYPES:  # numpy has no bfloat16/fp8: read the bits, view as ml_dtypes
                tensors[name] = _read_raw(path, name)
            else:
                tensors[name] = f.get_tensor(name)
    return tensors, meta


def _read_raw(path: Path, name: str) -> np.ndarray:
    with open(path, "rb") as fh:
        header_len = int.from_bytes(fh.read(8), "little")
        header = json.loads(fh.read(header_len))
        entry = header[name]
        start, end = entry["data_offsets"]
        fh.seek(8 + header_len + start)
        buf = fh.read(end - start)
    return np.frombuffer(buf, dtype=_DTYPES[entry["dtype"]]).reshape(entry["shape"]).copy()


def _is_pickle(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(9)
    # safetensors: 8-byte header length, then the JSON header's "{"; pickle 2+: 0x80, protocol
    looks_safetensors = len(head) == 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < path.stat().st_size
    return not looks_safetensors and head[:1] == b"\x80"


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
    tree = _encode(obj, (), tensors)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    safetensors.numpy.save_file(tensors, str(tmp), metadata={_FORMAT_KEY: _FORMAT, _TREE_KEY: json.dumps(tree)})
    tmp.replace(path)


def load(path, *, return_numpy: bool = False, **configs):
    """Load what `pdx.save` wrote (Paddle's `paddle.load`).

    Also reads any safetensors file (as a flat dict name -> array) and Paddle
    `.pdparams` pickles through `load_pdparams`'s allow-list unpickler, which
    only builds arrays and containers and never runs code from the file.

    Args:
      path: the file.
      return_numpy: numpy arrays instead of jax.Arrays.
      **configs: accepted for Paddle compatibility and ignored.

    Returns:
      The saved object.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"pdx.load: no file at {str(path)!r}")
    convert = (lambda a: a) if return_numpy else jnp.asarray
    if _is_pickle(path):
        from pdx.checkpoint._pdparams import load_pdparams

        obj = load_pdparams(path)
        return obj if return_numpy else jax.tree.map(
            lambda v: convert(v) if isinstance(v, np.ndarray) else v, obj)
    try:
        tensors, meta = _read(path)
    except Exception as e:  # safetensors raises its own error types for bad headers
        raise ValueError(f"pdx.load({str(path)!r}): not a safetensors file written by pdx.save: {e}") from None
    if meta.get(_FORMAT_KEY) == _FORMAT and _TREE_KEY in meta:
        return _decode(json.loads(meta[_TREE_KEY]), tensors, convert)
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
