"""`convert_to_mixed_precision`: a Paddle program whose float32 weights are stored in float16 / bfloat16."""

from __future__ import annotations

import json
import os
import struct

import numpy as np

from pdx import _safefile
from pdx.inference._predictor import PlaceType, PrecisionType
from pdx.inference._program_file import (
    MAX_PROGRAM_BYTES,
    ModelFormatError,
    _np_dtype,
    read_params,
    read_program,
)

__all__ = ["convert_to_mixed_precision"]

_TARGETS = {PrecisionType.Half: ("float16", "0.t_f16", 4), PrecisionType.Bfloat16: ("bfloat16", "0.t_bf16", 22)}
# Ops whose parameters stay float32 (Paddle keeps normalization statistics and scales in float32 too).
_KEEP_FLOAT32 = frozenset({"pd_op.batch_norm", "pd_op.batch_norm_", "pd_op.layer_norm", "pd_op.group_norm"})


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _tensor_bytes(array: np.ndarray, proto_dtype: int) -> bytes:
    desc = b"\x08" + _varint(proto_dtype) + b"".join(b"\x10" + _varint(d) for d in array.shape)
    return (struct.pack("<IQI", 0, 0, 0) + struct.pack("<i", len(desc)) + desc
            + np.ascontiguousarray(array).tobytes())


_PROTO = {"bool": 0, "int16": 1, "int32": 2, "int64": 3, "float16": 4, "float32": 5, "float64": 6, "uint8": 20,
          "int8": 21, "bfloat16": 22, "complex64": 23, "complex128": 24}


def _max_value_id(node) -> int:
    """The largest SSA value id ("%": n) anywhere in the parsed program (fetch outputs included)."""
    stack, top = [node], 0
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("%"), int):
                top = max(top, item["%"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return top


def convert_to_mixed_precision(model_file, params_file, mixed_model_file, mixed_params_file,
                               mixed_precision=PrecisionType.Half, backend=PlaceType.CPU, keep_io_types=True,
                               black_list=frozenset(), **kwargs):
    """Write a copy of a Paddle program whose float32 weights are stored in half precision (Paddle's name).

    A narrower form of Paddle's converter: the float32 parameters of every op
    outside `black_list` (and outside the normalization ops, whose statistics
    stay float32) are stored as float16 / bfloat16 — the `.pdiparams` file
    shrinks by about half — and the program casts each back to float32 where
    it is read, so the computation, the inputs and the outputs stay float32
    (Paddle's converter also computes those ops in half precision). The
    result is an ordinary PIR program: pdx and Paddle Inference both load it.

    Args:
      model_file, params_file: the float32 program (`model.json`) and its `.pdiparams`.
      mixed_model_file, mixed_params_file: where to write the converted pair.
      mixed_precision: `PrecisionType.Half` or `PrecisionType.Bfloat16`.
      backend: accepted (`PlaceType`); the files do not depend on it.
      keep_io_types: must be True (inputs and outputs stay float32).
      black_list: op names (Paddle's, e.g. "conv2d" or "pd_op.conv2d") whose weights stay float32.
      **kwargs: Paddle's `white_list` is accepted; every op outside `black_list` is converted.

    Example:
      >>> from pdx import inference                                                   # doctest: +SKIP
      >>> inference.convert_to_mixed_precision("m/model.json", "m/model.pdiparams",
      ...     "h/model.json", "h/model.pdiparams", inference.PrecisionType.Half,
      ...     inference.PlaceType.CPU)                                                 # doctest: +SKIP
    """
    if mixed_precision not in _TARGETS:
        raise ValueError(f"mixed_precision={mixed_precision} is not supported; use PrecisionType.Half or "
                         "PrecisionType.Bfloat16")
    if not keep_io_types:
        raise ValueError("keep_io_types=False is not supported: the converted program keeps float32 inputs and "
                         "outputs")
    if not isinstance(backend, PlaceType):
        raise TypeError(f"backend must be a PlaceType, got {backend!r}")
    unknown = set(kwargs) - {"white_list"}
    if unknown:
        raise TypeError(f"convert_to_mixed_precision got unexpected arguments {sorted(unknown)}")
    program = read_program(model_file)
    values = read_params(params_file, program.params)
    blocked = {n if n.startswith("pd_op.") else f"pd_op.{n}" for n in black_list} | _KEEP_FLOAT32
    by_value = {p.value: p for p in program.params}
    readers: dict[str, set[str]] = {}
    for op in program.ops:
        for v in op.inputs:
            if v in by_value:
                readers.setdefault(by_value[v].name, set()).add(op.name)
    convert = {p.name for p in program.params if p.persistable and p.dtype == "float32"
               and readers.get(p.name) and not readers[p.name] & blocked}
    dtype, type_tag, proto = _TARGETS[mixed_precision]

    doc = _safefile.load_json(_safefile.read_file(model_file, max_bytes=MAX_PROGRAM_BYTES, what="Paddle program",
                                                  error=ModelFormatError), what="Paddle program", error=ModelFormatError)
    ops = doc["program"]["regions"][0]["blocks"][0]["ops"]
    next_id = _max_value_id(ops) + 1
    out_ops, casts = [], []
    for node in ops:
        if node.get("#") == "p" and node["A"][3] in convert:
            old_type = json.loads(json.dumps(node["O"]["TT"]))
            old_id, node["O"]["%"] = node["O"]["%"], next_id
            node["O"]["TT"]["D"][0] = {"#": type_tag}
            casts.append({"#": "1.cast", "A": [{"AT": {"#": "1.a_dtype", "D": "float32"}, "N": "dtype"}],
                          "I": [{"%": next_id}], "O": [{"%": old_id, "TT": old_type}],
                          "OA": [{"AT": {"#": "0.a_array", "D": [{"#": "0.a_bool", "D": False}]},
                                  "N": "stop_gradient"}]})
            next_id += 1
        out_ops.append(node)
    first_op = next((i for i, n in enumerate(out_ops) if n.get("#") != "p"), len(out_ops))
    doc["program"]["regions"][0]["blocks"][0]["ops"] = out_ops[:first_op] + casts + out_ops[first_op:]
    chunks = []
    for name in sorted(values):
        array = values[name]
        if name in convert:
            chunks.append(_tensor_bytes(array.astype(_np_dtype(dtype)), proto))
        else:
            chunks.append(_tensor_bytes(array, _PROTO[str(array.dtype)]))
    os.makedirs(os.path.dirname(os.path.abspath(mixed_model_file)), exist_ok=True)
    os.makedirs(os.path.dirname(os.path.abspath(mixed_params_file)), exist_ok=True)
    with open(mixed_model_file, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    with open(mixed_params_file, "wb") as f:
        f.write(b"".join(chunks))
