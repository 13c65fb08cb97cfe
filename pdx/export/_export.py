"""`pdx.export.export`: trace a Layer or function once and write an artifact.

The model is traced through `pdx.jit` (a `StaticFunction`, so whatever
pdx.jit does to user code — control-flow conversion included — applies)
into a pure function of explicit parameters:

    program(params: tuple of arrays, *inputs) -> outputs

`params` are the Layers' parameters and buffers in `state_dict()` order
(names in the manifest); `jax.export` lowers it to StableHLO with a
symbolic dim for every `None` in the input specs. The parameters go to
`params.safetensors`, the serialized `Exported` to `program.jaxexport`, and
each IREE target gets a `.vmfb` compiled from the same program with static
shapes.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import importlib.metadata
import inspect
import pathlib
import re
from collections.abc import Mapping, Sequence

import jax
import numpy as np
from jax import export as jax_export

from pdx import _lowering
from pdx import kernels as K
from pdx._graph import Graph, free_graph_refs, is_graph_node, run_with_values
from pdx.export import _artifact
from pdx.export._iree import IREE_TARGETS
from pdx.export._iree_export import IreeOptions, _example_inputs, _relative_error, compile_targets
from pdx.jit import InputSpec
from pdx.jit import StaticFunction
from pdx._static_layers import static_layers
from pdx.nn import Buffer, Layer

__all__ = ["BATCH", "ONEDNN_PRECISIONS", "TARGETS", "CpuOptions", "export", "export_program"]

BATCH = "batch"  # the symbol of a `None` leading dim, shared by all inputs (_iree_export.BATCH too)
TARGETS = ("xla",) + tuple(IREE_TARGETS)
ONEDNN_PRECISIONS = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class CpuOptions:
    """The CPU program of an artifact (`export(..., cpu=CpuOptions(...))`, or a dict of these fields).

    Attributes:
      onednn: where pdx's oneDNN kernels are available (x86-64 Linux), also
        write the program with its 2-D convolutions and matmuls as calls to
        them (`program_onednn.jaxexport`, forward only): `load(...,
        runtime="xla")` runs it where the kernels are available, the portable
        program elsewhere. Written only for a program that has such ops.
        Its convolutions keep their weights in oneDNN's layout between calls,
        with a following BatchNorm folded in and a residual add and ReLU /
        ReLU6 fused (`pdx/kernels/_rewrite.py`).
      precision: "float32" (default) or "bfloat16": that program's
        convolutions take bfloat16 activations and weights, with float32
        accumulation and bias (AMX / AVX512-BF16 CPUs run them 2-3x faster);
        the manifest's `targets.xla.onednn_max_error` is the measured error
        against the float32 program (largest |difference| / largest |output|
        on random inputs). The portable program stays float32.

    Example:
      >>> CpuOptions(onednn=False)
      CpuOptions(onednn=False, precision='float32')
    """

    onednn: bool = True
    precision: str = "float32"


def _options(cls, value, arg: str):
    """`value` as a `cls` record: None -> defaults, a record as is, a dict of its fields."""
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        fields = [f.name for f in dataclasses.fields(cls)]
        bad = sorted(set(value) - set(fields))
        if bad:
            raise TypeError(f"export: {arg}={dict(value)!r} has unknown field(s) {bad}; {cls.__name__} has {fields}")
        return cls(**value)
    raise TypeError(f"export: {arg}= must be a {cls.__name__} or a dict of its fields; got {type(value).__name__}")


def _moved(unknown) -> str:
    """How the flat arguments of earlier versions are spelled now."""
    hints = []
    for key in sorted(unknown):
        if key.startswith("iree_"):
            hints.append(f"{key}=... is iree=IreeOptions({key[5:]}=...)")
        elif key == "onednn":
            hints.append("onednn=... is cpu=CpuOptions(onednn=...)")
        elif key == "onednn_precision":
            hints.append("onednn_precision=... is cpu=CpuOptions(precision=...)")
    return "; ".join(hints) or "see help(pdx.export.export)"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_OP = re.compile(r"(?:=|^)\s*\"?((?:stablehlo|chlo)\.[a-z_]+)", re.MULTILINE)


def _dim_symbol(axis: int) -> str:
    # Dynamic dims at the same axis share a symbol across inputs (ids and mask of
    # one batch have the same length); the check at call time enforces it.
    return BATCH if axis == 0 else f"dim{axis}"


def _as_spec(spec, i: int, default_name: str) -> InputSpec:
    if isinstance(spec, InputSpec):
        out = spec
    elif isinstance(spec, jax.ShapeDtypeStruct) or hasattr(spec, "shape") and hasattr(spec, "dtype"):
        out = InputSpec(tuple(spec.shape), spec.dtype)  # an example array: static shape
    else:
        raise TypeError(f"export: input_spec[{i}] must be a pdx.jit.InputSpec (or an example array); "
                        f"got {type(spec).__name__}")
    return InputSpec(out.shape, out.dtype, out.name or default_name)


class _Traced:
    """A Layer/function as `program(params, *inputs)` plus its named parameters."""

    def __init__(self, layer_or_fn):
        if isinstance(layer_or_fn, Layer):
            layer = layer_or_fn
            static = static_layers.get(layer) or StaticFunction(type(layer).forward)
            self.call = functools.partial(static, layer)
            self.name = type(layer).__name__.lower()
            self.arg_names = _positional_names(type(layer).forward)[1:]
            named = [("", layer)]
        elif callable(layer_or_fn):
            static = layer_or_fn if isinstance(layer_or_fn, StaticFunction) else StaticFunction(layer_or_fn)
            fn = static.dygraph_function
            self.call = static
            self.name = getattr(fn, "__name__", "model").strip("<>") or "model"
            self.arg_names = _positional_names(fn)
            named = _reachable_objects(fn)
        else:
            raise TypeError(f"export: layer_or_fn must be a pdx.nn.Layer or a function; got "
                            f"{type(layer_or_fn).__name__}")
        self.graph = Graph([obj for _, obj in named])
        slot = {id(v): i for i, v in enumerate(self.graph.variables)}
        self.params: list[tuple[str, object, int]] = []  # (state_dict name, Variable, graph slot)
        seen: set[int] = set()
        for prefix, obj in named:
            if not isinstance(obj, Layer):
                continue  # optimizers etc.: their state is baked into the program as constants
            for name, var in list(obj.named_parameters()) + list(obj.named_buffers()):
                if id(var) not in seen:
                    seen.add(id(var))
                    self.params.append((f"{prefix}.{name}" if prefix else name, var, slot[id(var)]))

    def program(self, params, *inputs):
        values = self.graph.values()
        for (_, _, slot), value in zip(self.params, params):
            values[slot] = value
        out, _ = run_with_values(self.graph, values, self.call, *inputs)
        return _plain_containers(out)


def _plain_containers(tree):
    """NamedTuples -> dicts keyed by field (output names; a loader needs no model class)."""
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return {field: _plain_containers(value) for field, value in zip(tree._fields, tree)}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_plain_containers(v) for v in tree)
    if isinstance(tree, dict):
        return {k: _plain_containers(v) for k, v in tree.items()}
    return tree


def _positional_names(fn) -> list[str]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _reachable_objects(fn) -> list[tuple[str, object]]:
    """(name prefix, Layer/optimizer) for the objects `fn` reaches: a bound
    method's self (no prefix), closure variables and module globals (their name)."""
    named = []
    if inspect.ismethod(fn) and is_graph_node(fn.__self__):
        named.append(("", fn.__self__))
    cells = dict(zip(getattr(getattr(fn, "__code__", None), "co_freevars", ()), getattr(fn, "__closure__", None) or ()))
    cell_names = {id(cell): name for name, cell in cells.items()}
    for i, (holder, name) in enumerate(free_graph_refs(fn)):
        obj = holder[name] if name is not None else holder.cell_contents
        prefix = name if name is not None else cell_names.get(id(holder), f"obj{i}")
        if not any(obj is o for _, o in named):
            named.append((prefix, obj))
    return named


