"""IREE targets: compile StableHLO to `.vmfb`, choose flags per program, run host modules.

IREE's StableHLO input does not legalize the dynamic reshapes and
broadcasts that symbolic dims produce, so every IREE target is compiled
from the program specialized to static shapes at export time, once per
batch bucket (e.g. batch 1, 4 and 16; the manifest records them), all
buckets as functions of one module (`merge_buckets`). The
IREE runtime covers any batch size of a `None` batch dim with the
cheapest sequence of bucket calls (`plan_batches`), padding the last one.

The optimization flags are chosen from the program (`choose_flags`): no
single set wins on every model (see `FLAGS_BY_PROGRAM`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["CALL_OVERHEAD_ROWS", "FLAGS_BY_PROGRAM", "IREE_TARGETS", "IreeModule", "choose_flags", "compile_vmfb",
           "function_name", "merge_buckets", "plan_batches", "program_kind"]

# target name -> (IREE HAL backend, flags naming the device, runs on this host)
IREE_TARGETS: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "iree-llvm-cpu": ("llvm-cpu", ("--iree-llvmcpu-target-cpu=host",), True),
    "iree-arm64-android": ("llvm-cpu", ("--iree-llvmcpu-target-triple=aarch64-none-linux-android34",), False),
    "iree-arm64-linux": ("llvm-cpu", ("--iree-llvmcpu-target-triple=aarch64-none-linux-gnu",), False),
    "iree-vulkan": ("vulkan-spirv", (), False),
}

_O3 = ("--iree-opt-level=O3",)  # iree-compile's default is O0: 30-50x slower convolutions than XLA
_DATA_TILING = ("--iree-opt-data-tiling",)
_IM2COL = ("--iree-global-opt-use-im2col-for-convs",)
# iree-compile 3.13 refuses ResNet-18 at 224 px (channels-last convolutions, as pdx lowers them)
# with the default 32 KiB limit: a 1x1 stride-2 convolution needs 52,736 bytes of stack.
_STACK = ("--iree-llvmcpu-stack-allocation-limit=131072",)

# Program kind -> llvm-cpu optimization flags, by measurement: `python benchmarks/iree_flags.py`,
# benchmarks/HISTORY.md "IREE llvm-cpu flags per model" (batch 1, IREE 3.13, 2-core x86 host):
#   kind          model @px            O3   +data tiling  +im2col  +both (ms)
#   conv          resnet18 @32        26.7     25.7        16.4     14.0
#   conv          resnet18 @224     1034.6   1032.1       269.3    240.5
#   grouped_conv  mobilenet_v2 @32     2.03     2.21        3.60     5.12
#   grouped_conv  mobilenet_v2 @224   35.3     28.5        42.2     44.7
# im2col turns a regular convolution into one matmul (4x at 224 px) but slows
# depthwise/grouped ones down, and one set of flags applies to the whole program.
# (Measured on channels-first programs; with pdx's channels-last convolutions ResNet-18
# at 224 px runs in 86 ms with the "conv" flags, see benchmarks/RESULTS.md.)
FLAGS_BY_PROGRAM: Mapping[str, tuple[str, ...]] = {
    "conv": _O3 + _DATA_TILING + _IM2COL + _STACK,
    "grouped_conv": _O3 + _DATA_TILING + _STACK,
    "dense": _O3 + _DATA_TILING,
}

_CONV = re.compile(r"stablehlo\.convolution")
_GROUPS = re.compile(r"feature_group_count\s*=\s*(\d+)")


def program_kind(mlir: str) -> str:
    """The key of `FLAGS_BY_PROGRAM` for a StableHLO module (text).

    "grouped_conv" if any convolution has feature_group_count > 1 (depthwise,
    as in MobileNet), "conv" if it has convolutions, else "dense".
    """
    if any(int(g) > 1 for g in _GROUPS.findall(mlir)):
        return "grouped_conv"
    return "conv" if _CONV.search(mlir) else "dense"


def choose_flags(target: str, mlir: str, override: Sequence[str] | None = None) -> tuple[str, ...]:
    """iree-compile flags for one target: the device flags plus optimization flags.

    Args:
      target: a key of IREE_TARGETS.
      mlir: the StableHLO module (text) the flags are for.
      override: optimization flags to use instead of the measured choice
        (the device flags of the target are kept).

    Example:
      >>> choose_flags("iree-llvm-cpu", "stablehlo.dot_general")
      ('--iree-llvmcpu-target-cpu=host', '--iree-opt-level=O3', '--iree-opt-data-tiling')
    """
    backend, device_flags, _ = IREE_TARGETS[target]
    if override is not None:
        if isinstance(override, str) or not all(isinstance(f, str) and f.startswith("--") for f in override):
            raise ValueError(f"export: iree.flags={override!r} must be a list of iree-compile flags "
                             "like ['--iree-opt-level=O3', '--iree-opt-data-tiling']")
        return device_flags + tuple(override)
    if backend != "llvm-cpu":
        return device_flags + _O3
    return device_flags + FLAGS_BY_PROGRAM[program_kind(mlir)]


def compile_vmfb(mlir: str, target: str, flags: Sequence[str] | None = None) -> bytes:
    """Compile a StableHLO module (text) for one IREE target.

    Args:
      mlir: the module, e.g. `jax.export.Exported.mlir_module()` for static shapes.
      target: a key of IREE_TARGETS.
      flags: all iree-compile flags (default: `choose_flags(target, mlir)`).

    Returns:
      The `.vmfb` bytes.
    """
    import iree.compiler as ireec

    backend = IREE_TARGETS[target][0]
    flags = choose_flags(target, mlir) if flags is None else tuple(flags)
    try:
        return ireec.compile_str(mlir, target_backends=[backend], input_type="stablehlo", extra_args=list(flags))
    except ireec.CompilerToolError as e:
        lines = [ln for ln in str(e).splitlines() if "error:" in ln]
        reason = lines[0].strip() if lines else str(e).splitlines()[0]
        raise RuntimeError(f"export: IREE could not compile the program for target {target!r}: {reason}") from e


# A module call costs about as much as computing one more row (argument marshalling,
# task-system dispatch); padding rows cost full rows. Used by `plan_batches`.
CALL_OVERHEAD_ROWS = 1


def plan_batches(n: int, buckets: Sequence[int]) -> list[int]:
    """Bucket sizes whose calls cover `n` rows at the least cost.

    The cost of a plan is the rows computed (padding included) plus
    `CALL_OVERHEAD_ROWS` per call; among equal costs, fewer calls win. The
    last call of a plan may be padded (it is the only one with `sum > n`).

    Example:
      >>> plan_batches(17, (1, 4, 16)), plan_batches(3, (1, 4, 16)), plan_batches(5, (1, 4, 16))
      ([16, 1], [4], [4, 1])
    """
    if n < 1:
        raise ValueError(f"plan_batches: n={n} must be >= 1")
    buckets = tuple(sorted(set(buckets)))
    # The largest bucket has the least overhead per row: whole calls of it cover the bulk.
    top = buckets[-1]
    bulk = max(n // top - 1, 0)
    return [top] * bulk + list(_plan(n - bulk * top, buckets))


@functools.lru_cache(maxsize=4096)
def _plan(n: int, buckets: tuple[int, ...]) -> tuple[int, ...]:
    # best[r] = cheapest plan covering r rows exactly or with padding (cost, calls, plan).
    best: list[tuple[int, int, tuple[int, ...]]] = [(0, 0, ())]
    for r in range(1, n + 1):
        options = []
        for b in buckets:
            cost, calls, plan = best[max(r - b, 0)]
            options.append((cost + b + CALL_OVERHEAD_ROWS, calls + 1, (b,) + plan))
        best.append(min(options))
    # Largest buckets first: the padded call (if any) comes last.
    return tuple(sorted(best[n][2], reverse=True))


def function_name(batch: int | None) -> str:
    """The module function that runs one batch bucket ("main" for a program without a batch dim)."""
    return "main" if batch is None else f"main_batch{batch}"


def merge_buckets(mlirs: Mapping[int | None, str]) -> str:
    """One StableHLO module (text) holding every bucket's program as function `function_name(batch)`.

    Each jax-exported module has a public `@main` and private helpers; their
    symbols get the bucket's suffix so the modules can share one symbol
    table. One module per target means one `.vmfb` and, for inline weights,
    one copy of them.
    """
    if list(mlirs) == [None]:
        return mlirs[None]
    from iree.compiler import ir

    with ir.Context(), ir.Location.unknown():
        merged = None
        for batch, text in mlirs.items():
            module = ir.Module.parse(text)
            for op in list(module.body.operations):
                name = ir.StringAttr(op.attributes["sym_name"]).value
                new = function_name(batch) if name == "main" else f"{name}_batch{batch}"
                ir.SymbolTable.replace_all_symbol_uses(name, new, module.operation)
                op.attributes["sym_name"] = ir.StringAttr.get(new)
            if merged is None:
                merged = module
            else:
                for op in list(module.body.operations):
                    merged.body.append(op.detach_from_parent())
        return merged.operation.get_asm(enable_debug_info=False)


class IreeModule:
    """A host `.vmfb` loaded into the IREE runtime ("local-task" driver).

    Parameters are uploaded once (none for a module compiled with its
    weights inline); a call passes them by reference to the named function
    (one per batch bucket, see `function_name`).
    """

    def __init__(self, vmfb: bytes, params: Sequence[np.ndarray], *, driver: str = "local-task"):
        import iree.runtime as ireert

        self._config = ireert.Config(driver)
        self._context = ireert.SystemContext(config=self._config)
        module = ireert.VmModule.copy_buffer(self._config.vm_instance, vmfb)
        self._context.add_vm_module(module)
        self._functions = self._context.modules[module.name]
        device = self._config.device
        self._params = [ireert.asdevicearray(device, np.asarray(p, order="C")) for p in params]  # keeps 0-d

    def __call__(self, *arrays: np.ndarray, function: str = "main") -> list[np.ndarray]:
        out = self._functions[function](*self._params, *[np.asarray(a, order="C") for a in arrays])
        outs = out if isinstance(out, (list, tuple)) else [out]
        # to_host() may view a runtime buffer that the next call reuses: copy.
        return [np.array(o.to_host(), copy=True) for o in outs]
