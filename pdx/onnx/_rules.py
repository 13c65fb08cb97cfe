"""One ONNX rule per JAX primitive: `rule(graph, eqn, inputs) -> [output names]`.

`RULES` is the registry the converter reads (`_convert.emit_jaxpr`); a
primitive missing from it, or a form of one a rule cannot write (a
transposed convolution, an interior pad, a switch of more than two
branches), raises `UnsupportedPrimitiveError` naming it and the model line
it came from. `cond` becomes ONNX `If` and `while` becomes `Loop`, their
jaxprs written as subgraphs that read the values around them.
"""

from __future__ import annotations

import string
import types

import numpy as np
from onnx import TensorProto, helper

from pdx.onnx._convert import _Const
from pdx.onnx._convert import OnnxGraph, UnsupportedPrimitiveError, emit_jaxpr, is_symbolic, materialize, onnx_dtype

__all__ = ["MAX_UNROLL", "RULES", "SUPPORTED"]

MAX_UNROLL = 4096  # scan steps written out one by one; longer scans are refused


def _unsupported(graph: OnnxGraph, what: str, fix: str):
    raise UnsupportedPrimitiveError(f"{graph.where}: {what}; {fix}")


# ---- elementwise ------------------------------------------------------------------------------------------------

_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min", "pow": "Pow",
           "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual"}
