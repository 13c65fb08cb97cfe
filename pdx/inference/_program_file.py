"""Paddle's saved inference programs as data: the PIR JSON program and the `.pdiparams` tensor stream.

Nothing here executes what it reads. The JSON goes through `pdx._safefile`
(regular files only, size cap, nesting-depth cap); every field the
translator uses is type-checked here, so later code sees typed records
(`Program`, `Op`, `Param`, `Feed`, `Fetch`). The `.pdiparams` stream is
read tensor by tensor with each length, dtype and shape checked against the
parameter the program declares; any disagreement raises `ModelFormatError`
naming the file, the byte offset and what was refused.

Stream layout (Paddle's `save_combine`: the persistable parameters sorted by
name, each one as):

```
uint32 version (0) | uint64 lod_level | lod_level x (uint64 nbytes, nbytes of offsets)
uint32 version (0) | int32 desc_size | TensorDesc protobuf (1: data_type varint, 2: dims int64)
raw little-endian data, numel x itemsize bytes
```
"""

from __future__ import annotations

import os
import re
import struct
from typing import Any, NamedTuple

import numpy as np

from pdx import _safefile

__all__ = [
    "MAX_PARAMS_BYTES",
    "MAX_PROGRAM_BYTES",
    "Block",
    "Feed",
    "Fetch",
    "ModelFormatError",
    "Op",
    "Param",
    "Program",
    "read_params",
    "read_program",
    "walk_ops",
]

MAX_PROGRAM_BYTES = 512 << 20
MAX_PARAMS_BYTES = 16 << 30
_MAX_LOD_LEVEL = 8
_MAX_DESC_BYTES = 1 << 12
_MAX_RANK = 16
_MAX_BLOCK_DEPTH = 8  # control-flow ops nested in control-flow ops

# PIR dialect numbers as the JSON writer spells them ("1.conv2d" is pd_op.conv2d).
_DIALECTS = {"0": "builtin", "1": "pd_op", "2": "cf"}
_TYPE_DTYPES = {"t_f32": "float32", "t_f64": "float64", "t_f16": "float16", "t_bf16": "bfloat16",
                "t_i64": "int64", "t_i32": "int32", "t_i16": "int16", "t_i8": "int8", "t_ui8": "uint8",
                "t_bool": "bool", "t_c64": "complex64", "t_c128": "complex128"}
# framework.proto VarType.Type numbers of the dense dtypes.
_PROTO_DTYPES = {0: "bool", 1: "int16", 2: "int32", 3: "int64", 4: "float16", 5: "float32", 6: "float64",
                 20: "uint8", 21: "int8", 22: "bfloat16", 23: "complex64", 24: "complex128"}
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


class ModelFormatError(ValueError):
    """A saved Paddle model pdx refuses to read: the message names the file, where, and what was refused."""


class Param(NamedTuple):
    """A parameter the program declares (a `builtin.parameter` op)."""
    name: str
    value: int  # the SSA value id that holds it
    dtype: str
    shape: tuple[int, ...]
    persistable: bool  # stored in .pdiparams
    trainable: bool  # False for batch-norm statistics


class Feed(NamedTuple):
    """A program input (a `pd_op.data` op); `None` marks a dynamic dimension."""
    name: str
    value: int
    dtype: str
    shape: tuple[int | None, ...]


class Fetch(NamedTuple):
    """A program output (a `pd_op.fetch` op)."""
    name: str
    value: int
    col: int


class Op(NamedTuple):
    """One computation op: `name` is "dialect.op" (e.g. "pd_op.conv2d"); value id 0 is an absent input.

    `index` is the op's position in the program's block ("12"; "12.1.3" is op 3 of the second block of op
    12); `blocks` are the regions of a control-flow op (pd_op.if: true, false; pd_op.while: the body).
    """
    index: int | str
    name: str
    attrs: dict[str, Any]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    blocks: tuple[Block, ...] = ()


class Block(NamedTuple):
    """A region of a control-flow op: the values bound on entry (`args`), its ops, and the values its
    closing `cf.yield` returns. Its ops read values of the enclosing blocks; what they define stays inside."""
    args: tuple[int, ...]
    ops: tuple[Op, ...]
    yields: tuple[int, ...]


