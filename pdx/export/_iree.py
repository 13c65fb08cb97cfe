"""IREE targets: compile StableHLO to `.vmfb` and run host modules.

IREE's StableHLO input does not legalize the dynamic reshapes and
broadcasts that symbolic dims produce, so every IREE target is compiled
from the same program specialized to static shapes at export time (the
manifest records the sizes). The IREE runtime serves any batch size of a
`None` batch dim by running the static module on chunks of that size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["IREE_TARGETS", "IreeModule", "compile_vmfb"]

# iree-compile's default optimization level is O0: 30-50x slower convolutions than
# XLA on resnet18 (benchmarks/infer.py); O3 with data tiling and im2col closes the gap.
_OPTIMIZE = ("--iree-opt-level=O3",)
_CPU = _OPTIMIZE + ("--iree-opt-data-tiling", "--iree-global-opt-use-im2col-for-convs")

# target name -> (IREE HAL backend, extra iree-compile flags, runs on this host)
IREE_TARGETS: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "iree-llvm-cpu": ("llvm-cpu", _CPU + ("--iree-llvmcpu-target-cpu=host",), True),
    "iree-arm64-android": ("llvm-cpu", _CPU + ("--iree-llvmcpu-target-triple=aarch64-none-linux-android34",), False),
    "iree-arm64-linux": ("llvm-cpu", _CPU + ("--iree-llvmcpu-target-triple=aarch64-none-linux-gnu",), False),
    "iree-vulkan": ("vulkan-spirv", _OPTIMIZE, False),
}


def compile_vmfb(mlir: str, target: str) -> bytes:
    """Compile a StableHLO module (text) for one IREE target.

    Args:
      mlir: the module, e.g. `jax.export.Exported.mlir_module()` for static shapes.
      target: a key of IREE_TARGETS.

    Returns:
      The `.vmfb` bytes.
    """
    import iree.compiler as ireec

    backend, flags, _ = IREE_TARGETS[target]
    try:
        return ireec.compile_str(mlir, target_backends=[backend], input_type="stablehlo",
                                 extra_args=list(flags))
    except ireec.CompilerToolError as e:
        lines = [ln for ln in str(e).splitlines() if "error:" in ln]
        reason = lines[0].strip() if lines else str(e).splitlines()[0]
        raise RuntimeError(f"export: IREE could not compile the program for target {target!r}: {reason}") from e


class IreeModule:
    """A host `.vmfb` loaded into the IREE runtime ("local-task" driver).

    Parameters are uploaded once; a call passes them by reference.
    """

    def __init__(self, vmfb: bytes, params: Sequence[np.ndarray], *, driver: str = "local-task"):
        import iree.runtime as ireert

        self._config = ireert.Config(driver)
        self._context = ireert.SystemContext(config=self._config)
        module = ireert.VmModule.copy_buffer(self._config.vm_instance, vmfb)
        self._context.add_vm_module(module)
        self._main = self._context.modules[module.name]["main"]
        device = self._config.device
        self._params = [ireert.asdevicearray(device, np.asarray(p, order="C")) for p in params]  # keeps 0-d

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        out = self._main(*self._params, *[np.asarray(a, order="C") for a in arrays])
        outs = out if isinstance(out, (list, tuple)) else [out]
        # to_host() may view a runtime buffer that the next call reuses: copy.
        return [np.array(o.to_host(), copy=True) for o in outs]
