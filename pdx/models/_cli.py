"""`pdx models`: the zoo as a table.

    pdx models                      every model: name, family, task, parameters, inputs
    pdx models --family bert        one family
    pdx models --json models.json   also write the rows (with configs) as JSON
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add `pdx models`' arguments and set `func`."""
    parser.add_argument("--family", help="only this family (e.g. llama, bert, resnet)")
    parser.add_argument("--json", metavar="FILE", help="write the rows, configs included, to FILE")
    parser.set_defaults(func=run)


def _count(n: int) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def run(args: argparse.Namespace) -> int:
    """Print the zoo; exit 2 on an unknown family."""
    from pdx import models

    try:
        rows = models.list(args.family)
    except ValueError as e:
        print(f"pdx models: error: {e}", file=sys.stderr)
        return 2
    print("| name | family | task | parameters | inputs |")
    print("|---|---|---|--:|---|")
    for row in rows:
        print(f"| {row['name']} | {row['family']} | {row['task']} | {_count(row['params'])} | "
              f"{' '.join(row['inputs'])} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0
