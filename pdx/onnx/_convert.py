"""A closed jaxpr as an ONNX model: the graph builder, symbolic dims, and the walk over equations.

The walk reads each equation's primitive, looks up its rule in `_rules.RULES`
(one function per primitive: `rule(graph, eqn, inputs) -> outputs`, names of
ONNX values in and out) and inlines nested jaxprs (`pjit`, `custom_jvp_call`,
`custom_vjp_call`, `remat`, unrolled `scan`). Dims that are symbolic in the
jaxpr (`batch`, `dim1`, ... from `None` in the input specs) are read at run
time from the graph inputs with `Shape` and combined with `Add`/`Mul`/`Div`
nodes wherever a shape operand needs them.

JAX internals used here (and only here): `_DimExpr._evaluate(env)` and
`_get_vars()` evaluate a symbolic dim over our runtime dim values
(`test_symbolic_dim_arithmetic` checks them); an equation's
`source_info.traceback.frames` names the model line in error messages.
"""

from __future__ import annotations

import collections
import contextlib
import os
import pathlib

import jax
import numpy as np
import onnx
from jax.extend import core as jcore
from onnx import helper, numpy_helper

__all__ = ["OnnxExportError", "OnnxGraph", "UnsupportedPrimitiveError", "emit_jaxpr", "materialize", "onnx_dtype"]

MIN_OPSET = 13


class OnnxExportError(ValueError):
    """A layer that cannot be written as ONNX (the message says what and how to fix it)."""


class UnsupportedPrimitiveError(OnnxExportError, NotImplementedError):
    """A JAX primitive (or a form of one) that has no ONNX rule."""


_REFUSED_DTYPES = {
    "bfloat16": "onnxruntime's CPU kernels do not run bfloat16",
    "float16": "onnxruntime's CPU kernels run few float16 ops, and ONNX float16 differs from XLA's float32 "
               "accumulation",
}


def onnx_dtype(dtype, where: str) -> int:
    """The ONNX TensorProto element type of a numpy/JAX dtype; bf16/f16 are refused with the fix."""
    dtype = np.dtype(dtype)
    if dtype.name in _REFUSED_DTYPES:
        raise OnnxExportError(f"{where} has dtype {dtype.name}: {_REFUSED_DTYPES[dtype.name]}. Export a float32 "
                              "model: call `layer.float()` (and pass float32 input specs) before pdx.onnx.export")
    try:
        return helper.np_dtype_to_tensor_dtype(dtype)
    except (KeyError, TypeError, ValueError):
        raise OnnxExportError(f"{where} has dtype {dtype.name}, which ONNX has no type for") from None


def is_symbolic(d) -> bool:
    return not isinstance(d, (int, np.integer))


class _Dim:
    """A runtime dim: an ONNX int64 tensor of shape [1]; arithmetic emits nodes (for `_DimExpr._evaluate`)."""

    def __init__(self, graph: "OnnxGraph", name: str):
        self.graph, self.name = graph, name

    def _apply(self, op_type: str, other, swap: bool = False):
        other = other.name if isinstance(other, _Dim) else self.graph.const(np.array([int(other)], np.int64))
        ins = [other, self.name] if swap else [self.name, other]
        return _Dim(self.graph, self.graph.op(op_type, ins))

    def __add__(self, other):
        return self._apply("Add", other)

    def __radd__(self, other):
        return self._apply("Add", other, swap=True)

    def __sub__(self, other):
        return self._apply("Sub", other)

    def __rsub__(self, other):
        return self._apply("Sub", other, swap=True)

    def __mul__(self, other):
        return self._apply("Mul", other)

    def __rmul__(self, other):
        return self._apply("Mul", other, swap=True)

    def __divmod__(self, other):
        return self._apply("Div", other), self._apply("Mod", other)  # dims are >= 0: floor == truncation


