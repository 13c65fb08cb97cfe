"""XLA:CPU flags pdx sets by default (before JAX starts its backends).

Measured (benchmarks/train_step.py, benchmarks/HISTORY.md, 2026-11-27, 2-core
Intel Xeon with AVX-512, jaxlib 0.10.2):

- `--xla_cpu_experimental_ynn_fusion_type=-individual_convolution`:
  convolutions on Eigen instead of YNNPACK's slower path for them. ResNet-18
  (CIFAR, batch 32) training step 1235 -> 778 ms (0.63x); GPT-mini unchanged
  (250 vs 251 ms). At batch 1 the trade reverses: a ResNet-18 224 px
  forward takes 100 ms on Eigen (one thread) against 51 ms with YNNPACK
  (`PDX_XLA_DEFAULTS=0`); at batch 8 Eigen wins again (189 vs 240 ms).

Measured and not set: adding `+eltwise` to that flag (GPT-mini 1.42x slower)
and `--xla_cpu_scheduler_type=CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED` (GPT-mini
1.05x slower on that Xeon, 0.92x on an AMD EPYC: no consistent win).

The flags only touch the CPU client (a GPU or TPU run is unaffected). They
are added to `XLA_FLAGS` when `pdx` is imported, unless

- the same flag is already in `XLA_FLAGS` (yours wins), or
- `PDX_XLA_DEFAULTS=0` is set in the environment (pdx adds nothing), or
- JAX's backends were already started before `import pdx` (flags are read
  once, at backend start; pdx then leaves them alone).

Example:
  >>> import os
  >>> os.environ.get("PDX_XLA_DEFAULTS", "1") in ("0", "1")
  True
"""

from __future__ import annotations

import os

__all__ = ["CPU_FLAGS", "apply"]

CPU_FLAGS: dict[str, str] = {
    "--xla_cpu_experimental_ynn_fusion_type": "-individual_convolution",
}


def apply(environ=os.environ) -> list[str]:
    """Add CPU_FLAGS to `environ["XLA_FLAGS"]` where allowed; returns the flags added."""
    if environ.get("PDX_XLA_DEFAULTS", "1").strip().lower() in ("0", "false", "no", "off"):
        return []
    try:
        from jax._src import xla_bridge
        if xla_bridge.backends_are_initialized():
            return []
    except (ImportError, AttributeError):  # a JAX without the query: flags still apply at first start
        pass
    current = environ.get("XLA_FLAGS", "")
    present = {tok.split("=", 1)[0] for tok in current.split()}
    added = [f"{name}={value}" for name, value in CPU_FLAGS.items() if name not in present]
    if added:
        environ["XLA_FLAGS"] = " ".join([current.strip(), *added]).strip()
    return added
