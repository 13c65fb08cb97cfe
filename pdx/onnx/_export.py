"""`pdx.onnx.export`: a Layer's forward as an ONNX file (Paddle's `paddle.onnx.export`).

The Layer is traced through `pdx.jit` into a pure function of its
parameters and inputs, `program(params, *inputs)`, as `pdx.export.export`
traces it; `jax.make_jaxpr` gives its closed jaxpr with a symbolic dim for
every `None` of the input specs, and `_convert.build_model` writes one ONNX
node group per equation, the parameters as initializers.
"""

from __future__ import annotations

import functools
import inspect
import os
import pathlib
from collections.abc import Sequence

import jax
import numpy as np
import onnx
from jax import export as jax_export

from pdx import _lowering
from pdx._graph import Graph, run_with_values
from pdx._static_layers import static_layers
from pdx.jit import InputSpec, StaticFunction
from pdx.nn import Layer
from pdx.onnx._convert import MIN_OPSET, OnnxExportError, build_model

__all__ = ["DEFAULT_OPSET", "export", "to_onnx"]

DEFAULT_OPSET = 17
_MAX_PROTO_BYTES = 2_000_000_000  # protobuf's 2 GiB limit: larger models keep their weights in a side file


def _max_opset() -> int:
    return onnx.defs.onnx_opset_version()


def _dim_symbol(axis: int) -> str:
    # The names pdx.export gives `None` dims: inputs share a symbol per axis (ids and mask of one batch).
    return "batch" if axis == 0 else f"dim{axis}"


def _specs(layer: Layer, input_spec) -> list[InputSpec]:
    if input_spec is None:
        static = static_layers.get(layer)
        input_spec = static.last_input_spec() if static is not None else None
        if not input_spec:
            raise OnnxExportError("export: input_spec=None needs a layer that ran under pdx.jit.to_static "
                                  "(its last inputs are exported); pass input_spec=[pdx.static.InputSpec([None, "
                                  "...], 'float32', 'x')] instead")
    if isinstance(input_spec, (InputSpec, jax.ShapeDtypeStruct)):
        input_spec = [input_spec]
    names = _forward_names(layer)
    specs = []
    for i, spec in enumerate(input_spec):
        if isinstance(spec, InputSpec):
            s = spec
        elif hasattr(spec, "shape") and hasattr(spec, "dtype"):
            s = InputSpec(tuple(spec.shape), str(np.dtype(spec.dtype)))  # an example tensor: its static shape
        else:
            raise TypeError(f"export: input_spec[{i}] must be a pdx.static.InputSpec or an example tensor; got "
                            f"{type(spec).__name__} ({spec!r}). Python values are not inputs of an ONNX graph")
        specs.append(InputSpec(s.shape, s.dtype, s.name or (names[i] if i < len(names) else f"input_{i}")))
    if len({s.name for s in specs}) != len(specs):
        raise ValueError(f"export: input names must be unique; got {[s.name for s in specs]}")
    return specs


