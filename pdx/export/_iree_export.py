"""The IREE part of `pdx.export.export`: static programs per batch bucket, rewritten, verified, compiled.

    program(params, *inputs)           the traced model (as in program.jaxexport)
      | rewrite_program (BatchNorm folded into convs, conv="patches", precision="bfloat16"),
      |   checked on XLA against the traced one
      | params="inline": closed over (compile-time constants) / "arguments": the module's first arguments
      | one static StableHLO module per batch bucket -> merge_buckets -> one module, functions main_batch<N>
      v
    choose_flags(target, module) -> iree-compile -> <target>.vmfb       (manifest: one entry per target)
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence

import jax
import numpy as np
from jax import export as jax_export

from pdx import _lowering
from pdx import kernels as K
from pdx.export._iree import IREE_TARGETS, choose_flags, compile_vmfb, merge_buckets, program_kind
from pdx.jit import InputSpec

__all__ = ["CONV_BY_PROGRAM", "DEFAULT_BATCH_SIZES", "FP32_TOLERANCE", "IREE_PARAMS", "IreeOptions",
           "compile_targets"]

BATCH = "batch"  # the symbol of a `None` leading dim (as in _export.py)
# Batch buckets when rows may be split: any batch runs as few calls of these sizes.
# Each bucket is one more function in the module: compile time grows about linearly
# with the buckets (benchmarks/export_matrix.py prints compile seconds).
DEFAULT_BATCH_SIZES = (1, 4, 16)
IREE_PARAMS = ("auto", "arguments", "inline")
# A float32 rewrite must match the traced program within this fraction of its largest |output|.
FP32_TOLERANCE = 1e-4

# Program kind (`_iree.program_kind` of the traced program) -> conv mode for iree.conv="auto",
# by measurement: `python benchmarks/iree_flags.py` (batch 1, IREE 3.13, 2-core x86 host under
# load ~9, interleaved rounds; ms relative to the native program with pdx's flags):
#   resnet18 @224      patches 1.11, patches + inline weights 1.08, bf16 patches + inline 1.53
#   mobilenet_v2 @224  patches: iree-compile failed (native with inline weights: 0.78)
# Explicit patches do not beat IREE's own im2col for regular convolutions, so "auto" keeps
# the convolutions as traced; "patches" remains an option (and the route to bfloat16).
CONV_BY_PROGRAM: Mapping[str, str] = {
    "conv": "native",
    "grouped_conv": "native",
    "dense": "native",
}
# Program kind -> where the weights live for iree.params="auto", by measurement
# (`python benchmarks/infer.py`, 224 px, batch 1, idle 2-core Xeon, IREE 3.13, benchmarks/RESULTS.md):
#   mobilenet_v2  inline 9.4 ms vs arguments 21.7 ms (IREE packs the depthwise weights once)
#   resnet18      inline 42.8 ms vs arguments 39.1 ms
PARAMS_BY_PROGRAM: Mapping[str, str] = {
    "conv": "arguments",
    "grouped_conv": "inline",
    "dense": "arguments",
}


@dataclasses.dataclass(frozen=True)
class IreeOptions:
    """How the IREE modules of an artifact are built (`export(..., iree=IreeOptions(...))`, or a dict).

    Attributes:
      dims: sizes for the dynamic dims other than the batch in IREE targets,
        which need static shapes: IREE does not compile the dynamic reshapes
        of a symbolic program, so IREE modules are specialized and the
        manifest records the sizes. `{"batch": n}` is the same as
        `batch_sizes=(n,)`.
      batch_split: whether the rows of a batch are independent (true of
        inference models in eval mode, false of e.g. a function that sums
        over the batch): the IREE runtime then accepts any batch size and
        runs it as the cheapest sequence of bucket calls (the last one padded
        with zero rows, which are dropped). "auto" (default): checked at
        export on XLA (8 random batches of 4 rows against their rows one by
        one, relative error <= 1e-4), so an artifact with a `None` batch runs
        any batch without a flag; a random check, so pass False for a program
        that mixes rows only for some inputs. False: the batch must be one of
        `batch_sizes`.
      batch_sizes: the batch buckets: one function per size in each IREE
        module (default `DEFAULT_BATCH_SIZES` = (1, 4, 16) with
        `batch_split=True`, else (1,): an "auto" split covers every batch
        with batch-1 calls unless sizes are given). Each size is one more compile.
      flags: iree-compile optimization flags for every IREE target, instead
        of the measured choice for the program (`choose_flags`: im2col for
        regular convolutions, not with depthwise ones). The target's device
        flags are kept; the manifest records all flags.
      params: "auto" (default: the measured choice for the program,
        `PARAMS_BY_PROGRAM`: inline for programs with depthwise or grouped
        convolutions, arguments otherwise), "arguments" (the IREE modules
        take the parameters as arguments, uploaded once by the runtime) or
        "inline" (the weights are compile-time constants of the modules,
        which IREE may pre-pack; the .vmfb then holds the weights).
      conv: "auto" (default: the measured choice, `CONV_BY_PROGRAM`; today
        the convolutions as traced), "native" or "patches" (each one-group
        convolution as explicit patches and one matmul). A rewritten program
        is checked against the traced one on XLA at export (relative error
        <= 1e-4 of the largest output, else the traced program is compiled,
        with a warning); the manifest records the choice and the error.
      precision: "float32" (default) or "bfloat16" (needs params="inline"):
        the modules' convolutions (as patches) and matmuls take bfloat16
        operands and accumulate in float32; the manifest's `max_error` is the
        measured error against the float32 program (about 3e-3 of the
        largest logit on ResNet-18).
      fold_batchnorm: fold a per-channel scale and shift that follow a
        convolution (an eval-mode BatchNorm) into its weights and a bias
        (checked like the other rewrites). Off by default: no speed-up was
        measured, and iree-compile 3.13 rejects some folded programs (stack
        allocation limit), which then compile a second time unfolded. The
        XLA program and params.safetensors are never changed.

    Example:
      >>> IreeOptions(batch_split=True).batch_split
      True
    """

    dims: Mapping[str, int] | None = None
    batch_split: bool | str = "auto"
    batch_sizes: Sequence[int] | None = None
    flags: Sequence[str] | None = None
    params: str = "auto"
    conv: str = "auto"
    precision: str = "float32"
    fold_batchnorm: bool = False


@_lowering.portable()
def compile_targets(program: Callable, specs: Sequence[InputSpec], params: Mapping[str, np.ndarray],
                    targets: Sequence[str], files: dict, options: IreeOptions) -> dict[str, dict]:
    """Compile one .vmfb per IREE target (a function per batch bucket) into `files`.

    Returns the manifest entry of each target.
    """
    _check_options(options)
    dims, sizes = _iree_dims(specs, options.dims, options.batch_sizes, options.batch_split)
    values = tuple(params.values())
    shapes = {batch: _static(specs, dict(dims, **({BATCH: batch} if batch is not None else {}))) for batch in sizes}
    first = shapes[sizes[0]]
    conv, precision, fold, error, kind = _choose_program(program, values, first, options)
    params_mode = options.params
    if params_mode == "auto":
        params_mode = "inline" if precision == "bfloat16" else PARAMS_BY_PROGRAM[kind]
    rewritten = program
    if (conv, precision, fold) != ("native", "float32", False):
        rewritten = K.rewrite_program(program, conv=conv, precision=precision, fold_scale=fold, weights_argnum=0)
    if params_mode == "inline":  # closed over: jax.export writes them as constants of the module
        fn, param_structs = (lambda *inputs: rewritten(values, *inputs)), ()
    else:
        fn, param_structs = rewritten, (tuple(jax.ShapeDtypeStruct(p.shape, p.dtype) for p in values),)
    mlir = merge_buckets({batch: jax_export.export(jax.jit(fn), platforms=("cpu",))(*param_structs, *static)
                          .mlir_module() for batch, static in shapes.items()})
    entries = {}
    for target in targets:
        flags = choose_flags(target, mlir, options.flags)
        file = f"{target}.vmfb"
        try:
            files[file] = compile_vmfb(mlir, target, flags)
        except RuntimeError as e:
            if rewritten is program or precision != "float32" or options.conv == "patches":
                raise
            # A rewrite pdx chose failed to compile: the traced program is the safe fallback.
            warnings.warn(f"export: {e}; compiling the traced program instead", RuntimeWarning, stacklevel=3)
            return compile_targets(program, specs, params, targets, files,
                                   dataclasses.replace(options, conv="native", fold_batchnorm=False))
        entry = {"file": file, "backend": IREE_TARGETS[target][0], "flags": list(flags),
                 "dims": dict(dims, **({BATCH: sizes[0]} if sizes[0] is not None else {})),
                 "input_shapes": [list(s.shape) for s in first], "batch_split": bool(options.batch_split),
                 "params": params_mode, "conv": conv, "precision": precision, "fold_batchnorm": fold,
                 "max_error": error}
        if sizes != (None,):
            entry["buckets"] = [{"batch": batch, "input_shapes": [list(s.shape) for s in static]}
                                for batch, static in shapes.items()]
        entries[target] = entry
    return entries


def _check_options(options: IreeOptions) -> None:
    for name, value, allowed in (("iree.params", options.params, IREE_PARAMS),
                                 ("iree.conv", options.conv, ("auto",) + K.REWRITE_CONV_MODES),
                                 ("iree.precision", options.precision, K.REWRITE_PRECISIONS)):
        if value not in allowed:
            raise ValueError(f"export: {name}={value!r} must be one of {list(allowed)}")
    if options.precision == "bfloat16" and options.params == "arguments":
        # Casting argument weights inside the module overflows iree-compile's stack limit
        # (IREE 3.13, ResNet-18); as constants they are cast once at compile time.
        raise ValueError("export: iree.precision='bfloat16' needs iree.params='inline' (the weights are cast "
                         "to bfloat16 once, at compile time)")


def _static(specs: Sequence[InputSpec], sizes: Mapping[str, int]) -> list[jax.ShapeDtypeStruct]:
    return [jax.ShapeDtypeStruct(tuple(sizes[BATCH if a == 0 else f"dim{a}"] if d is None else d
                                       for a, d in enumerate(s.shape)), s.dtype) for s in specs]


@_lowering.portable()
def _choose_program(program, values, static, options: IreeOptions) -> tuple[str, str, bool, float, str]:
    """(conv mode, precision, fold, max |rewritten - traced| / max |traced| on XLA, program kind)
    for the IREE modules.

    The rewrite is run against the traced program on XLA at the first
    bucket's shapes with random inputs; a float32 rewrite off by more than
    FP32_TOLERANCE falls back to the traced program (with a warning).
    """
    conv, precision, fold = options.conv, options.precision, bool(options.fold_batchnorm)
    structs = tuple(jax.ShapeDtypeStruct(np.shape(p), np.asarray(p).dtype) for p in values)
    traced = jax_export.export(jax.jit(program), platforms=("cpu",))(structs, *static).mlir_module()
    kind = program_kind(traced)
    if conv == "auto":
        conv = CONV_BY_PROGRAM[kind]
    if precision == "bfloat16":
        conv = "patches"  # bfloat16 operands for the convolutions means them as matmuls
    fold = fold and kind != "dense"
    if (conv, precision, fold) == ("native", "float32", False):
        return conv, precision, fold, 0.0, kind
    inputs = _example_inputs(static)
    want = jax.tree.leaves(jax.jit(program)(values, *inputs))
    rewritten = K.rewrite_program(program, conv=conv, precision=precision, fold_scale=fold, weights_argnum=0)
    got = jax.tree.leaves(jax.jit(rewritten)(values, *inputs))
    error = max((_relative_error(g, w) for g, w in zip(got, want)), default=0.0)
    if precision == "float32" and not error <= FP32_TOLERANCE:
        warnings.warn(f"export: the rewritten program (conv={conv!r}, fold_batchnorm={fold}) differs from the "
                      f"traced one by {error:.2e} of its largest output (> {FP32_TOLERANCE}); compiling the "
                      "traced program for IREE instead", RuntimeWarning, stacklevel=3)
        return "native", precision, False, 0.0, kind
    return conv, precision, fold, error, kind


def _example_inputs(static) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = []
    for s in static:
        if np.issubdtype(s.dtype, np.floating):
            out.append(rng.standard_normal(s.shape).astype(s.dtype))
        else:
            out.append(np.zeros(s.shape, s.dtype))
    return out


def _relative_error(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = float(np.abs(want).max()) if want.size else 0.0
    return float(np.abs(got - want).max() / max(scale, 1e-30)) if want.size else 0.0


def _iree_dims(specs: Sequence[InputSpec], given: Mapping[str, int] | None, batch_sizes: Sequence[int] | None,
               split: bool) -> tuple[dict[str, int], tuple]:
    """(sizes of the dynamic dims other than the batch, batch buckets or (None,) without a batch dim)."""
    given = dict(given) if given else {}
    needed = sorted({BATCH if a == 0 else f"dim{a}" for s in specs for a, d in enumerate(s.shape) if d is None})
    if BATCH in given:
        if batch_sizes is not None:
            raise ValueError(f"export: iree.dims={given} and iree.batch_sizes={batch_sizes!r} both give the "
                             "batch size; pass iree.batch_sizes only")
        batch_sizes = (given.pop(BATCH),)
    missing = [d for d in needed if d != BATCH and d not in given]
    if missing:
        raise ValueError(f"export: IREE targets need static shapes; give sizes for the dynamic dims "
                         f"{missing} with iree.dims={{{', '.join(repr(m) + ': ...' for m in missing)}}}")
    bad = {k: v for k, v in given.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1}
    if bad:
        raise ValueError(f"export: iree.dims={given} must map dim names to ints >= 1; bad: {bad}")
    dims = {k: given[k] for k in needed if k != BATCH}
    if BATCH not in needed:
        return dims, (None,)
    if batch_sizes is None:
        batch_sizes = DEFAULT_BATCH_SIZES if split else (1,)
    sizes = tuple(batch_sizes) if isinstance(batch_sizes, (list, tuple)) else (batch_sizes,)
    if not sizes or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in sizes):
        raise ValueError(f"export: iree.batch_sizes={batch_sizes!r} must be a non-empty list of ints >= 1, "
                         "e.g. (1, 4, 16)")
    return dims, tuple(sorted(set(sizes)))