def _json_dims(shape) -> list:
    return [d if isinstance(d, int) else str(d) for d in shape]


@_lowering.portable()  # plain StableHLO: no custom calls of this process
def export_program(layer_or_fn, input_spec: Sequence, *, platforms: Sequence[str]):
    """Trace and export; returns (traced, specs, Exported).

    The Exported's arguments are `(params tuple, *inputs)`.
    """
    traced = _Traced(layer_or_fn)
    names = traced.arg_names
    specs = [_as_spec(s, i, names[i] if i < len(names) else f"input_{i}") for i, s in enumerate(input_spec)]
    if len({s.name for s in specs}) != len(specs):
        raise ValueError(f"export: input names must be unique; got {[s.name for s in specs]}")
    exported = jax_export.export(jax.jit(traced.program), platforms=tuple(platforms))(*_arguments(traced, specs))
    return traced, specs, exported


def _arguments(traced, specs) -> tuple:
    """The program's abstract arguments: (params tuple, *inputs), `None` dims symbolic."""
    scope = jax_export.SymbolicScope()
    structs = []
    for s in specs:
        dims = ", ".join(_dim_symbol(a) if d is None else str(d) for a, d in enumerate(s.shape))
        shape = jax_export.symbolic_shape(dims, scope=scope) if dims else ()
        structs.append(jax.ShapeDtypeStruct(shape, s.dtype))
    param_structs = tuple(jax.ShapeDtypeStruct(v.get_value().shape, v.get_value().dtype) for _, v, _ in traced.params)
    return (param_structs, *structs)


