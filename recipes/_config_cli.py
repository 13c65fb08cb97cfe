"""A recipe's command line from its config dataclass: one `--flag` per field.

    if __name__ == "__main__":
        from _config_cli import parse_config      # recipes/ is sys.path[0] when a recipe runs
        main(parse_config(DetectConfig, __doc__))

Every flag is spelled both ways, `--batch-size` and Paddle's `--batch_size`
(`flags(name)`, used by every recipe's parser). Types follow each field's default: bool takes true/false (1/0, yes/no),
a tuple takes comma-separated values of its first element's type.
"""

from __future__ import annotations

import argparse
import dataclasses


def _flag(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false; got {text!r}")


def _sequence(kind):
    def parse(text: str) -> tuple:
        try:
            return tuple(kind(v) for v in text.split(",") if v.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__}s such as 10,10; "
                                             f"got {text!r}") from None
    return parse


def _kind(default):
    if isinstance(default, bool):
        return _flag
    if isinstance(default, tuple):
        return _sequence(type(default[0]) if default else str)
    return type(default)


def flags(name: str) -> list[str]:
    """The option strings of a config field: `--batch-size` and `--batch_size` (one when equal)."""
    dashed, underscored = f"--{name.replace('_', '-')}", f"--{name}"
    return [dashed] if dashed == underscored else [dashed, underscored]


def parse_config(cls, doc: str | None = None, argv: list[str] | None = None):
    """Parse argv into `cls` (a dataclass whose fields all have defaults)."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    for field in dataclasses.fields(cls):
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
        parser.add_argument(*flags(field.name), dest=field.name, type=_kind(default), default=default,
                            help=f"default: {default}")
    return cls(**vars(parser.parse_args(argv)))
