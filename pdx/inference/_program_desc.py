"""Paddle's legacy ProgramDesc protobuf (`model.pdmodel`) read as data into the same `Program` the PIR path builds.

Nothing here executes what it reads and no protobuf library is used: a small
wire-format reader (varint, length-delimited, fixed32/64) walks a schema
declared below from Paddle's `framework.proto` (ProgramDesc 1: blocks;
BlockDesc 3: vars, 4: ops; VarDesc 1: name, 2: type, 3: persistable;
OpDesc 1: inputs, 2: outputs, 3: type, 4: attrs). Every length is checked
against the bytes left, nesting depth and total size are capped, and any
refusal raises `ModelFormatError` naming the file, the byte offset and what
was refused. Legacy op names and attributes are then adapted to the PIR ops
the translator knows (`conv2d` -> `pd_op.conv2d`, `pool2d`'s `ksize` ->
a constant input, `elementwise_add` with `axis` -> `unsqueeze` + `add`, ...).

Example:
  >>> prog = read_program_desc("m/model.pdmodel")  # doctest: +SKIP
  >>> [op.name for op in prog.ops][:2]             # doctest: +SKIP
  ['pd_op.conv2d', 'pd_op.full_int_array']
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from pdx import _safefile
from pdx.inference._program_file import (
    _PROTO_DTYPES,
    MAX_PROGRAM_BYTES,
    Feed,
    Fetch,
    ModelFormatError,
    Op,
    Param,
    Program,
    read_varint,
)

__all__ = ["MAX_DEPTH", "parse_message", "read_program_desc"]

MAX_DEPTH = 8
_MAX_RANK = 16

# Field kinds of the declared schema: "msg:<Name>", "str", "int" (varint), "sint" (varint as int64),
# "bool", "f32", "f64"; repeated fields collect lists (packed or not).
_SCHEMA: dict[str, dict[int, tuple[str, str, bool]]] = {
    "ProgramDesc": {1: ("blocks", "msg:BlockDesc", True), 4: ("version", "msg:Version", False)},
    "Version": {1: ("version", "sint", False)},
    "BlockDesc": {1: ("idx", "int", False), 2: ("parent_idx", "sint", False), 3: ("vars", "msg:VarDesc", True),
                  4: ("ops", "msg:OpDesc", True), 5: ("forward_block_idx", "sint", False)},
    "VarDesc": {1: ("name", "str", False), 2: ("type", "msg:VarType", False), 3: ("persistable", "bool", False),
                4: ("need_check_feed", "bool", False), 5: ("is_parameter", "bool", False),
                6: ("stop_gradient", "bool", False)},
    "VarType": {1: ("type", "int", False), 3: ("dense_tensor", "msg:DenseTensorDesc", False)},
    "DenseTensorDesc": {1: ("tensor", "msg:TensorDesc", False), 2: ("lod_level", "int", False)},
    "TensorDesc": {1: ("data_type", "int", False), 2: ("dims", "sint", True)},
    "OpDesc": {1: ("inputs", "msg:OpVar", True), 2: ("outputs", "msg:OpVar", True), 3: ("type", "str", False),
               4: ("attrs", "msg:Attr", True), 5: ("is_target", "bool", False)},
    "OpVar": {1: ("parameter", "str", False), 2: ("arguments", "str", True)},
    "Attr": {1: ("name", "str", False), 2: ("type", "int", False), 3: ("i", "sint", False), 4: ("f", "f32", False),
             5: ("s", "str", False), 6: ("ints", "sint", True), 7: ("floats", "f32", True),
             8: ("strings", "str", True), 10: ("b", "bool", False), 11: ("bools", "bool", True),
             12: ("block_idx", "sint", False), 13: ("l", "sint", False), 14: ("blocks_idx", "sint", True),
             15: ("longs", "sint", True), 16: ("float64s", "f64", True), 17: ("var_name", "str", False),
             18: ("vars_name", "str", True), 19: ("float64", "f64", False), 20: ("scalar", "msg:Scalar", False),
             21: ("scalars", "msg:Scalar", True)},
    "Scalar": {1: ("type", "int", False), 2: ("b", "bool", False), 3: ("i", "sint", False), 4: ("r", "f64", False)},
}
# AttrType numbers -> the Attr field holding the value.
_ATTR_FIELD = {0: "i", 1: "f", 2: "s", 3: "ints", 4: "floats", 5: "strings", 6: "b", 7: "bools", 8: "block_idx",
               9: "l", 10: "blocks_idx", 11: "longs", 12: "float64s", 13: "var_name", 14: "vars_name",
               15: "float64", 16: "scalar", 17: "scalars"}
# Scalar.type numbers -> the Scalar field holding the value (complex scalars are not read).
_SCALAR_FIELD = {1: "b", 2: "i", 3: "r"}
_DENSE_TENSOR, _FEED_MINIBATCH, _FETCH_LIST = 7, 9, 10
_SCALAR_KINDS = {"int": 0, "sint": 0, "bool": 0, "f32": 5, "f64": 1, "str": 2}


class _Reader(NamedTuple):
    data: bytes
    path: str


def _fail(r, off, what):
    raise ModelFormatError(f"{r.path}: byte {off}: {what}")


def _varint(r, off, end):
    return read_varint(r.data, off, end, "a", r.path)


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _scalar(r, kind, wire, off, end):
    """(value, next offset) of one scalar of `kind` at off, written with wire type `wire`."""
    if kind in ("f32", "f64"):
        size, fmt = (4, "<f") if kind == "f32" else (8, "<d")
        if wire != _SCALAR_KINDS[kind] or off + size > end:
            _fail(r, off, f"{kind} value needs wire type {_SCALAR_KINDS[kind]} and {size} bytes, "
                          f"got wire type {wire} with {end - off} bytes left")
        return struct.unpack_from(fmt, r.data, off)[0], off + size
    v, off = _varint(r, off, end)
    if kind == "bool":
        return bool(v), off
    return (_signed(v) if kind == "sint" else v), off


def parse_message(r: _Reader, name: str, off: int, end: int, depth: int = 0) -> dict[str, Any]:
    """Fields of message `name` in r.data[off:end] as a dict (repeated ones as lists); unknown fields skipped."""
    if depth > MAX_DEPTH:
        _fail(r, off, f"messages nest deeper than {MAX_DEPTH} ({name})")
    schema, out = _SCHEMA[name], {}
    while off < end:
        key_at = off
        key, off = _varint(r, off, end)
        field, wire = key >> 3, key & 7
        if field == 0 or wire in (3, 4, 6, 7):
            _fail(r, key_at, f"{name}: field {field} with wire type {wire} is not valid protobuf")
        spec = schema.get(field)
        if wire == 2:
            n, off = _varint(r, off, end)
            if n > end - off:
                _fail(r, off, f"{name} field {field} claims {n} bytes, {end - off} are left in its message")
            stop = off + n
        else:
            stop = None
        if spec is None:  # a field outside the declared schema: skipped by its wire length
            off = stop if stop is not None else _skip(r, wire, off, end)
            continue
        fname, kind, repeated = spec
        if kind.startswith("msg:"):
            if stop is None:
                _fail(r, key_at, f"{name}.{fname} must be a message (wire type 2), got wire type {wire}")
            values, off = [parse_message(r, kind[4:], off, stop, depth + 1)], stop
        elif kind == "str":
            if stop is None:
                _fail(r, key_at, f"{name}.{fname} must be a string (wire type 2), got wire type {wire}")
            try:
                values = [r.data[off:stop].decode("utf-8")]
            except UnicodeDecodeError:
                _fail(r, off, f"{name}.{fname} is not UTF-8")
            off = stop
        elif stop is not None:  # packed repeated scalars
            if not repeated:
                _fail(r, key_at, f"{name}.{fname} is not a repeated field but is written packed")
            values, p = [], off
            while p < stop:
                v, p = _scalar(r, kind, _SCALAR_KINDS[kind], p, stop)
                values.append(v)
            off = stop
        else:
            v, off = _scalar(r, kind, wire, off, end)
            values = [v]
        if repeated:
            out.setdefault(fname, []).extend(values)
        else:
            out[fname] = values[-1]
    return out


def _skip(r, wire, off, end):
    if wire == 0:
        return _varint(r, off, end)[1]
    size = 8 if wire == 1 else 4
    if off + size > end:
        _fail(r, off, f"fixed{size * 8} field needs {size} bytes, {end - off} are left")
    return off + size


# ---- legacy ops -> PIR op records ----------------------------------------------------------------

_UNARY = {"relu", "relu6", "sigmoid", "tanh", "silu", "swish", "exp", "log", "sqrt", "rsqrt", "abs", "square",
          "floor", "ceil", "erf", "sin", "cos", "softplus", "mish", "elu", "sign", "reciprocal", "gelu",
          "softmax", "log_softmax", "logical_not"}
_RENAME = {"hard_swish": "hardswish", "hard_sigmoid": "hardsigmoid", "lookup_table_v2": "embedding",
           "depthwise_conv2d": "depthwise_conv2d", "conv2d": "conv2d", "conv3d": "conv3d",
           "leaky_relu": "leaky_relu", "assign": "assign", "gather": "gather",
           "where": "where"}
_ELEMENTWISE = {"elementwise_add": "add", "elementwise_sub": "subtract", "elementwise_mul": "multiply",
                "elementwise_div": "divide", "elementwise_max": "maximum", "elementwise_min": "minimum",
                "elementwise_pow": "elementwise_pow", "elementwise_floordiv": "floor_divide",
                "elementwise_mod": "remainder", "equal": "equal", "not_equal": "not_equal", "less_than": "less_than",
                "less_equal": "less_equal", "greater_than": "greater_than", "greater_equal": "greater_equal",
                "logical_and": "logical_and", "logical_or": "logical_or"}
_REDUCE = {"reduce_mean": "mean", "reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
           "reduce_prod": "prod"}
# The legacy input slots of each op, in the order the PIR op takes its inputs.
_SLOTS = {"conv2d": ("Input", "Filter"), "depthwise_conv2d": ("Input", "Filter"), "conv3d": ("Input", "Filter"),
          "layer_norm": ("X", "Scale", "Bias"), "embedding": ("Ids", "W"), "gather": ("X", "Index", "Axis"),
          "where": ("Condition", "X", "Y"), "assign": ("X",), "leaky_relu": ("X",), "hardswish": ("X",),
          "hardsigmoid": ("X",)}


class _Builder:
    """Turns legacy ops (named variables, reassignable) into SSA op records with integer value ids."""

    def __init__(self, path, var_ranks, var_dtypes):
        self.path, self.ranks, self.dtypes = path, var_ranks, var_dtypes
        self.ids: dict[str, int] = {}
        self.next_id = 1
        self.ops: list[Op] = []
        self.index = 0

    def define(self, name=None):
        vid = self.next_id
        self.next_id += 1
        if name is not None:
            self.ids[name] = vid
        return vid

    def use(self, name):
        if name not in self.ids:
            raise ModelFormatError(f"{self.path}: op #{self.index}: input variable {name!r} is used before it is "
                                   "defined")
        return self.ids[name]

    def emit(self, name, attrs, inputs, outputs):
        self.ops.append(Op(self.index, name, attrs, tuple(inputs), tuple(outputs)))

    def const(self, values, dtype="int64"):
        vid = self.define()
        self.emit("pd_op.full_int_array", {"value": [int(v) for v in values], "dtype": dtype}, (), (vid,))
        return vid

    def full(self, value, dtype="float32"):
        vid = self.define()
        self.emit("pd_op.full", {"shape": [1], "value": float(value), "dtype": dtype}, (), (vid,))
        return vid


def _one(op, slot, required=True, side="in"):
    args = op[side].get(slot, [])
    if not args and not required:
        return None
    if len(args) != 1:
        raise ModelFormatError(f"{op['path']}: op #{op['index']} ({op['type']}): slot {slot!r} holds {args}, "
                               "expected one variable")
    return args[0]


def _int_list(b: _Builder, op, tensor_slot, list_slot, attr):
    """The value id of an int list given as a 1-D tensor, a list of scalar tensors, or an attribute.

    Paddle's legacy ops take list arguments (reshape's shape, slice's starts, expand's shape) in one of
    these three forms; a list holding any tensor is stored whole as `list_slot` (constants as
    fill_constant ops), so the forms never mix.
    """
    ins = op["in"]
    if tensor_slot and ins.get(tensor_slot):
        return b.use(_one(op, tensor_slot))
    if list_slot and ins.get(list_slot):
        parts = b.define()
        b.emit("builtin.combine", {}, tuple(b.use(n) for n in ins[list_slot]), (parts,))
        return parts
    return b.const(op["attrs"].get(attr, []))


def _fill_value(b: _Builder, a, dtype):
    """fill_constant's value: `str_value` when set (exact for int64), else the float `value`."""
    text = a.get("str_value") or ""
    if text:
        try:
            if dtype == "bool":
                return float(text.lower() in ("1", "true"))
            return int(text) if dtype.startswith(("int", "uint")) else float(text)
        except ValueError:
            raise ModelFormatError(f"{b.path}: op #{b.index} (fill_constant): str_value {text[:40]!r} is not a "
                                   f"{dtype} number") from None
    return float(a.get("value", 0.0))


