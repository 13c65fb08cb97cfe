"""`pdx kernels`: the optional CPU backend's library, built ahead of time.

    pdx kernels build     compile the oneDNN handlers now (once per machine; cached)
    pdx kernels info      where the library is, its ABI, why it is off if it is

`import pdx.kernels` builds a missing library itself (with a one-line notice);
`pdx kernels build` does the same from an install script or a Dockerfile, so
the first training step of a job never waits for a compiler. Exit codes: 0 the
library is ready, 1 it cannot be built here (the reason is printed).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["configure"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the `pdx kernels` sub-subcommands to `parser`."""
    sub = parser.add_subparsers(dest="kernels_command", metavar="SUBCOMMAND")
    build = sub.add_parser("build", help="compile the oneDNN CPU kernels now (cached per machine)")
    build.set_defaults(func=_build)
    info = sub.add_parser("info", help="the oneDNN library's path and ABI, or why it is off")
    info.set_defaults(func=_info)


def _build(args: argparse.Namespace) -> int:
    from pdx.kernels.onednn import _build as onednn

    built = onednn.build(quiet=False)
    if isinstance(built, str):
        print(f"pdx kernels build: the oneDNN CPU kernels cannot be built here: {built}", file=sys.stderr)
        return 1
    print(built)
    return 0


def _info(args: argparse.Namespace) -> int:
    from pdx.kernels import onednn

    reason = onednn.unavailable_reason()
    built = onednn.build()
    print(f"onednn     {'ready' if reason is None else 'off: ' + reason}")
    print(f"library    {built if reason is None else '-'}")
    print(f"abi        {onednn.ABI}")
    print(f"bfloat16   {'yes' if onednn.bf16_capable() else 'no (this CPU has no AVX-512)'}")
    return 0 if reason is None else 1
