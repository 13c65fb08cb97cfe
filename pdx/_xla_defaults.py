"""XLA:CPU flags pdx sets by default (before JAX starts its backends).

Measured on XLA:CPU (benchmarks/train_step.py, benchmarks/RESULTS.md):

- `--xla_cpu_scheduler_type=CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED`: GPT-mini
  training step 0.92x of XLA's default scheduler, same losses bit for bit.
- `--xla_cpu_experimental_ynn_fusion_type=-individual_convolution,+eltwise`:
  convolutions back on Eigen instead of YNNPACK's slower path; ResNet-18
  training step 0.79-0.82x of the default.

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
    "--xla_cpu_scheduler_type": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED",
    "--xla_cpu_experimental_ynn_fusion_type": "-individual_convolution,+eltwise",
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
