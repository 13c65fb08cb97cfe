"""The `pdx` command.

    pdx --version          print the pdx version
    pdx env                versions of pdx and its engines, and the visible devices
    pdx ckpt ...           inspect, verify, convert and prune checkpoints
    pdx models ...         the model zoo: names, families, parameter counts, export inputs
    pdx export ...         export a model to a StableHLO artifact (XLA, IREE targets)
    pdx serve ...          serve an exported artifact over HTTP
    pdx launch ...         start a multi-process job on jax.distributed
    pdx kernels ...        build the oneDNN CPU kernels ahead of time, show their state
    pdx coverage ...       Paddle API coverage: each paddle name implemented / alias / different / missing

Each subcommand lives in the subpackage it belongs to, as a module with
`configure(parser)`: it adds its arguments (or its own sub-subcommands) and
sets `func`, which takes the parsed namespace and returns the exit code.
Only the module of the command being run is imported, so `pdx --version`
stays fast. Exit codes: 0 ok, 1 the command ran and found a failure,
2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import sys

__all__ = ["main"]

# name -> (module with configure(parser), one-line help)
_COMMANDS = {
    "env": ("pdx.cli", "show versions and devices"),
    "ckpt": ("pdx.checkpoint._cli", "list, inspect, verify, convert, reshard, diff, average, prune checkpoints"),
    "models": ("pdx.models._cli", "list the model zoo: names, families, parameter counts, export inputs"),
    "export": ("pdx.export._cli", "export a model to a StableHLO artifact"),
    "serve": ("pdx.export._serve_cli", "serve an exported artifact over HTTP"),
    "launch": ("pdx.parallel._launch", "start N processes of a script on jax.distributed"),
    "text": ("pdx.text._cli", "train a BPE tokenizer, tokenize a corpus into a memory-mapped token file"),
    "kernels": ("pdx.kernels._cli", "build the oneDNN CPU kernels ahead of time; show their state"),
    "coverage": ("pdx._coverage", "which names of the installed paddle's API pdx has (implemented/alias/different/missing)"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    """`pdx env`: no arguments."""
    parser.set_defaults(func=_env)


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


def _available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="pdx", description="pdx: Paddle-style deep learning on JAX/XLA")
    parser.add_argument("--version", action="version",
                        version=f"pdx {importlib.metadata.version('pdx')}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in _COMMANDS.items():
        if not _available(module):
            continue
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).configure(command_parser)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if not hasattr(args, "func"):  # a command group given without its subcommand
        sub.choices[args.command].print_help()
        return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
