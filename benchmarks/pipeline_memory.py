"""Pipeline schedules' activation memory: 1F1B vs GPipe as microbatches grow (fixed microbatch size).

    python benchmarks/pipeline_memory.py

dp2 x pp4 on 8 host devices; 8 identical residual blocks (hidden 64) and a
classifier head; 8 rows per microbatch. Prints XLA's temp memory of the
compiled value_and_grad per schedule and the idle share of each schedule.
"""

import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "parallel"))

import jax  # noqa: E402

import pdx  # noqa: E402
from pdx import parallel  # noqa: E402
from test_pipeline_1f1b import Net, data  # noqa: E402


def main() -> int:
    p = 4
    print("| microbatches | 1F1B temp KiB | GPipe temp KiB | 1F1B idle slots | GPipe bubble |")
    print("|---:|---:|---:|---:|---:|")
    for m in (4, 8, 16, 32):
        config = parallel.HybridConfig(dp_degree=2, pp_degree=p, accumulate_steps=m)
        mesh = config.mesh()
        net = parallel.shard(Net(), config, mesh=mesh)
        x, y = data(m)
        xs = jax.device_put(x, parallel.named_sharding(("batch", None), x.shape, config, mesh))
        ys = jax.device_put(y, parallel.named_sharding(("batch",), y.shape, config, mesh))
        temp = {}
        for schedule in ("1f1b", "gpipe"):
            step = pdx.jit(lambda n, a, b, s=schedule: pdx.value_and_grad(lambda q: q.loss(a, b, s, p, m))(n))
            with parallel.use_mesh(config, mesh):
                temp[schedule] = step.lower(net, xs, ys).compile().memory_analysis().temp_size_in_bytes / 1024
        print(f"| {m} | {temp['1f1b']:.1f} | {temp['gpipe']:.1f} | {(2 * p - 2) / (m + 2 * p - 2):.3f} | "
              f"{parallel.bubble_fraction(p, m):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