def _forward_names(layer: Layer) -> list[str]:
    try:
        params = list(inspect.signature(type(layer).forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _program(layer: Layer):
    """(program(params, *inputs), [(state_dict name, array)]) of the Layer's forward."""
    static = static_layers.get(layer) or StaticFunction(type(layer).forward)
    call = functools.partial(static, layer)
    graph = Graph([layer])
    slot = {id(v): i for i, v in enumerate(graph.variables)}
    named, seen = [], set()
    for name, var in list(layer.named_parameters()) + list(layer.named_buffers()):
        if id(var) not in seen and id(var) in slot:
            seen.add(id(var))
            named.append((name, var))

    def program(params, *inputs):
        values = graph.values()
        for (_, var), value in zip(named, params):
            values[slot[id(var)]] = value
        out, _ = run_with_values(graph, values, call, *inputs)
        return out

    return program, [(name, np.asarray(var.get_value())) for name, var in named]


def _abstract_inputs(specs: Sequence[InputSpec]) -> list:
    scope = jax_export.SymbolicScope()
    out = []
    for s in specs:
        dims = ", ".join(_dim_symbol(a) if d is None else str(d) for a, d in enumerate(s.shape))
        shape = jax_export.symbolic_shape(dims, scope=scope) if dims else ()
        out.append(jax.ShapeDtypeStruct(shape, s.dtype))
    return out


def _output_names(tree, n: int) -> list[str]:
    example = jax.tree.unflatten(tree, list(range(n)))
    if isinstance(example, dict):
        paths = jax.tree_util.tree_flatten_with_path(example)[0]
        return [".".join(str(getattr(k, "key", k)) for k in p) for p, _ in paths]
    return ["output"] if n == 1 else [f"output_{i}" for i in range(n)]


def to_onnx(layer: Layer, input_spec=None, opset_version: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """The ONNX model of `layer`'s forward (what `export` writes), as an `onnx.ModelProto`.

    Example:
      >>> import pdx
      >>> model = pdx.onnx.to_onnx(pdx.nn.Linear(4, 2), [pdx.static.InputSpec([None, 4], "float32", "x")])
      >>> [i.name for i in model.graph.input], model.opset_import[0].version
      (['x'], 17)
    """
    if not isinstance(layer, Layer):
        raise TypeError(f"export: layer must be a pdx.nn.Layer; got {type(layer).__name__}")
    if isinstance(opset_version, bool) or not isinstance(opset_version, int) or not (
            MIN_OPSET <= opset_version <= _max_opset()):
        raise ValueError(f"export: opset_version={opset_version!r} is not supported; pdx writes opsets "
                         f"{MIN_OPSET}..{_max_opset()} (default {DEFAULT_OPSET}; Paddle's default 9 predates the "
                         "ops a modern model needs)")
    specs = _specs(layer, input_spec)
    program, params = _program(layer)
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for _, a in params]
    with _lowering.portable():  # plain JAX primitives: no calls into kernels compiled into this process
        closed, out_shape = jax.make_jaxpr(program, return_shape=True)(tuple(structs), *_abstract_inputs(specs))
    out_tree = jax.tree.structure(out_shape)
    return build_model(closed, params=params, input_names=[s.name for s in specs],
                       output_names=_output_names(out_tree, out_tree.num_leaves), opset=opset_version,
                       model_name=type(layer).__name__.lower(), doc=f"{type(layer).__name__} exported by pdx")


def export(layer: Layer, path: str, input_spec: Sequence | None = None, opset_version: int = DEFAULT_OPSET,
           **configs) -> pathlib.Path:
    """Export a Layer's forward to an ONNX file `path + ".onnx"` (Paddle's `paddle.onnx.export`).

    pdx converts the traced program itself (no paddle2onnx): each JAX
    primitive becomes ONNX nodes, parameters and buffers become initializers
    named as in `state_dict()`, and a `None` dim of an input spec becomes a
    symbolic ONNX dim (`batch` for axis 0, `dimK` for axis K), so one file
    serves every batch size. The layer's current mode is what is exported:
    call `layer.eval()` first for inference.

    Args:
      layer: the `pdx.nn.Layer` to export (a `pdx.jit.load` / `pdx.inference`
        imported Paddle program too).
      path: the path prefix `dirname/file_prefix`; the file written is
        `path + ".onnx"` (directories are created).
      input_spec: one `pdx.static.InputSpec` (or example tensor) per forward
        input. None uses the last inputs of a layer run under
        `pdx.jit.to_static`.
      opset_version: the ONNX opset, 13 up to what the installed `onnx`
        knows; default 17. Paddle's default is 9, which lacks ops these
        programs need, so pdx's default differs.
      **configs: Paddle's extra options (`output_spec`, ...) are not
        supported and raise TypeError.

    Returns:
      The `.onnx` file's path (Paddle returns None).

    Raises:
      OnnxExportError: the layer uses something ONNX cannot express here:
        an unsupported primitive (`UnsupportedPrimitiveError`, naming it and
        the model line), bfloat16 / float16 tensors, a dynamic-length loop.

    Example:
      >>> import pdx, tempfile
      >>> net = pdx.nn.Sequential(pdx.nn.Linear(4, 8), pdx.nn.ReLU(), pdx.nn.Linear(8, 2))
      >>> f = pdx.onnx.export(net, tempfile.mkdtemp() + "/mlp", [pdx.static.InputSpec([None, 4], "float32", "x")])
      >>> f.name
      'mlp.onnx'
    """
    if configs:
        raise TypeError(f"export: unsupported option(s) {sorted(configs)}; pdx.onnx.export exports the whole "
                        "forward of `layer` (wrap the part you want in a Layer to export less)")
    path = os.fspath(path)
    if not os.path.basename(path):
        raise ValueError(f"export: path={path!r} must be dirname/file_prefix (the file written is "
                         "path + '.onnx'); its file_prefix is empty")
    model = to_onnx(layer, input_spec, opset_version)
    out = pathlib.Path(path + ".onnx")
    out.parent.mkdir(parents=True, exist_ok=True)
    big = sum(len(t.raw_data) for t in model.graph.initializer) > _MAX_PROTO_BYTES
    onnx.save_model(model, str(out), save_as_external_data=big, location=out.name + ".data" if big else None)
    return out