class OnnxGraph:
    """The nodes, initializers and runtime dims of the ONNX graph being built."""

    def __init__(self, opset: int):
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.where = "the program"  # the equation being converted, for error messages
        self.origin: str | None = None  # its model line
        self._counts: collections.Counter = collections.Counter()
        self._small: dict = {}  # (dtype, shape, bytes) -> initializer name, for small constants
        self._dim_sources: dict[str, tuple[str, int]] = {}  # symbol -> (graph input, axis)
        self._dims: dict[str, _Dim] = {}
        self._shape_of: dict[str, str] = {}

    @contextlib.contextmanager
    def subgraph(self):
        """Nodes emitted inside the block go to a list of their own (an If branch, a Loop body), which the block
        receives; runtime dims read inside stay inside (they are values of the subgraph, not of the graph)."""
        saved = self.nodes, dict(self._dims), dict(self._shape_of)
        self.nodes = []
        try:
            yield self.nodes
        finally:
            self.nodes, self._dims, self._shape_of = saved

    def fresh(self, hint: str) -> str:
        self._counts[hint] += 1
        return f"{hint}_{self._counts[hint]}"

    def op(self, op_type: str, inputs, outputs: int | list = 1, **attrs):
        """Append a node; returns its output name (or the list of names when `outputs` is a count > 1 or a list)."""
        names = outputs if isinstance(outputs, list) else [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=self.fresh(f"n_{op_type}"),
                                           **{k: v for k, v in attrs.items() if v is not None}))
        return names[0] if not isinstance(outputs, list) and outputs == 1 else names

    def const(self, value, name: str | None = None) -> str:
        """An initializer holding `value` (small ones shared)."""
        array = np.asarray(value)
        onnx_dtype(array.dtype, f"a constant of {self.where}")
        key = (array.dtype.str, array.shape, array.tobytes()) if array.size <= 16 and name is None else None
        if key is not None and key in self._small:
            return self._small[key]
        name = name or self.fresh("const")
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
        if key is not None:
            self._small[key] = name
        return name

    def scalar(self, value, dtype) -> str:
        return self.const(np.array(value, dtype=np.dtype(dtype)))

    def ints(self, values) -> str:
        return self.const(np.array(list(values), np.int64))

    def add_dim_source(self, symbol: str, input_name: str, axis: int) -> None:
        self._dim_sources.setdefault(symbol, (input_name, axis))

    def _symbol(self, symbol: str) -> _Dim:
        if symbol not in self._dims:
            if symbol not in self._dim_sources:
                raise OnnxExportError(f"{self.where}: the dim {symbol!r} is not the dim of any input")
            source, axis = self._dim_sources[symbol]
            if source not in self._shape_of:
                self._shape_of[source] = self.op("Shape", [source])
            piece = self.op("Slice", [self._shape_of[source], self.ints([axis]), self.ints([axis + 1])])
            self._dims[symbol] = _Dim(self, piece)
        return self._dims[symbol]

    def dim(self, d) -> str:
        """An int64 [1] tensor holding the dim `d` (an int or a symbolic dim of the jaxpr)."""
        if not is_symbolic(d):
            return self.ints([int(d)])
        env = {name: self._symbol(name) for name in d._get_vars()}
        value = d._evaluate(env)
        return value.name if isinstance(value, _Dim) else self.ints([int(value)])

    def shape(self, dims, fill: dict | None = None) -> str:
        """An int64 [n] tensor of the dims (`fill` {axis: int} replaces dims, e.g. with -1 or 1)."""
        dims = [fill[i] if fill and i in fill else d for i, d in enumerate(dims)]
        if not any(is_symbolic(d) for d in dims):
            return self.ints([int(d) for d in dims])
        return self.op("Concat", [self.dim(d) for d in dims], axis=0)


_LIBRARIES = tuple(str(pathlib.Path(m.__file__).resolve().parent) + os.sep for m in (jax, np))
_PDX = str(pathlib.Path(__file__).resolve().parents[1]) + os.sep


def _summarize(eqn, origin: str | None) -> str:
    """The model line an equation came from: the innermost frame outside JAX and pdx, else the line of the
    call it is inlined from (`origin`; JAX keeps 10 frames per equation), else the innermost pdx frame."""
    try:
        frames = [f for f in eqn.source_info.traceback.frames
                  if not os.path.abspath(f.file_name).startswith(_LIBRARIES) and "/jax/" not in f.file_name]
    except AttributeError:
        frames = []
    user = [f for f in frames if not os.path.abspath(f.file_name).startswith(_PDX)]
    frame = (user or ([] if origin else frames) or [None])[0]
    if frame is None:
        return origin or "an unknown line"
    return f"{frame.file_name}:{frame.line_num} ({frame.function_name})"