def _onednn_program(traced, specs, precision: str = "float32"):
    """The program traced with pdx's oneDNN kernels for CPUs, or None (none fit, or unavailable here).

    It takes `(params, weights_token, *inputs)`: convolutions whose weight comes
    from the parameters keep its oneDNN layout between calls with the same int32
    token (`pdx.kernels.onednn.kept_conv`; a loaded artifact passes its own, 0
    keeps nothing).
    """
    if K.onednn.unavailable_reason() is not None:
        return None

    def program(params, weights_token, *inputs):
        return K.rewrite_program(traced.program, conv="native", precision=precision, weights_argnum=0,
                               weights_token=weights_token)(params, *inputs)

    params, *inputs = _arguments(traced, specs)
    allowed = [jax_export.DisabledSafetyCheck.custom_call(t) for t in K.onednn.TARGETS]
    with _lowering.native():
        native = jax_export.export(jax.jit(program), platforms=("cpu",), disabled_checks=allowed)(
            params, jax.ShapeDtypeStruct((), np.int32), *inputs)
    return native if any(t in native.mlir_module() for t in K.onednn.TARGETS) else None


def _onednn_error(native, portable, params, traced, specs) -> float:
    """max |native - portable| / max |portable| over the outputs, on random inputs (dynamic dims 1, others 16)."""
    shapes = [jax.ShapeDtypeStruct(tuple((1 if a == 0 else 16) if d is None else d for a, d in enumerate(s.shape)),
                                   s.dtype) for s in specs]
    inputs = _example_inputs(shapes)
    values = tuple(params[n] for n, _, _ in traced.params)
    want = jax.tree.leaves(portable.call(values, *inputs))
    got = jax.tree.leaves(native.call(values, np.int32(0), *inputs))
    return max((_relative_error(g, w) for g, w in zip(got, want)), default=0.0)