def _adapt_shape_op(b: _Builder, op) -> bool:
    """Emit the records for the legacy ops that compute shapes and constants; False if `op` is not one."""
    t, a, ins = op["type"], op["attrs"], op["in"]
    get = lambda slot: b.use(_one(op, slot)) if ins.get(slot) else 0  # noqa: E731
    out = lambda slot: b.define(_one(op, slot, side="out")) if op["out"].get(slot) else b.define()  # noqa: E731
    out_dtype = lambda slot: b.dtypes.get(_one(op, slot, side="out"), "int64")  # noqa: E731
    if t == "shape":
        name = "pd_op.shape64" if out_dtype("Out") == "int64" else "pd_op.shape"
        b.emit(name, {}, (get("Input"),), (out("Out"),))
    elif t == "size":
        b.emit("pd_op.numel", {}, (get("Input"),), (out("Out"),))
    elif t == "slice":
        starts = _int_list(b, op, "StartsTensor", "StartsTensorList", "starts")
        ends = _int_list(b, op, "EndsTensor", "EndsTensorList", "ends")
        attrs = {"axes": list(a.get("axes", [])), "decrease_axis": list(a.get("decrease_axis", []))}
        b.emit("pd_op.slice", attrs, (get("Input"), starts, ends), (out("Out"),))
    elif t == "fill_constant":
        dtype = _PROTO_DTYPES.get(a.get("dtype"), "float32")
        value = _fill_value(b, a, dtype)
        if ins.get("ShapeTensor") or ins.get("ShapeTensorList") or ins.get("ValueTensor"):
            shape = _int_list(b, op, "ShapeTensor", "ShapeTensorList", "shape")
            v = get("ValueTensor") if ins.get("ValueTensor") else b.full(value, dtype)
            b.emit("pd_op.full_with_tensor", {"dtype": dtype}, (v, shape), (out("Out"),))
        else:
            b.emit("pd_op.full", {"shape": list(a.get("shape", [])), "value": value, "dtype": dtype}, (),
                   (out("Out"),))
    elif t == "fill_any_like":
        dtype = _PROTO_DTYPES.get(a.get("dtype"), b.dtypes.get(_one(op, "X"), "float32"))
        value = b.full(float(a.get("value", 0.0)), dtype)
        b.emit("pd_op.full_like", {"dtype": dtype}, (get("X"), value), (out("Out"),))
    elif t == "range":
        b.emit("pd_op.arange", {"dtype": out_dtype("Out")}, (get("Start"), get("End"), get("Step")), (out("Out"),))
    elif t == "expand_v2":
        shape = _int_list(b, op, "Shape", "expand_shapes_tensor", "shape")
        b.emit("pd_op.expand", {}, (get("X"), shape), (out("Out"),))
    elif t == "assign_value":
        dtype = _PROTO_DTYPES.get(a.get("dtype"), "float32")
        values = next((a[k] for k in ("values", "fp32_values", "int32_values", "int64_values", "bool_values",
                                      "fp64_values") if a.get(k)), [])
        b.emit("pd_op.assign_value", {"shape": list(a.get("shape", [])), "dtype": dtype, "values": list(values)},
               (), (out("Out"),))
    else:
        return False
    return True


