"""The `pdx` command.

    pdx --version          print the pdx version
    pdx env                versions of pdx and its engines, and the visible devices

Later subcommands (checkpoints, export, serving, launch) plug in as
`pdx <command> ...` through `_COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys

__all__ = ["main"]


def _env(args: argparse.Namespace) -> int:
    import jax

    import pdx

    print(f"pdx        {pdx.__version__}")
    for dist in ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "chex", "numpy"):
        try:
            print(f"{dist:<10} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            print(f"{dist:<10} (not installed)")
    print(f"backend    {jax.default_backend()}")
    for d in jax.devices():
        print(f"device     {d.id}: {d.device_kind} ({d.platform})")
    return 0


_COMMANDS = {
    "env": (_env, "show versions and devices"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pdx", description="pdx: Paddle-style deep learning on JAX/XLA")
    parser.add_argument("--version", action="version",
                        version=f"pdx {importlib.metadata.version('pdx')}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (fn, help_text) in _COMMANDS.items():
        sub.add_parser(name, help=help_text).set_defaults(func=fn)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