def walk_ops(ops):
    """Every op of `ops`, those inside control-flow blocks included (depth first)."""
    for op in ops:
        yield op
        for block in op.blocks:
            yield from walk_ops(block.ops)


class Program(NamedTuple):
    path: str
    params: tuple[Param, ...]
    feeds: tuple[Feed, ...]
    fetches: tuple[Fetch, ...]
    ops: tuple[Op, ...]


def _need(cond, path, where, what):
    if not cond:
        raise ModelFormatError(f"{path}: {where}: {what}")


def _attr(node, path, where, depth=0):
    """The Python value of a serialized PIR attribute ({"#": "0.a_i32", "D": 3}, arrays nested)."""
    _need(isinstance(node, dict) and isinstance(node.get("#"), str), path, where,
          f"an attribute must be an object with a '#' type tag, got {str(node)[:80]!r}")
    _need(depth < 8, path, where, "attribute arrays nest deeper than 8")
    tag, data = node["#"].partition(".")[2], node.get("D")
    if tag == "a_array":
        _need(isinstance(data, list), path, where, f"array attribute holds {type(data).__name__}, not a list")
        return [_attr(x, path, where, depth + 1) for x in data]
    if tag in ("a_bool",):
        _need(isinstance(data, bool), path, where, f"{tag} holds {data!r}")
        return data
    if tag in ("a_i32", "a_i64", "a_index"):
        _need(isinstance(data, int) and not isinstance(data, bool), path, where, f"{tag} holds {data!r}")
        return data
    if tag in ("a_f32", "a_f64"):
        _need(isinstance(data, (int, float)) and not isinstance(data, bool), path, where, f"{tag} holds {data!r}")
        return float(data)
    if tag in ("a_str", "a_dtype"):
        _need(isinstance(data, str), path, where, f"{tag} holds {data!r}")
        return data
    if tag == "a_intarray":
        _need(isinstance(data, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in data),
              path, where, f"a_intarray holds {str(data)[:80]!r}")
        return list(data)
    if tag == "a_place":
        return data
    raise ModelFormatError(f"{path}: {where}: attribute type {node['#']!r} is not one pdx reads")


def _tensor_type(node, path, where):
    """(dtype, shape) of a "0.t_dtensor" type, or ("vector", element count) of "0.t_vec"."""
    _need(isinstance(node, dict) and isinstance(node.get("#"), str), path, where, "a value type must be an object")
    tag = node["#"].partition(".")[2]
    data = node.get("D")
    if tag == "t_vec":
        return "vector", ()
    if tag == "t_null":
        return "null", ()
    _need(tag == "t_dtensor" and isinstance(data, list) and len(data) >= 2, path, where,
          f"value type {node['#']!r} is not a dense tensor type pdx reads")
    dnode, shape = data[0], data[1]
    dtag = dnode.get("#", "").partition(".")[2] if isinstance(dnode, dict) else None
    _need(dtag in _TYPE_DTYPES, path, where, f"element type {dnode!r} is not one pdx reads")
    _need(isinstance(shape, list) and len(shape) <= _MAX_RANK
          and all(isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in shape),
          path, where, f"shape {str(shape)[:80]} must be a list of at most {_MAX_RANK} sizes >= -1")
    return _TYPE_DTYPES[dtag], tuple(shape)


def _value_id(node, path, where):
    # block arguments have negative ids; whether an id is defined where it is read is checked by the caller
    _need(isinstance(node, dict) and isinstance(node.get("%"), int) and not isinstance(node.get("%"), bool),
          path, where, f"a value reference must be {{'%': id}}, got {str(node)[:80]!r}")
    return node["%"]