def _adapt(b: _Builder, op) -> None:
    """Emit the PIR op records for one legacy op."""
    t, a, ins, outs = op["type"], op["attrs"], op["in"], op["out"]
    get = lambda slot: b.use(_one(op, slot)) if ins.get(slot) else 0  # noqa: E731
    out = lambda slot: b.define(_one(op, slot, side="out")) if outs.get(slot) else b.define()  # noqa: E731
    if _adapt_shape_op(b, op):
        return
    if t in _UNARY:
        x = get("X")
        attrs = {"axis": a.get("axis", -1), "approximate": a.get("approximate", False)}
        b.emit(f"pd_op.{t}", attrs, (x,), (out("Out"),))
    elif t in _ELEMENTWISE:
        xn, yn = _one(op, "X"), _one(op, "Y")
        x, y = b.use(xn), b.use(yn)
        axis, rx, ry = int(a.get("axis", -1)), b.ranks.get(xn), b.ranks.get(yn)
        if axis != -1 and rx is not None and ry is not None and ry < rx and axis + ry < rx:
            y2 = b.define()
            b.emit("pd_op.unsqueeze", {}, (y, b.const([-1] * (rx - axis - ry))), (y2, b.define()))
            y = y2
        b.emit(f"pd_op.{_ELEMENTWISE[t]}", {}, (x, y), (out("Out"),))
    elif t in _REDUCE:
        attrs = {"keepdim": bool(a.get("keep_dim", False)), "reduce_all": bool(a.get("reduce_all", False))}
        b.emit(f"pd_op.{_REDUCE[t]}", attrs, (get("X"), b.const(a.get("dim", []))), (out("Out"),))
    elif t in ("conv2d", "depthwise_conv2d", "conv3d"):
        b.emit(f"pd_op.{t}", a, (get("Input"), get("Filter")), (out("Output"),))
    elif t == "pool2d":
        attrs = {**a, "kernel_size": a.get("ksize")}
        b.emit("pd_op.pool2d", attrs, (get("X"), b.const(a.get("ksize", []))), (out("Out"),))
    elif t == "batch_norm":
        attrs = {**a, "data_format": a.get("data_layout", "NCHW")}
        inputs = (get("X"), get("Mean"), get("Variance"), get("Scale"), get("Bias"))
        outputs = tuple(out(s) for s in ("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance",
                                         "ReserveSpace"))
        b.emit("pd_op.batch_norm", attrs, inputs, outputs)
    elif t == "matmul_v2" or (t == "matmul" and float(a.get("alpha", 1.0)) == 1.0):
        attrs = {"transpose_x": bool(a.get("trans_x", a.get("transpose_X", False))),
                 "transpose_y": bool(a.get("trans_y", a.get("transpose_Y", False)))}
        b.emit("pd_op.matmul", attrs, (get("X"), get("Y")), (out("Out"),))
    elif t in ("flatten_contiguous_range",):
        b.emit("pd_op.flatten", a, (get("X"),), (out("Out"), out("XShape")))
    elif t == "reshape2":
        shape = _int_list(b, op, "Shape", "ShapeTensor", "shape")
        b.emit("pd_op.reshape", {}, (get("X"), shape), (out("Out"), out("XShape")))
    elif t == "transpose2":
        b.emit("pd_op.transpose", {"perm": list(a.get("axis", []))}, (get("X"),), (out("Out"), out("XShape")))
    elif t in ("unsqueeze2", "squeeze2"):
        axes = _int_list(b, op, "AxesTensor", "AxesTensorList", "axes")
        b.emit(f"pd_op.{t[:-1]}", {}, (get("X"), axes), (out("Out"), out("XShape")))
    elif t == "layer_norm":
        attrs = {"begin_norm_axis": int(a.get("begin_norm_axis", 1)), "epsilon": float(a.get("epsilon", 1e-5))}
        b.emit("pd_op.layer_norm", attrs, (get("X"), get("Scale"), get("Bias")),
               (out("Y"), out("Mean"), out("Variance")))
    elif t == "tile":
        repeats = _int_list(b, op, "RepeatTimes", "repeat_times_tensor", "repeat_times")
        b.emit("pd_op.tile", {}, (get("X"), repeats), (out("Out"),))
    elif t == "split":
        axis = get("AxisTensor") if ins.get("AxisTensor") else b.const([a.get("axis", 0)])
        parts = b.define()
        if int(a.get("num", 0)) > 0:
            b.emit("pd_op.split_with_num", {"num": int(a["num"])}, (get("X"), axis), (parts,))
        else:
            sections = _int_list(b, op, None, "SectionsTensorList", "sections")
            b.emit("pd_op.split", {}, (get("X"), sections, axis), (parts,))
        b.emit("builtin.split", {}, (parts,), tuple(b.define(n) for n in op["out"].get("Out", [])))
    elif t in ("conv2d_transpose", "depthwise_conv2d_transpose", "conv3d_transpose"):
        if ins.get("Bias"):
            raise ModelFormatError(f"{b.path}: op #{b.index} ({t}): a fused Bias input is not supported; save the "
                                   "model without the inference passes that fuse it")
        attrs = {k: a.get(k) for k in ("strides", "paddings", "output_padding", "padding_algorithm", "groups",
                                       "dilations", "data_format") if k in a}
        b.emit(f"pd_op.{t}", attrs, (get("Input"), get("Filter"), b.const(a.get("output_size", []))),
               (out("Output"),))
    elif t in ("nearest_interp_v2", "bilinear_interp_v2", "bicubic_interp_v2", "trilinear_interp_v2",
               "linear_interp_v2"):
        attrs = {"data_format": a.get("data_layout", "NCHW"), "out_d": int(a.get("out_d", -1)),
                 "out_h": int(a.get("out_h", -1)),
                 "out_w": int(a.get("out_w", -1)), "scale": [float(v) for v in a.get("scale", [])],
                 "interp_method": a.get("interp_method", t.split("_")[0]),
                 "align_corners": bool(a.get("align_corners", False)), "align_mode": int(a.get("align_mode", 1))}
        sizes = 0
        if ins.get("SizeTensor"):
            sizes = b.define()
            b.emit("builtin.combine", {}, tuple(b.use(n) for n in ins["SizeTensor"]), (sizes,))
        b.emit(f"pd_op.{t[:-3]}", attrs, (get("X"), get("OutSize"), sizes, get("Scale")), (out("Out"),))
    elif t == "strided_slice":
        starts = _int_list(b, op, "StartsTensor", "StartsTensorList", "starts")
        ends = _int_list(b, op, "EndsTensor", "EndsTensorList", "ends")
        strides = _int_list(b, op, "StridesTensor", "StridesTensorList", "strides")
        attrs = {"axes": list(a.get("axes", [])), "decrease_axis": list(a.get("decrease_axis", []))}
        b.emit("pd_op.strided_slice", attrs, (get("Input"), starts, ends, strides), (out("Out"),))
    elif t == "yolo_box":
        attrs = {k: a[k] for k in ("anchors", "class_num", "conf_thresh", "downsample_ratio", "clip_bbox",
                                   "scale_x_y", "iou_aware", "iou_aware_factor") if k in a}
        b.emit("pd_op.yolo_box", attrs, (get("X"), get("ImgSize")), (out("Boxes"), out("Scores")))
    elif t == "multiclass_nms3":
        attrs = {k: a[k] for k in ("score_threshold", "nms_top_k", "keep_top_k", "nms_threshold", "normalized",
                                   "nms_eta", "background_label") if k in a}
        b.emit("pd_op.multiclass_nms3", attrs, (get("BBoxes"), get("Scores"), get("RoisNum")),
               (out("Out"), out("Index"), out("NmsRoisNum")))
    elif t == "matrix_nms":
        attrs = {k: a[k] for k in ("score_threshold", "post_threshold", "nms_top_k", "keep_top_k", "use_gaussian",
                                   "gaussian_sigma", "normalized", "background_label") if k in a}
        b.emit("pd_op.matrix_nms", attrs, (get("BBoxes"), get("Scores")), (out("Out"), out("Index"), out("RoisNum")))
    elif t == "masked_fill":
        b.emit("pd_op.masked_fill", {}, (get("x"), get("mask"), get("value")), (out("out"),))
    elif t == "stanh":
        attrs = {"scale_a": float(a.get("scale_a", 0.67)), "scale_b": float(a.get("scale_b", 1.7159))}
        b.emit("pd_op.stanh", attrs, (get("X"),), (out("Out"),))
    elif t == "cumsum":
        attrs = {k: bool(a.get(k, False)) for k in ("flatten", "exclusive", "reverse")}
        b.emit("pd_op.cumsum", attrs, (get("X"), b.const([a.get("axis", -1)])), (out("Out"),))
    elif t == "tril_triu":
        name = "pd_op.tril" if a.get("lower", True) else "pd_op.triu"
        b.emit(name, {"diagonal": int(a.get("diagonal", 0))}, (get("X"),), (out("Out"),))
    elif t == "scale":
        attrs = {"scale": float(a.get("scale", 1.0)), "bias": float(a.get("bias", 0.0)),
                 "bias_after_scale": bool(a.get("bias_after_scale", True))}
        b.emit("pd_op.scale", attrs, (get("X"), get("ScaleTensor")), (out("Out"),))
    elif t == "dropout":
        attrs = {"mode": a.get("dropout_implementation", "downgrade_in_infer"), "p": float(a.get("dropout_prob",
                                                                                                 0.5))}
        b.emit("pd_op.dropout", attrs, (get("X"), 0, 0), (out("Out"), out("Mask")))
    elif t == "concat":
        parts = b.define()
        b.emit("builtin.combine", {}, tuple(b.use(n) for n in ins.get("X", [])), (parts,))
        b.emit("pd_op.concat", {}, (parts, b.const([a.get("axis", 0)])), (out("Out"),))
    elif t == "cast":
        dtype = _PROTO_DTYPES.get(a.get("out_dtype"))
        if dtype is None:
            raise ModelFormatError(f"{b.path}: op #{b.index} (cast): out_dtype {a.get('out_dtype')!r} is not a "
                                   "dense dtype pdx reads")
        b.emit("pd_op.cast", {"dtype": dtype}, (get("X"),), (out("Out"),))
    elif t in _RENAME:
        name = _RENAME[t]
        attrs = dict(a)
        if name == "leaky_relu":
            attrs["negative_slope"] = a.get("alpha", 0.02)
        b.emit(f"pd_op.{name}", attrs, tuple(get(s) for s in _SLOTS.get(name, ("X",))), (out("Out"),))
    else:  # left to the translator's unknown-op error, which lists what it supports
        b.emit(f"legacy.{t}", a, (), tuple(b.define(n) for args in outs.values() for n in args))


