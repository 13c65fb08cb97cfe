"""Paddle's launch flags mapped onto `pdx launch` (pdx.parallel's launcher).

    python -m pdx.distributed.launch --nproc_per_node 2 train.py --lr 0.1
    python -m pdx.distributed.launch --devices 0,1 train.py        # one process per listed device
    python -m pdx.distributed.launch --nnodes 2 --rank 0 --master 10.0.0.1:8090 train.py

`--rank` is the node's rank (Paddle's name for pdx's `--node_rank`); each
process gets PADDLE_TRAINER_ID / PADDLE_TRAINERS_NUM besides pdx's variables
and joins the job with `dist.init_parallel_env()` (or `pdx.parallel.init()`).
The launcher's own flags (`--timeout`, `--grace_s`, `--log_dir`, ...) and how it
ends a job (first failing rank, hung ranks, signals, its own death) are those of
`pdx launch`: see pdx/parallel/README.md.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["launch"]


def _parser() -> argparse.ArgumentParser:
    from pdx.parallel import configure_launch

    parser = argparse.ArgumentParser(prog="python -m pdx.distributed.launch")
    configure_launch(parser)
    parser.add_argument("--rank", dest="node_rank", type=int, help="this node's rank (Paddle's name for --node_rank)")
    for flag in ("--devices", "--gpus", "--xpus"):
        parser.add_argument(flag, dest="devices", default=None,
                            help="comma-separated device ids: one process per id (when --nproc_per_node is not given)")
    parser.add_argument("--job_id", default="default", help="accepted; logs go to --log_dir")
    parser.add_argument("--run_mode", default="collective", choices=["collective"],
                        help="only collective training (pdx has no parameter-server mode)")
    return parser


def launch(argv: list[str] | None = None) -> int:
    """Parse Paddle's launch flags and run the job; returns the exit code.

    Example: `python -m pdx.distributed.launch --nproc_per_node 2 train.py`.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.node_rank is None:
        args.node_rank = 0
    if args.devices is not None and "--nproc_per_node" not in argv:
        ids = [d for d in args.devices.split(",") if d.strip()]
        if not ids:
            print(f"pdx.distributed.launch: --devices must list device ids; got {args.devices!r}", file=sys.stderr)
            return 2
        args.nproc_per_node = len(ids)
    return args.func(args)