def _read_op(node, index, path, defined: set, depth: int) -> Op:
    """One op (not a parameter) with its control-flow blocks; its outputs are added to `defined`."""
    where = f"op #{index}"
    _need(isinstance(node, dict) and isinstance(node.get("#"), str), path, where, "an op must be an object "
          "with a '#' name")
    dialect, _, opname = node["#"].partition(".")
    _need(dialect in _DIALECTS, path, where, f"op {node['#']!r}: dialect number {dialect!r} is not one pdx "
          f"reads ({sorted(_DIALECTS.items())})")
    full = f"{_DIALECTS[dialect]}.{opname}"
    raw_attrs = node.get("A", [])
    _need(isinstance(raw_attrs, list), path, where, "attributes 'A' must be a list")
    attrs = {}
    for item in raw_attrs:
        _need(isinstance(item, dict) and isinstance(item.get("N"), str), path, where,
              "an attribute entry must be {'N': name, 'AT': value}")
        attrs[item["N"]] = _attr(item.get("AT"), path, f"{where} ({full}) attribute {item['N']!r}")
    raw_in, raw_out = node.get("I", []), node.get("O", [])
    _need(isinstance(raw_in, list) and isinstance(raw_out, list), path, where, "'I' and 'O' must be lists")
    inputs = tuple(_value_id(v, path, f"{where} ({full}) input") for v in raw_in)
    for v in inputs:
        _need(v in defined, path, f"{where} ({full})", f"input %{v} is used before it is defined")
    blocks = _read_blocks(node, index, full, path, defined, depth)
    outputs = []
    for v in raw_out:
        vid = _value_id(v, path, f"{where} ({full}) output")
        _need(vid not in defined, path, where, f"value %{vid} is defined twice")
        defined.add(vid)
        outputs.append(vid)
    return Op(index, full, attrs, inputs, tuple(outputs), blocks)


def _read_blocks(node, index, full, path, defined: set, depth: int) -> tuple[Block, ...]:
    """The regions of a control-flow op, each one block ending in cf.yield (values inside stay inside)."""
    where = f"op #{index} ({full})"
    regions = node.get("regions", [])
    _need(isinstance(regions, list), path, where, "'regions' must be a list")
    if regions:
        _need(depth < _MAX_BLOCK_DEPTH, path, where, f"control-flow blocks nest deeper than {_MAX_BLOCK_DEPTH}")
    blocks = []
    for r, region in enumerate(regions):
        _need(isinstance(region, dict) and isinstance(region.get("blocks"), list) and len(region["blocks"]) == 1,
              path, f"{where} region {r}", "a region must hold one block")
        block = region["blocks"][0]
        _need(isinstance(block, dict) and isinstance(block.get("ops"), list)
              and isinstance(block.get("args", []), list), path, f"{where} region {r}",
              "a block must be an object with 'ops' and 'args' lists")
        inner, args = set(defined), []
        for a in block.get("args", []):
            vid = a.get("#") if isinstance(a, dict) else None
            _need(isinstance(vid, int) and not isinstance(vid, bool) and vid not in inner, path,
                  f"{where} region {r}", f"a block argument must be {{'#': a new value id}}, got {str(a)[:80]!r}")
            inner.add(vid)
            args.append(vid)
        ops, yields = [], None
        for k, child in enumerate(block["ops"]):
            op = _read_op(child, f"{index}.{r}.{k}", path, inner, depth + 1)
            if op.name == "cf.yield":
                _need(k == len(block["ops"]) - 1, path, f"op #{op.index}", "cf.yield must be the last op of its block")
                yields = op.inputs
            else:
                ops.append(op)
        _need(yields is not None, path, f"{where} region {r}", "the block does not end in cf.yield")
        blocks.append(Block(tuple(args), tuple(ops), yields))
    return tuple(blocks)