def export(layer_or_fn, path, input_spec: Sequence, targets: Sequence[str] = ("xla",), *,
           name: str | None = None, output_names: Sequence[str] | None = None,
           platforms: Sequence[str] = ("cpu", "cuda"), iree: IreeOptions | Mapping | None = None,
           cpu: CpuOptions | Mapping | None = None, differentiable: bool = True, **unknown) -> pathlib.Path:
    """Export a Layer or function to a StableHLO artifact directory.

    Args:
      layer_or_fn: a `pdx.nn.Layer` (its forward is exported; call `.eval()`
        first for inference — the mode at export time is baked in) or a
        function of arrays (Layers it reaches through closures or globals
        become parameters, named `<variable>.<state_dict name>`).
      path: the artifact directory (created; an existing artifact is replaced).
      input_spec: one `pdx.jit.InputSpec` per input (or an example array).
        `None` dims become symbolic: a leading `None` is the dim `batch`,
        shared by all inputs; `None` at axis k is `dimk`, also shared.
      targets: "xla" (always written) and any of "iree-llvm-cpu" (this
        host), "iree-arm64-android", "iree-arm64-linux", "iree-vulkan".
      name: the model name (default: the Layer's class or the function's
        name, lower-cased for Layers).
      output_names: names for the flattened outputs (default "output" or
        "output_0", "output_1", ...; a dict output uses its keys).
      platforms: XLA platforms the program is lowered for.
      iree: how the IREE targets' modules are built, an `IreeOptions` (or a
        dict of its fields): dynamic dim sizes, batch buckets and splitting,
        flags, where the weights live, convolution mode, precision,
        BatchNorm folding. See `IreeOptions`.
      cpu: the CPU program's options, a `CpuOptions` (or a dict of its
        fields): whether to also write the oneDNN program and in which
        precision. See `CpuOptions`.
      differentiable: also serialize the backward pass, so `pdx.jit.load`
        can fine-tune the parameters.

    Returns:
      The artifact directory as a `pathlib.Path`.

    Example:
      >>> import pdx, tempfile
      >>> net = pdx.nn.Linear(4, 2)
      >>> d = pdx.export.export(net, tempfile.mkdtemp() + "/linear", [pdx.jit.InputSpec([None, 4])])
      >>> pdx.export.load(d)(pdx.ones([3, 4])).shape
      (3, 2)
    """
    if unknown:
        raise TypeError(f"export: unexpected argument(s) {sorted(unknown)}; {_moved(unknown)}")
    iree = _options(IreeOptions, iree, "iree")
    cpu = _options(CpuOptions, cpu, "cpu")
    onednn, onednn_precision = cpu.onednn, cpu.precision
    targets = tuple(dict.fromkeys(("xla",) + tuple(targets)))
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise ValueError(f"export: unknown target(s) {unknown}; choose from {list(TARGETS)}")
    if name is not None and not _NAME.match(name):
        raise ValueError(f"export: name={name!r} must be 1-128 letters, digits, '_', '.' or '-' "
                         "(it becomes part of the serving URL)")
    if onednn_precision not in ONEDNN_PRECISIONS:
        raise ValueError(f"export: cpu.precision={onednn_precision!r} must be one of {list(ONEDNN_PRECISIONS)}")
    if onednn and onednn_precision == "bfloat16" and not K.onednn.bf16_capable():
        raise ValueError("export: cpu.precision='bfloat16' needs a CPU whose oneDNN runs bfloat16 (AVX-512 or "
                         "newer); this one has none, so the program could be neither built nor checked here. "
                         "Export with cpu=CpuOptions(precision='float32') (the default), or on an AVX-512 machine")
    if isinstance(input_spec, (InputSpec, jax.ShapeDtypeStruct)):
        input_spec = [input_spec]
    traced, specs, exported = export_program(layer_or_fn, input_spec, platforms=platforms)
    mlir = exported.mlir_module()

    out_avals = exported.out_avals
    if output_names is None:
        keys = _dict_keys(exported.out_tree)
        output_names = keys or (["output"] if len(out_avals) == 1 else [f"output_{i}" for i in range(len(out_avals))])
    output_names = [str(n) for n in output_names]
    if len(output_names) != len(out_avals):
        raise ValueError(f"export: output_names has {len(output_names)} names but the model returns "
                         f"{len(out_avals)} arrays")

    params = {n: np.asarray(v.get_value()) for n, v, _ in traced.params}
    files = {_artifact.PROGRAM: bytes(exported.serialize(vjp_order=1 if differentiable else 0)),
             _artifact.PARAMS: _artifact.save_params(params)}
    manifest_targets = {"xla": {"file": _artifact.PROGRAM, "platforms": list(exported.platforms)}}
    native = _onednn_program(traced, specs, onednn_precision) if onednn and "cpu" in platforms else None
    if native is not None:
        files[_artifact.ONEDNN_PROGRAM] = bytes(native.serialize())
        manifest_targets["xla"].update(onednn_file=_artifact.ONEDNN_PROGRAM, onednn_abi=K.onednn.ABI,
                                       onednn_precision=onednn_precision)
        if onednn_precision != "float32":
            manifest_targets["xla"]["onednn_max_error"] = _onednn_error(native, exported, params, traced, specs)
    iree_targets = [t for t in targets if t != "xla"]
    if iree_targets:
        if not (isinstance(iree.batch_split, bool) or iree.batch_split == "auto"):
            raise ValueError(f"export: iree.batch_split={iree.batch_split!r} must be True, False or 'auto'")
        split = iree.batch_split is True or iree.batch_split == "auto"
        if split and _batch_leading(specs, exported) and iree.batch_split == "auto":
            split = _rows_independent(traced, specs)
            if iree.batch_sizes is None and split:
                iree = dataclasses.replace(iree, batch_sizes=(1,))  # "auto" adds no compile
        options = dataclasses.replace(iree, batch_split=split and _batch_leading(specs, exported))
        manifest_targets.update(compile_targets(traced.program, specs, params, iree_targets, files, options))

    manifest = {
        "name": name or traced.name,
        "versions": {dist: importlib.metadata.version(dist) for dist in ("pdx", "jax", "jaxlib")},
        "inputs": [_artifact.spec_to_json(s.name, _json_dims(_symbolic(s)), s.dtype) for s in specs],
        "outputs": [_artifact.spec_to_json(n, _json_dims(a.shape), a.dtype) for n, a in zip(output_names, out_avals)],
        "params": [{"name": n, "shape": list(np.shape(params[n])), "dtype": np.asarray(params[n]).dtype.name,
                    "kind": "buffer" if isinstance(v, Buffer) else "parameter",
                    "trainable": bool(v.get_metadata().get("trainable", True)) and not isinstance(v, Buffer)}
                   for n, v, _ in traced.params],
        "program": {"file": _artifact.PROGRAM, "vjp_order": 1 if differentiable else 0,
                    "stablehlo_chars": len(mlir), "ops": _op_histogram(mlir)},
        "targets": manifest_targets,
    }
    return _artifact.write_artifact(path, manifest, files)