_UNARY = {"neg": "Neg", "exp": "Exp", "log": "Log", "tanh": "Tanh", "logistic": "Sigmoid", "erf": "Erf",
          "sqrt": "Sqrt", "abs": "Abs", "sign": "Sign", "floor": "Floor", "ceil": "Ceil", "sin": "Sin", "cos": "Cos",
          "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh",
          "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "is_nan": "IsNaN"}
_IDENTITY = ("stop_gradient", "copy", "copy_p", "reduce_precision", "optimization_barrier", "sharding_constraint",
             "mesh_cast", "pvary")


def _binary(op_type):
    def rule(graph, eqn, ins):
        return [graph.op(op_type, ins)]
    return rule


def _unary(op_type):
    def rule(graph, eqn, ins):
        return [graph.op(op_type, ins)]
    return rule


def _identity(graph, eqn, ins):
    return [graph.op("Identity", [x]) for x in ins]


def _ne(graph, eqn, ins):
    return [graph.op("Not", [graph.op("Equal", ins)])]


def _logical(bool_op, bit_op):
    def rule(graph, eqn, ins):
        if np.dtype(eqn.invars[0].aval.dtype) == np.bool_:
            return [graph.op(bool_op, ins)]
        if graph.opset < 18:
            _unsupported(graph, f"bitwise {bool_op.lower()} of integers needs opset 18", "pass opset_version=18")
        return [graph.op(bit_op, ins)]
    return rule


def _rem(graph, eqn, ins):
    return [graph.op("Mod", ins, fmod=1)]  # C's fmod: the sign of the dividend, as lax.rem


def _rsqrt(graph, eqn, ins):
    return [graph.op("Reciprocal", [graph.op("Sqrt", ins)])]


def _square(graph, eqn, ins):
    return [graph.op("Mul", [ins[0], ins[0]])]


def _log1p(graph, eqn, ins):
    one = graph.scalar(1, eqn.invars[0].aval.dtype)
    return [graph.op("Log", [graph.op("Add", [ins[0], one])])]


def _expm1(graph, eqn, ins):
    one = graph.scalar(1, eqn.invars[0].aval.dtype)
    return [graph.op("Sub", [graph.op("Exp", ins), one])]


def _exp2(graph, eqn, ins):
    return [graph.op("Pow", [graph.scalar(2, eqn.invars[0].aval.dtype), ins[0]])]


def _erfc(graph, eqn, ins):
    return [graph.op("Sub", [graph.scalar(1, eqn.invars[0].aval.dtype), graph.op("Erf", ins)])]


def _is_finite(graph, eqn, ins):
    bad = graph.op("Or", [graph.op("IsNaN", ins), graph.op("IsInf", ins)])
    return [graph.op("Not", [bad])]


def _not(graph, eqn, ins):
    if np.dtype(eqn.invars[0].aval.dtype) == np.bool_:
        return [graph.op("Not", ins)]
    return [graph.op("BitwiseNot", ins)] if graph.opset >= 18 else _unsupported(
        graph, "bitwise not of integers needs opset 18", "pass opset_version=18")


def _round(graph, eqn, ins):
    if int(eqn.params.get("rounding_method", 0)) == 1:  # TO_NEAREST_EVEN, ONNX's Round
        return [graph.op("Round", ins)]
    dtype = eqn.invars[0].aval.dtype
    half = graph.scalar(0.5, dtype)
    away = graph.op("Floor", [graph.op("Add", [graph.op("Abs", ins), half])])
    return [graph.op("Mul", [graph.op("Sign", ins), away])]


def _integer_pow(graph, eqn, ins):
    y = int(eqn.params["y"])
    x = ins[0]
    if y == 0:
        ones = graph.op("Expand", [graph.scalar(1, eqn.invars[0].aval.dtype), graph.shape(eqn.invars[0].aval.shape)])
        return [ones]
    result, base, n = None, x, abs(y)
    while n:
        if n & 1:
            result = base if result is None else graph.op("Mul", [result, base])
        n >>= 1
        if n:
            base = graph.op("Mul", [base, base])
    return [graph.op("Reciprocal", [result]) if y < 0 else result]


def _convert_element_type(graph, eqn, ins):
    to = onnx_dtype(eqn.params["new_dtype"], graph.where)
    return [graph.op("Cast", ins, to=to)]


def _select_n(graph, eqn, ins):
    pred, *cases = ins
    if len(cases) == 1:
        return [graph.op("Identity", [cases[0]])]
    if np.dtype(eqn.invars[0].aval.dtype) == np.bool_:
        return [graph.op("Where", [pred, cases[1], cases[0]])]
    out = cases[0]
    for i, case in enumerate(cases[1:], start=1):
        hit = graph.op("Equal", [pred, graph.scalar(i, eqn.invars[0].aval.dtype)])
        out = graph.op("Where", [hit, case, out])
    return [out]


def _clamp(graph, eqn, ins):
    lo, x, hi = ins
    return [graph.op("Min", [graph.op("Max", [x, lo]), hi])]


# ---- reductions -------------------------------------------------------------------------------------------------

def _reduce(op_type):
    def rule(graph, eqn, ins):
        axes = tuple(int(a) for a in eqn.params["axes"])
        if not axes:
            return [graph.op("Identity", ins)]
        if op_type == "ReduceSum" or graph.opset >= 18:
            return [graph.op(op_type, [ins[0], graph.ints(axes)], keepdims=0)]
        return [graph.op(op_type, ins, axes=list(axes), keepdims=0)]
    return rule


def _reduce_bool(op_type):
    inner = _reduce(op_type)

    def rule(graph, eqn, ins):
        as_int = graph.op("Cast", ins, to=onnx_dtype(np.int32, graph.where))
        (out,) = inner(graph, eqn, [as_int])
        return [graph.op("Cast", [out], to=onnx_dtype(np.bool_, graph.where))]
    return rule


def _arg(op_type):
    def rule(graph, eqn, ins):
        (axis,) = eqn.params["axes"]
        out = graph.op(op_type, ins, axis=int(axis), keepdims=0)
        return [graph.op("Cast", [out], to=onnx_dtype(eqn.params["index_dtype"], graph.where))]
    return rule


def _cumsum(graph, eqn, ins):
    axis = graph.const(np.array(int(eqn.params["axis"]), np.int64))
    return [graph.op("CumSum", [ins[0], axis], reverse=int(bool(eqn.params.get("reverse", False))))]


# ---- contractions -----------------------------------------------------------------------------------------------

def _dot_general(graph, eqn, ins):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = (v.aval for v in eqn.invars)
    out_dtype = eqn.outvars[0].aval.dtype
    a, b = ins
    if not (lhs.dtype == rhs.dtype == out_dtype):
        a, b = (graph.op("Cast", [x], to=onnx_dtype(out_dtype, graph.where)) for x in (a, b))
    lc, rc, lb, rb = (tuple(int(d) for d in t) for t in (lc, rc, lb, rb))
    nb = len(lb)
    plain_batch = lb == rb == tuple(range(nb))
    if plain_batch and lc == (lhs.ndim - 1,) and len(rc) == 1 and rhs.ndim == nb + 2 and lhs.ndim >= nb + 1:
        if lhs.ndim == nb + 2 or nb == 0:
            if rc == (nb + 1,):  # rhs is [..., n, k]
                perm = list(range(nb)) + [nb + 1, nb]
                b = graph.op("Transpose", [b], perm=perm)
            if rc in ((nb,), (nb + 1,)):
                return [graph.op("MatMul", [a, b])]
    return [_einsum(graph, a, b, lhs.ndim, rhs.ndim, lc, rc, lb, rb)]


def _einsum(graph, a, b, l_ndim, r_ndim, lc, rc, lb, rb) -> str:
    letters = iter(string.ascii_letters)
    lhs = [None] * l_ndim
    rhs = [None] * r_ndim
    for i, j in zip(lb, rb):
        lhs[i] = rhs[j] = next(letters)
    for i, j in zip(lc, rc):
        lhs[i] = rhs[j] = next(letters)
    for t in (lhs, rhs):
        for k, s in enumerate(t):
            if s is None:
                t[k] = next(letters)
    out = [lhs[i] for i in lb] + [s for i, s in enumerate(lhs) if i not in lb and i not in lc] + \
          [s for j, s in enumerate(rhs) if j not in rb and j not in rc]
    return graph.op("Einsum", [a, b], equation=f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}")


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _transpose_to(graph, x, perm):
    perm = [int(p) for p in perm]
    return x if perm == list(range(len(perm))) else graph.op("Transpose", [x], perm=perm)


def _conv(graph, eqn, ins):
    p = eqn.params
    dn = p["dimension_numbers"]
    if any(int(d) != 1 for d in p["lhs_dilation"]):
        _unsupported(graph, f"a transposed convolution (lhs_dilation={tuple(p['lhs_dilation'])})",
                     "ONNX ConvTranspose is not written yet; export with pdx.export.export (StableHLO) instead")
    if int(p["batch_group_count"]) != 1:
        _unsupported(graph, f"batch_group_count={p['batch_group_count']} (a weight-gradient convolution)",
                     "export the forward pass only")
    padding = [(int(lo), int(hi)) for lo, hi in p["padding"]]
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        _unsupported(graph, f"negative convolution padding {padding}", "crop the input with a slice instead")
    x = _transpose_to(graph, ins[0], dn.lhs_spec)
    w = _transpose_to(graph, ins[1], dn.rhs_spec)
    kernel = [int(eqn.invars[1].aval.shape[d]) for d in dn.rhs_spec[2:]]
    y = graph.op("Conv", [x, w], strides=[int(s) for s in p["window_strides"]],
                 pads=[lo for lo, _ in padding] + [hi for _, hi in padding],
                 dilations=[int(d) for d in p["rhs_dilation"]], group=int(p["feature_group_count"]),
                 kernel_shape=kernel)
    return [_transpose_to(graph, y, _inverse(dn.out_spec))]


def _reduce_window(kind):
    def rule(graph, eqn, ins):
        p = eqn.params
        window = [int(w) for w in p["window_dimensions"]]
        strides = [int(s) for s in p["window_strides"]]
        padding = [(int(lo), int(hi)) for lo, hi in p["padding"]]
        if any(int(d) != 1 for d in p["base_dilation"]):
            _unsupported(graph, f"base_dilation={tuple(p['base_dilation'])}", "use an undilated pooling window")
        dilation = [int(d) for d in p["window_dilation"]]
        if kind == "sum" and any(d != 1 for d in dilation):
            _unsupported(graph, f"a dilated sum window (window_dilation={tuple(dilation)})", "use an undilated window")
        rank = len(window)
        pooled = [i for i in range(rank) if window[i] != 1 or strides[i] != 1 or padding[i] != (0, 0)
                  or dilation[i] != 1]
        if not pooled:
            return [graph.op("Identity", ins)]
        rest = [i for i in range(rank) if i not in pooled]
        if len(rest) > 2:
            _unsupported(graph, f"a pooling window over axes {pooled} of a rank-{rank} array leaves {len(rest)} "
                         "unpooled axes (ONNX pooling has 2: batch and channel)", "reshape to 4-D first")
        perm = rest + pooled
        x = _transpose_to(graph, ins[0], perm)
        lead = 2 - len(rest)
        if lead:
            x = graph.op("Unsqueeze", [x, graph.ints(range(lead))])
        attrs = dict(kernel_shape=[window[i] for i in pooled], strides=[strides[i] for i in pooled],
                     pads=[padding[i][0] for i in pooled] + [padding[i][1] for i in pooled])
        if kind == "max":
            y = graph.op("MaxPool", [x], dilations=[dilation[i] for i in pooled], **attrs)
        else:  # zero-padded sum = average over the padded window x its size
            y = graph.op("AveragePool", [x], count_include_pad=1, **attrs)
            size = int(np.prod([window[i] for i in pooled]))
            y = graph.op("Mul", [y, graph.scalar(size, eqn.outvars[0].aval.dtype)])
        if lead:
            y = graph.op("Squeeze", [y, graph.ints(range(lead))])
        return [_transpose_to(graph, y, _inverse(perm))]
    return rule


# ---- shapes -----------------------------------------------------------------------------------------------------

def _same_dim(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - symbolic dims that cannot be compared are different
        return False


def _broadcast_in_dim(graph, eqn, ins):
    shape = tuple(eqn.params["shape"])
    bdims = tuple(int(d) for d in eqn.params["broadcast_dimensions"])
    operand = eqn.invars[0].aval.shape
    x = ins[0]
    missing = [i for i in range(len(shape)) if i not in bdims]
    if missing:
        x = graph.op("Unsqueeze", [x, graph.ints(missing)])
    have = [1] * len(shape)
    for j, i in enumerate(bdims):
        have[i] = operand[j]
    keep = {i: 1 for i in range(len(shape)) if _same_dim(have[i], shape[i])}
    if len(keep) == len(shape):
        return [x if missing else graph.op("Identity", [x])]
    return [graph.op("Expand", [x, graph.shape(shape, fill=keep)])]


def _reshape(graph, eqn, ins):
    if eqn.params.get("dimensions") is not None:
        _unsupported(graph, "reshape with dimensions=", "transpose first")
    shape = tuple(eqn.params["new_sizes"])
    dynamic = [i for i, d in enumerate(shape) if is_symbolic(d)]
    fill = {dynamic[0]: -1} if len(dynamic) == 1 else None
    return [graph.op("Reshape", [ins[0], graph.shape(shape, fill=fill)])]


def _squeeze(graph, eqn, ins):
    return [graph.op("Squeeze", [ins[0], graph.ints(int(d) for d in eqn.params["dimensions"])])]


def _expand_dims(graph, eqn, ins):
    return [graph.op("Unsqueeze", [ins[0], graph.ints(int(d) for d in eqn.params["dimensions"])])]


def _transpose(graph, eqn, ins):
    return [graph.op("Transpose", ins, perm=[int(p) for p in eqn.params["permutation"]])]


def _rev(graph, eqn, ins):
    axes = [int(d) for d in eqn.params["dimensions"]]
    if not axes:
        return [graph.op("Identity", ins)]
    big = np.iinfo(np.int64).min
    return [graph.op("Slice", [ins[0], graph.ints([-1] * len(axes)), graph.ints([big] * len(axes)),
                               graph.ints(axes), graph.ints([-1] * len(axes))])]


def _slice(graph, eqn, ins):
    shape = eqn.invars[0].aval.shape
    starts, limits = eqn.params["start_indices"], eqn.params["limit_indices"]
    strides = eqn.params["strides"] or (1,) * len(shape)
    axes = [i for i in range(len(shape)) if not (_same_dim(starts[i], 0) and _same_dim(limits[i], shape[i])
                                                 and int(strides[i]) == 1)]
    if not axes:
        return [graph.op("Identity", ins)]
    return [graph.op("Slice", [ins[0], graph.shape([starts[i] for i in axes]), graph.shape([limits[i] for i in axes]),
                               graph.ints(axes), graph.ints(int(strides[i]) for i in axes)])]


def _clamped_starts(graph, shape, sizes, starts) -> str:
    """JAX's dynamic-slice start indices, clamped to [0, dim - size], as one int64 [n] tensor."""
    pieces = []
    for d, size, start in zip(shape, sizes, starts):
        s = graph.op("Cast", [graph.op("Reshape", [start, graph.ints([1])])], to=onnx_dtype(np.int64, graph.where))
        hi = graph.dim(d - size)
        pieces.append(graph.op("Max", [graph.op("Min", [s, hi]), graph.ints([0])]))
    return graph.op("Concat", pieces, axis=0)


def _dynamic_slice(graph, eqn, ins):
    shape = eqn.invars[0].aval.shape
    sizes = tuple(eqn.params["slice_sizes"])
    starts = _clamped_starts(graph, shape, sizes, ins[1:])
    ends = graph.op("Add", [starts, graph.shape(sizes)])
    return [graph.op("Slice", [ins[0], starts, ends, graph.ints(range(len(shape)))])]


def _concatenate(graph, eqn, ins):
    return [graph.op("Concat", ins, axis=int(eqn.params["dimension"]))]


def _stack(graph, eqn, ins):
    axis = graph.ints([int(eqn.params["axis"])])
    return [graph.op("Concat", [graph.op("Unsqueeze", [x, axis]) for x in ins], axis=int(eqn.params["axis"]))]


def _pad(graph, eqn, ins):
    config = [(int(lo), int(hi), int(interior)) for lo, hi, interior in eqn.params["padding_config"]]
    if any(interior for _, _, interior in config):
        _unsupported(graph, f"interior padding {config}", "pad without interior (dilation) padding")
    pads = graph.ints([lo for lo, _, _ in config] + [hi for _, hi, _ in config])
    return [graph.op("Pad", [ins[0], pads, ins[1]], mode="constant")]


def _iota(graph, eqn, ins):
    p = eqn.params
    shape, axis, dtype = tuple(p["shape"]), int(p["dimension"]), p["dtype"]
    n = graph.op("Squeeze", [graph.dim(shape[axis]), graph.ints([0])])
    n = graph.op("Cast", [n], to=onnx_dtype(dtype, graph.where))
    line = graph.op("Range", [graph.scalar(0, dtype), n, graph.scalar(1, dtype)])
    others = [i for i in range(len(shape)) if i != axis]
    if not others:
        return [line]
    x = graph.op("Unsqueeze", [line, graph.ints(others)])
    return [graph.op("Expand", [x, graph.shape(shape, fill={axis: 1})])]


def _split(graph, eqn, ins):
    sizes = graph.shape(tuple(eqn.params["sizes"]))
    return graph.op("Split", [ins[0], sizes], outputs=len(eqn.outvars), axis=int(eqn.params["axis"]))


def _gather(graph, eqn, ins):
    """Embedding lookups / fancy indexing (GatherND) and slices with traced starts (dynamic_slice)."""
    p = eqn.params
    dn = p["dimension_numbers"]
    operand, indices = (v.aval for v in eqn.invars)
    out_shape = eqn.outvars[0].aval.shape
    if dn.operand_batching_dims or dn.start_indices_batching_dims:
        _unsupported(graph, "a gather with batching dims", "index each batch row separately")
    index_map = tuple(int(d) for d in dn.start_index_map)
    collapsed = tuple(int(d) for d in dn.collapsed_slice_dims)
    offset_dims = tuple(int(d) for d in dn.offset_dims)
    sizes = tuple(p["slice_sizes"])
    if indices.shape[-1:] != (len(index_map),):
        _unsupported(graph, f"gather indices of shape {indices.shape} (the index vector must be the last dim)",
                     "index with jnp.take / x[idx]")
    if indices.ndim == 1:  # one start per indexed axis: a slice
        starts = [graph.op("Gather", [ins[1], graph.const(np.array(k, np.int64))]) for k in range(len(index_map))]
        zero = graph.scalar(0, indices.dtype)
        by_axis = {a: s for a, s in zip(index_map, starts)}
        start_list = [by_axis.get(a, zero) for a in range(operand.ndim)]
        starts_t = _clamped_starts(graph, operand.shape, sizes, start_list)
        ends = graph.op("Add", [starts_t, graph.shape(sizes)])
        y = graph.op("Slice", [ins[0], starts_t, ends, graph.ints(range(operand.ndim))])
        return [graph.op("Squeeze", [y, graph.ints(collapsed)]) if collapsed else y]
    if not all(_same_dim(sizes[a], 1) for a in index_map) or not all(
            _same_dim(sizes[a], operand.shape[a]) for a in range(operand.ndim) if a not in index_map):
        _unsupported(graph, f"a gather of windows {sizes} from {operand.shape}",
                     "index whole rows (x[idx], jnp.take) or use a slice with traced starts")
    rest = [a for a in range(operand.ndim) if a not in index_map]
    x = _transpose_to(graph, ins[0], list(index_map) + rest)
    idx = graph.op("Cast", [ins[1]], to=onnx_dtype(np.int64, graph.where))
    dims = graph.op("Slice", [graph.op("Shape", [x]), graph.ints([0]), graph.ints([len(index_map)])])
    idx = graph.op("Max", [graph.op("Min", [idx, graph.op("Sub", [dims, graph.ints([1])])]), graph.ints([0])])
    y = graph.op("GatherND", [x, idx])  # (*indices.shape[:-1], *operand.shape[rest])
    kept = [a for a in index_map if a not in collapsed]  # indexed axes kept as size-1 offset dims
    offsets = sorted(rest + kept)
    nbatch = indices.ndim - 1
    if kept:
        y = graph.op("Unsqueeze", [y, graph.ints(nbatch + offsets.index(a) for a in kept)])
        # GatherND gives rest in operand order; the kept axes slot in where they sit in the operand
    batch_pos = [i for i in range(len(out_shape)) if i not in offset_dims]
    perm = [0] * len(out_shape)
    for k, i in enumerate(batch_pos):
        perm[i] = k
    for k, i in enumerate(offset_dims):
        perm[i] = nbatch + k
    return [_transpose_to(graph, y, perm)]


# ---- calls and loops --------------------------------------------------------------------------------------------

def _sub_jaxpr(eqn):
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        sub = eqn.params.get(key)
        if sub is not None:
            if hasattr(sub, "consts"):
                return sub.jaxpr, list(sub.consts)
            return sub, []
    raise UnsupportedPrimitiveError(f"{eqn.primitive.name} carries no jaxpr to inline")


def _inline(graph, eqn, ins):
    jaxpr, consts = _sub_jaxpr(eqn)
    where = graph.where
    outs = emit_jaxpr(graph, jaxpr, consts, ins, path=eqn.primitive.name, origin=graph.origin)
    graph.where = where
    return outs


_inline.lazy_inputs = True


def _scan(graph, eqn, ins):
    """A scan of static length, unrolled (its body written once per step)."""
    p = eqn.params
    length = p["length"]
    if is_symbolic(length):
        _unsupported(graph, f"a scan over a dynamic length ({length})",
                     "give the scanned axis (e.g. the sequence length) a fixed size in input_spec")
    length = int(length)
    if length > MAX_UNROLL:
        _unsupported(graph, f"a scan of {length} steps (unrolled, at most {MAX_UNROLL})", "shorten the sequence")
    body = p["jaxpr"]
    nc, ncarry = int(p["num_consts"]), int(p["num_carry"])
    consts, carry, xs = ins[:nc], ins[nc:nc + ncarry], ins[nc + ncarry:]
    body_consts = [_Const(c) for c in body.consts]  # written once, read by every step
    carry = [materialize(graph, c) for c in carry]
    xs = [materialize(graph, x) for x in xs]
    where, origin = graph.where, graph.origin
    steps = range(length - 1, -1, -1) if p["reverse"] else range(length)
    ys_by_step = {}
    for t in steps:
        index = graph.const(np.array(t, np.int64))
        x_t = [graph.op("Gather", [x, index], axis=0) for x in xs]
        outs = emit_jaxpr(graph, body.jaxpr, body_consts, list(consts) + list(carry) + x_t, path=f"scan step {t}",
                          origin=origin)
        graph.where = where
        carry, ys_by_step[t] = outs[:ncarry], outs[ncarry:]
    stacked = []
    for k in range(len(eqn.outvars) - ncarry):
        parts = [graph.op("Unsqueeze", [ys_by_step[t][k], graph.ints([0])]) for t in range(length)]
        stacked.append(graph.op("Concat", parts, axis=0) if length else _unsupported(graph, "an empty scan", ""))
    return list(carry) + stacked


_scan.lazy_inputs = True


def _subgraph_io(name: str, aval) -> object:
    """A subgraph input/output: its element type (its shape is left open: dims are the outer graph's)."""
    return helper.make_tensor_value_info(name, onnx_dtype(aval.dtype, f"the value {name!r}"), None)


def _emit_closed(graph, closed, ins, path):
    outs = emit_jaxpr(graph, closed.jaxpr, list(closed.consts), list(ins), path=path, origin=graph.origin)
    return [materialize(graph, o) for o in outs]


def _branch(graph, closed, operands, path):
    """An If branch: the subgraph of `closed` over the outer values `operands`."""
    with graph.subgraph() as nodes:
        outs = [graph.op("Identity", [o]) for o in _emit_closed(graph, closed, operands, path)]
    return helper.make_graph(nodes, graph.fresh(path.replace(" ", "_")), [],
                             [_subgraph_io(n, v.aval) for n, v in zip(outs, closed.jaxpr.outvars)])


def _cond(graph, eqn, ins):
    """lax.cond as ONNX If (branch 1 when the index is nonzero, as lax.cond's boolean form)."""
    branches = eqn.params["branches"]
    if len(branches) != 2:
        _unsupported(graph, f"a switch over {len(branches)} branches", "write it as nested two-way conds")
    where = graph.where
    pred = graph.op("Cast", [ins[0]], to=TensorProto.BOOL)
    else_branch = _branch(graph, branches[0], ins[1:], "cond false")
    then_branch = _branch(graph, branches[1], ins[1:], "cond true")
    graph.where = where
    return graph.op("If", [pred], outputs=[graph.fresh("if") for _ in eqn.outvars], then_branch=then_branch,
                    else_branch=else_branch)


def _while(graph, eqn, ins):
    """lax.while_loop as ONNX Loop with no trip limit: the condition on the initial carry outside, the body and
    the condition on its result inside."""
    p = eqn.params
    cond, body = p["cond_jaxpr"], p["body_jaxpr"]
    nc, nb = int(p["cond_nconsts"]), int(p["body_nconsts"])
    cond_consts, body_consts, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
    where = graph.where
    (first,) = _emit_closed(graph, cond, [*cond_consts, *init], "while condition")
    avals = [v.aval for v in body.jaxpr.outvars]
    with graph.subgraph() as nodes:
        step, keep = graph.fresh("loop_step"), graph.fresh("loop_cond")
        carry = [graph.fresh("loop_carry") for _ in init]
        new = _emit_closed(graph, body, [*body_consts, *carry], "while body")
        (again,) = _emit_closed(graph, cond, [*cond_consts, *new], "while condition")
        outs = [graph.op("Identity", [again])] + [graph.op("Identity", [v]) for v in new]
    inputs = [helper.make_tensor_value_info(step, TensorProto.INT64, []),
              helper.make_tensor_value_info(keep, TensorProto.BOOL, [])]
    inputs += [_subgraph_io(n, a) for n, a in zip(carry, avals)]
    outputs = [helper.make_tensor_value_info(outs[0], TensorProto.BOOL, None)]
    outputs += [_subgraph_io(n, a) for n, a in zip(outs[1:], avals)]
    loop_body = helper.make_graph(nodes, graph.fresh("while_body"), inputs, outputs)
    graph.where = where
    return graph.op("Loop", ["", first, *init], outputs=[graph.fresh("loop") for _ in init], body=loop_body)


def _dim_as_value(graph, eqn, ins):
    """A symbolic dim used as a value (a mean over a dynamic batch): the input's dim at run time."""
    scalar = graph.op("Reshape", [graph.dim(eqn.params["dim"]), graph.ints([])])
    return [graph.op("Cast", [scalar], to=onnx_dtype(eqn.outvars[0].aval.dtype, graph.where))]


def _random(graph, eqn, ins):
    _unsupported(graph, "random numbers (dropout or sampling in the traced forward)",
                 "call layer.eval() before exporting; ONNX has no JAX random key")


RULES: types.MappingProxyType = types.MappingProxyType({
    **{name: _binary(op) for name, op in _BINARY.items()},
    **{name: _unary(op) for name, op in _UNARY.items()},
    **dict.fromkeys(_IDENTITY, _identity),
    "ne": _ne, "and": _logical("And", "BitwiseAnd"), "or": _logical("Or", "BitwiseOr"),
    "xor": _logical("Xor", "BitwiseXor"), "not": _not, "rem": _rem, "rsqrt": _rsqrt, "square": _square,
    "log1p": _log1p, "expm1": _expm1, "exp2": _exp2, "erfc": _erfc, "is_finite": _is_finite, "round": _round,
    "integer_pow": _integer_pow, "convert_element_type": _convert_element_type, "select_n": _select_n,
    "clamp": _clamp,
    "reduce_sum": _reduce("ReduceSum"), "reduce_max": _reduce("ReduceMax"), "reduce_min": _reduce("ReduceMin"),
    "reduce_prod": _reduce("ReduceProd"), "reduce_and": _reduce_bool("ReduceMin"),
    "reduce_or": _reduce_bool("ReduceMax"), "argmax": _arg("ArgMax"), "argmin": _arg("ArgMin"), "cumsum": _cumsum,
    "dot_general": _dot_general, "conv_general_dilated": _conv,
    "reduce_window_max": _reduce_window("max"), "reduce_window_sum": _reduce_window("sum"),
    "broadcast_in_dim": _broadcast_in_dim, "reshape": _reshape, "squeeze": _squeeze, "expand_dims": _expand_dims,
    "transpose": _transpose, "rev": _rev, "slice": _slice, "dynamic_slice": _dynamic_slice,
    "concatenate": _concatenate, "stack": _stack, "pad": _pad, "iota": _iota, "split": _split, "gather": _gather,
    "pjit": _inline, "jit": _inline, "closed_call": _inline, "core_call": _inline, "remat": _inline,
    "checkpoint": _inline, "custom_jvp_call": _inline, "custom_vjp_call": _inline,
    "custom_vjp_call_jaxpr": _inline, "scan": _scan, "cond": _cond, "while": _while, "dim_as_value": _dim_as_value,
    "random_bits": _random, "random_seed": _random, "random_wrap": _random, "random_unwrap": _random,
    "threefry2x32": _random,
})

# Primitives with a rule that writes ONNX (the refusals above only explain themselves).
SUPPORTED = tuple(sorted(name for name, rule in RULES.items() if rule is not _random))