def read_program(path, *, max_bytes: int = MAX_PROGRAM_BYTES) -> Program:
    """Parse a PIR JSON program file (`model.json`) into a `Program`, checking its structure."""
    path = str(path)
    data = _safefile.read_file(path, max_bytes=max_bytes, what="Paddle program", error=ModelFormatError)
    doc = _safefile.load_json(data, what=f"Paddle program {path!r}", error=ModelFormatError)
    _need(isinstance(doc, dict) and isinstance(doc.get("base_code"), dict), path, "top level",
          "no 'base_code' object: not a PIR JSON program written by paddle.jit.save")
    magic = doc["base_code"].get("magic")
    _need(magic == "pir", path, "base_code", f"magic is {magic!r}, expected 'pir'")
    try:
        regions = doc["program"]["regions"]
        blocks = regions[0]["blocks"]
        ops = blocks[0]["ops"]
    except (KeyError, IndexError, TypeError):
        raise ModelFormatError(f"{path}: program: expected program.regions[0].blocks[0].ops") from None
    _need(isinstance(regions, list) and len(regions) == 1 and isinstance(blocks, list) and len(blocks) == 1
          and isinstance(ops, list), path, "program",
          "pdx reads programs with one region holding one block (control-flow sub-blocks live inside ops)")
    params, feeds, fetches, body, defined = [], [], [], [], {0}
    names = set()
    for index, node in enumerate(ops):
        where = f"op #{index}"
        _need(isinstance(node, dict) and isinstance(node.get("#"), str), path, where, "an op must be an object "
              "with a '#' name")
        if node["#"] == "p":  # builtin.parameter, written in short form
            a, out, oa = node.get("A"), node.get("O"), node.get("OA")
            _need(isinstance(a, list) and len(a) >= 4 and isinstance(a[3], str), path, where,
                  "parameter op has no name in A[3]")
            _need(isinstance(oa, list) and len(oa) >= 3 and all(x in (0, 1) for x in oa[:3]), path, where,
                  "parameter op needs OA = [persistable, stop_gradient, trainable]")
            name = a[3]
            _need(_NAME_RE.match(name) is not None, path, where, f"parameter name {name[:80]!r} is not a dotted "
                  "identifier")
            _need(name not in names, path, where, f"parameter name {name!r} appears twice")
            names.add(name)
            _need(isinstance(out, dict), path, where, "parameter op has no output")
            vid = _value_id(out, path, where)
            dtype, shape = _tensor_type(out.get("TT"), path, f"{where} ({name})")
            _need(dtype not in ("vector", "null") and all(d >= 0 for d in shape), path, f"{where} ({name})",
                  f"a parameter needs a static shape, got {list(shape)}")
            _need(vid not in defined, path, where, f"value %{vid} is defined twice")
            defined.add(vid)
            params.append(Param(name, vid, dtype, shape, bool(oa[0]), bool(oa[2])))
            continue
        op = _read_op(node, index, path, defined, 0)
        if op.name == "pd_op.data":
            _need(len(op.outputs) == 1 and isinstance(op.attrs.get("name"), str), path, where, "data op needs a "
                  "name and one output")
            dtype, shape = _tensor_type(node["O"][0].get("TT"), path, where)
            feeds.append(Feed(op.attrs["name"], op.outputs[0], dtype, tuple(None if d < 0 else d for d in shape)))
            continue
        if op.name == "pd_op.fetch":
            _need(len(op.inputs) == 1 and isinstance(op.attrs.get("name"), str)
                  and isinstance(op.attrs.get("col"), int), path, where, "fetch op needs a name, a col and one input")
            fetches.append(Fetch(op.attrs["name"], op.inputs[0], op.attrs["col"]))
            continue
        _need(op.name != "cf.yield", path, where, "cf.yield outside a control-flow block")
        body.append(op)
    _need(feeds, path, "program", "no pd_op.data op: the program takes no input")
    _need(fetches, path, "program", "no pd_op.fetch op: the program returns nothing")
    fetches.sort(key=lambda f: f.col)
    return Program(path, tuple(params), tuple(feeds), tuple(fetches), tuple(body))


def read_varint(data, off: int, end: int, what: str, path) -> tuple[int, int]:
    """(value, offset after it) of the protobuf varint at data[off:end]; ModelFormatError past `end`
    or beyond 10 bytes, naming `path`, the byte offset and `what` holds the varint."""
    value, shift, start = 0, 0, off
    while True:
        if off >= end:
            raise ModelFormatError(f"{path}: byte {start}: {what} varint runs past the end of its message (byte {end})")
        b = data[off]
        off += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, off
        shift += 7
        if shift > 63:
            raise ModelFormatError(f"{path}: byte {start}: {what} varint is longer than 10 bytes")


def _varint(data, off, end, path):
    return read_varint(data, off, end, "TensorDesc", path)