class _Const:
    """A constant of a jaxpr, written as an initializer when an equation first reads it (random keys of
    layers in eval mode are constants no equation reads)."""

    def __init__(self, value):
        self.value = value
        self._name = None

    def name(self, graph: OnnxGraph) -> str:
        if self._name is None:
            if jax.dtypes.issubdtype(self.value.dtype, jax.dtypes.prng_key):
                raise OnnxExportError(f"{graph.where} reads a JAX random key: the layer draws random numbers "
                                      "(dropout in train mode?); call layer.eval() before exporting")
            self._name = graph.const(np.asarray(self.value))
        return self._name


def materialize(graph: OnnxGraph, value) -> str:
    """The ONNX name of an input a call rule received unread (a name, or a constant not yet written)."""
    return value.name(graph) if isinstance(value, _Const) else value


def emit_jaxpr(graph: OnnxGraph, jaxpr, consts, inputs, *, path: str = "", origin: str | None = None) -> list[str]:
    """Emit the equations of `jaxpr` (an open Jaxpr) with its constvars bound to the arrays `consts` and
    its invars to `inputs` (ONNX value names); returns the names of its outputs."""
    from pdx.onnx._rules import RULES, SUPPORTED

    env = {v: c if isinstance(c, _Const) else _Const(c) for v, c in zip(jaxpr.constvars, consts)}
    env.update(zip(jaxpr.invars, inputs))

    def read(v, lazy=False):
        if isinstance(v, jcore.Literal):
            return graph.const(np.asarray(v.val, dtype=v.aval.dtype))
        return env[v] if lazy else materialize(graph, env[v])

    for i, eqn in enumerate(jaxpr.eqns):
        name = eqn.primitive.name
        graph.origin = _summarize(eqn, origin)
        where = f"primitive {name!r} (equation {i}{' of ' + path if path else ''}, from {graph.origin})"
        rule = RULES.get(name)
        if rule is None:
            raise UnsupportedPrimitiveError(
                f"{where} has no ONNX rule. Supported primitives: {', '.join(SUPPORTED)}. Rewrite that part "
                "of the model with supported ops, or export it with pdx.export.export (StableHLO) instead")
        graph.where = where
        lazy = getattr(rule, "lazy_inputs", False)  # call rules pass constants on unread
        outs = rule(graph, eqn, [read(v, lazy) for v in eqn.invars])
        for v, out in zip(eqn.outvars, outs):
            if not isinstance(v, jcore.DropVar):
                env[v] = out
    return [read(v, lazy=True) for v in jaxpr.outvars]


def value_info(name: str, aval, where: str):
    dims = [str(d) if is_symbolic(d) else int(d) for d in aval.shape]
    return helper.make_tensor_value_info(name, onnx_dtype(aval.dtype, where), dims)


def build_model(closed, *, params, input_names, output_names, opset: int, model_name: str,
                doc: str = "") -> onnx.ModelProto:
    """The ONNX model of `closed` (a ClosedJaxpr over (*flat params, *inputs)).

    Args:
      params: (name, array) per leading invar: they become initializers.
      input_names / output_names: names of the graph inputs / outputs.
    """
    graph = OnnxGraph(opset)
    jaxpr = closed.jaxpr
    n = len(params)
    if len(jaxpr.invars) != n + len(input_names) or len(jaxpr.outvars) != len(output_names):
        raise OnnxExportError(f"the program has {len(jaxpr.invars)} inputs and {len(jaxpr.outvars)} outputs; "
                              f"expected {n} params + {len(input_names)} inputs and {len(output_names)} outputs")
    param_names = [graph.const(np.asarray(value), name=name) for name, value in params]
    inputs = []
    for name, var in zip(input_names, jaxpr.invars[n:]):
        inputs.append(value_info(name, var.aval, f"input {name!r}"))
        for axis, d in enumerate(var.aval.shape):
            if is_symbolic(d) and len(d._get_vars()) == 1 and str(d) == next(iter(d._get_vars())):
                graph.add_dim_source(str(d), name, axis)
    outs = emit_jaxpr(graph, jaxpr, closed.consts, param_names + list(input_names))
    outputs = []
    for name, out, var in zip(output_names, outs, jaxpr.outvars):
        graph.op("Identity", [materialize(graph, out)], outputs=[name])
        outputs.append(value_info(name, var.aval, f"output {name!r}"))
    onnx_graph = helper.make_graph(graph.nodes, model_name, inputs, outputs, initializer=graph.initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(onnx_graph, opset_imports=opsets, producer_name="pdx",
                              ir_version=helper.find_min_ir_version_for(opsets), doc_string=doc)
    return model