# ---- the program ---------------------------------------------------------------------------------


def _attr_value(r, attr, where):
    kind = attr.get("type")
    field = _ATTR_FIELD.get(kind)
    if field is None:
        raise ModelFormatError(f"{r.path}: {where}: attribute {attr.get('name')!r} has type {kind!r}, which pdx "
                               "does not read")
    if field in ("ints", "floats", "strings", "bools", "longs", "float64s", "blocks_idx", "vars_name"):
        return list(attr.get(field, []))
    if field in ("scalar", "scalars"):
        scalars = attr.get(field, []) if field == "scalars" else [attr.get(field, {})]
        values = []
        for sc in scalars:
            key = _SCALAR_FIELD.get(sc.get("type"))
            if key is None:
                raise ModelFormatError(f"{r.path}: {where}: attribute {attr.get('name')!r} holds a Scalar of type "
                                       f"{sc.get('type')!r}; pdx reads bool, int64 and float64 scalars")
            values.append(sc.get(key, {"b": False, "i": 0, "r": 0.0}[key]))
        return values if field == "scalars" else values[0]
    return attr.get(field, {"i": 0, "l": 0, "f": 0.0, "float64": 0.0, "s": "", "b": False}.get(field))


def _tensor(r, var):
    """(dtype, dims) of a dense-tensor VarDesc, or None for other variable kinds (feed / fetch lists)."""
    vt = var.get("type", {})
    if vt.get("type") != _DENSE_TENSOR:
        return None
    t = vt.get("dense_tensor", {}).get("tensor", {})
    dtype = _PROTO_DTYPES.get(t.get("data_type"))
    dims = tuple(t.get("dims", []))
    if dtype is None or len(dims) > _MAX_RANK or any(d < -1 for d in dims):
        raise ModelFormatError(f"{r.path}: variable {var.get('name')!r}: data_type {t.get('data_type')!r} dims "
                               f"{list(dims)[:20]} are not a dense tensor type pdx reads")
    return dtype, dims