def _tensor_desc(data, off, end, path):
    """(dtype, dims) from a TensorDesc message in data[off:end] (the schema: 1 data_type, 2 dims)."""
    dtype, dims = None, []
    start = off
    while off < end:
        key, off = _varint(data, off, end, path)
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 0:
            dtype, off = _varint(data, off, end, path)
        elif field == 2 and wire == 0:
            d, off = _varint(data, off, end, path)
            dims.append(d - (1 << 64) if d >= 1 << 63 else d)
        elif field == 2 and wire == 2:  # packed dims
            n, off = _varint(data, off, end, path)
            stop = off + n
            if stop > end:
                raise ModelFormatError(f"{path}: byte {off}: packed dims claim {n} bytes, past the TensorDesc end")
            while off < stop:
                d, off = _varint(data, off, stop, path)
                dims.append(d - (1 << 64) if d >= 1 << 63 else d)
        else:
            raise ModelFormatError(f"{path}: byte {off}: TensorDesc field {field} (wire type {wire}) is not in its "
                                   "schema (1: data_type, 2: dims)")
        if len(dims) > _MAX_RANK:
            raise ModelFormatError(f"{path}: byte {start}: TensorDesc has more than {_MAX_RANK} dims")
    if dtype not in _PROTO_DTYPES:
        raise ModelFormatError(f"{path}: byte {start}: TensorDesc data_type {dtype!r} is not a dense dtype pdx reads")
    return _PROTO_DTYPES[dtype], tuple(dims)


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def read_params(path, params, *, max_bytes: int = MAX_PARAMS_BYTES) -> dict[str, np.ndarray]:
    """The persistable parameters of `params` (a Program's) from a `.pdiparams` stream, checked one by one."""
    expected = sorted((p for p in params if p.persistable), key=lambda p: p.name)
    if path is None or not os.path.lexists(path):
        if not expected:  # paddle.jit.save writes no .pdiparams for a program without parameters
            return {}
        names = [p.name for p in expected]
        raise ModelFormatError(f"{path}: no parameters file, but the program declares {len(names)} parameters "
                               f"({names[:3]}{' ...' if len(names) > 3 else ''}); pass the .pdiparams file "
                               "paddle.jit.save wrote next to the program")
    path = str(path)
    data = _safefile.read_file(path, max_bytes=max_bytes, what="Paddle parameters", error=ModelFormatError)
    view, off, out = memoryview(data), 0, {}

    def take(n, what):
        nonlocal off
        if n < 0 or off + n > len(data):
            raise ModelFormatError(f"{path}: byte {off}: {what} needs {n} bytes, {len(data) - off} are left "
                                   "(the file is truncated or a length is wrong)")
        start = off
        off += n
        return start

    for p in expected:
        where = f"parameter {p.name!r}"
        (version,) = struct.unpack_from("<I", data, take(4, f"{where} version"))
        if version != 0:
            raise ModelFormatError(f"{path}: byte {off - 4}: {where}: tensor stream version {version}, expected 0")
        (lod_level,) = struct.unpack_from("<Q", data, take(8, f"{where} LoD level"))
        if lod_level > _MAX_LOD_LEVEL:
            raise ModelFormatError(f"{path}: byte {off - 8}: {where}: LoD level {lod_level} is over "
                                   f"{_MAX_LOD_LEVEL}")
        for _ in range(lod_level):
            (nbytes,) = struct.unpack_from("<Q", data, take(8, f"{where} LoD size"))
            take(nbytes, f"{where} LoD offsets")
        (version,) = struct.unpack_from("<I", data, take(4, f"{where} tensor version"))
        if version != 0:
            raise ModelFormatError(f"{path}: byte {off - 4}: {where}: tensor version {version}, expected 0")
        (desc_size,) = struct.unpack_from("<i", data, take(4, f"{where} TensorDesc size"))
        if not 0 < desc_size <= _MAX_DESC_BYTES:
            raise ModelFormatError(f"{path}: byte {off - 4}: {where}: TensorDesc size {desc_size} is not in "
                                   f"1..{_MAX_DESC_BYTES}")
        start = take(desc_size, f"{where} TensorDesc")
        dtype, dims = _tensor_desc(data, start, off, path)
        if dtype != p.dtype or dims != p.shape:
            raise ModelFormatError(f"{path}: byte {start}: {where}: the file holds {dtype}{list(dims)} but the "
                                   f"program declares {p.dtype}{list(p.shape)}")
        dt = _np_dtype(dtype)
        count = int(np.prod(dims, dtype=np.int64)) if dims else 1
        start = take(count * dt.itemsize, f"{where} data ({dtype}{list(dims)})")
        out[p.name] = np.frombuffer(view[start:off], dtype=dt).reshape(dims).copy()
    if off != len(data):
        raise ModelFormatError(f"{path}: byte {off}: {len(data) - off} bytes follow the last of the "
                               f"{len(expected)} parameters the program declares")
    return out