def _symbolic(spec: InputSpec) -> tuple:
    return tuple(_dim_symbol(a) if d is None else d for a, d in enumerate(spec.shape))


def _batch_leading(specs: Sequence[InputSpec], exported) -> bool:
    """Every input and output has the dynamic batch dim first (needed to split a batch)."""
    return (bool(specs) and all(s.shape[:1] == (None,) for s in specs)
            and all(a.shape and str(a.shape[0]) == BATCH for a in exported.out_avals))


def _rows_independent(traced, specs: Sequence[InputSpec], batch: int = 4, trials: int = 8) -> bool:
    """Whether the program's rows look independent: on `trials` random batches (rows of different scales
    and signs), the batch equals its rows run one by one (on XLA, relative error <= 1e-4 of the largest
    output). A random check: a program that mixes rows only for some inputs can pass it; pass
    iree.batch_split=False for such a program. Programs with other dynamic dims are not checked."""
    if any(d is None for s in specs for d in s.shape[1:]):
        return False
    rng = np.random.default_rng(0)

    def example(s):
        shape, dtype = (batch, *s.shape[1:]), np.dtype(s.dtype)
        if dtype == np.bool_:
            return rng.random(shape) < 0.5
        if np.issubdtype(dtype, np.integer):
            return rng.integers(0, 2, shape).astype(dtype)
        scale = rng.choice([-3.0, -1.0, -0.3, 0.3, 1.0, 3.0], size=(batch,) + (1,) * (len(shape) - 1))
        return (rng.standard_normal(shape) * scale).astype(dtype)

    params = tuple(v.get_value() for _, v, _ in traced.params)
    run = jax.jit(traced.program)
    for _ in range(trials):
        inputs = [example(s) for s in specs]
        try:
            whole = [np.asarray(o, np.float64) for o in jax.tree.leaves(run(params, *inputs))]
            rows = [[np.asarray(o, np.float64) for o in jax.tree.leaves(run(params, *[x[i:i + 1] for x in inputs]))]
                    for i in range(batch)]
        except Exception:  # noqa: BLE001 - a program that cannot run row by row is not split
            return False
        for k, out in enumerate(whole):
            if out.shape[:1] != (batch,) or not np.isfinite(out).all():
                return False
            scale = max(float(np.abs(out).max()) if out.size else 0.0, 1e-30)
            alone = np.concatenate([r[k] for r in rows])
            if alone.shape != out.shape or float(np.abs(alone - out).max()) > 1e-4 * scale:
                return False
    return True


def _dict_keys(tree) -> list[str] | None:
    """Output names from a dict output (flattening order), else None."""
    example = jax.tree.unflatten(tree, list(range(tree.num_leaves)))
    if isinstance(example, dict):
        paths = jax.tree_util.tree_flatten_with_path(example)[0]
        return [".".join(str(getattr(k, "key", k)) for k in p) for p, _ in paths]
    return None


def _op_histogram(mlir: str) -> dict[str, int]:
    counts = collections.Counter(_OP.findall(mlir))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