def read_program_desc(path, *, max_bytes: int = MAX_PROGRAM_BYTES) -> Program:
    """Parse a legacy ProgramDesc file (`model.pdmodel`) into the `Program` the translator runs."""
    path = str(path)
    data = _safefile.read_file(path, max_bytes=max_bytes, what="Paddle program", error=ModelFormatError)
    r = _Reader(bytes(data), path)
    desc = parse_message(r, "ProgramDesc", 0, len(r.data))
    blocks = desc.get("blocks", [])
    if not blocks:
        raise ModelFormatError(f"{path}: byte 0: no BlockDesc: not a ProgramDesc written by paddle.jit.save")
    block = blocks[0]
    vars_ = {}
    for v in block.get("vars", []):
        if not isinstance(v.get("name"), str):
            raise ModelFormatError(f"{path}: block 0: a VarDesc has no name")
        vars_[v["name"]] = v
    tensors = {n: _tensor(r, v) for n, v in vars_.items()}
    b = _Builder(path, {n: len(t[1]) for n, t in tensors.items() if t is not None},
                 {n: t[0] for n, t in tensors.items() if t is not None})
    params, feeds, fetches = [], [], []
    for name in sorted(vars_):
        v, t = vars_[name], tensors[name]
        if v.get("persistable") and t is not None:
            if any(d < 0 for d in t[1]):
                raise ModelFormatError(f"{path}: parameter {name!r} needs a static shape, got {list(t[1])}")
            params.append(Param(name, b.define(name), t[0], t[1], True, not v.get("stop_gradient", False)))
    for index, raw in enumerate(block.get("ops", [])):
        b.index = index
        where = f"op #{index} ({raw.get('type')})"
        if not isinstance(raw.get("type"), str):
            raise ModelFormatError(f"{path}: op #{index}: an OpDesc has no type")
        op = {"type": raw["type"], "index": index, "path": path,
              "attrs": {x.get("name"): _attr_value(r, x, where) for x in raw.get("attrs", [])},
              "in": {x.get("parameter"): list(x.get("arguments", [])) for x in raw.get("inputs", [])},
              "out": {x.get("parameter"): list(x.get("arguments", [])) for x in raw.get("outputs", [])}}
        if op["type"] == "feed":
            name = _one(op, "Out", side="out")
            t = tensors.get(name)
            if t is None:
                raise ModelFormatError(f"{path}: {where}: feed target {name!r} is not a declared dense tensor")
            feeds.append((op["attrs"].get("col", 0), Feed(name, b.define(name), t[0],
                                                          tuple(None if d < 0 else d for d in t[1]))))
        elif op["type"] == "fetch":
            name = _one(op, "X")
            fetches.append(Fetch(name, b.use(name), int(op["attrs"].get("col", 0))))
        else:
            _adapt(b, op)
    if not feeds:
        raise ModelFormatError(f"{path}: program: no feed op: the program takes no input")
    if not fetches:
        raise ModelFormatError(f"{path}: program: no fetch op: the program returns nothing")
    feeds.sort(key=lambda cf: cf[0])
    fetches.sort(key=lambda f: f.col)
    return Program(path, tuple(params), tuple(f for _, f in feeds), tuple(fetches), tuple(b.ops))
