"""One validation step for every config pdx reads: typed fields with ranges, checked before anything is built.

A config (a Hugging Face `config.json`, the zoo's own `config.json`, a LoRA
`lora_config.json`, a config dataclass built in Python) is described by a
schema: field name -> `Field` (its kind, range, choices, whether None is
allowed). `check` validates a mapping against a schema and raises one typed
error, `ConfigError`, naming the file, the field, the bad value and what is
allowed. Cross-field rules (heads divide the width, ...) call `require`.

The schema is plain dataclass validation written here (no pydantic or
msgspec): the rules are few, the messages are ours, and this module imports
only the standard library and the floor's `pdx._safefile`, so every package
can use it. `safetensors_shapes` reads a weights file's header only, for
comparing a config's sizes with what is on disk before anything is built.

Kinds: "int" (an integer, never a bool, a float or a string), "float" (an
integer or real number, never a bool; finite), "bool", "str", "strs" (a list of
strings). Hard caps keep a config from asking for more than any real model
has (see `MAX_*`): a field beyond its cap is refused before any array
exists, so a config of `hidden_size = 10**12` fails in microseconds.

Example:
    >>> schema = {"hidden_size": Field("int", lo=1, hi=MAX_HIDDEN)}
    >>> check({"hidden_size": 64}, schema, file="config.json")
    >>> check({"hidden_size": "64"}, schema, file="config.json")
    Traceback (most recent call last):
    ...
    pdx._config_check.ConfigError: config.json: hidden_size='64' is a str; hidden_size must be an int in [1, 65536]
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

from pdx._safefile import load_json, open_regular

__all__ = ["ConfigError", "Field", "check", "require", "fail", "safetensors_shapes", "MAX_HIDDEN", "MAX_INTERMEDIATE", "MAX_LAYERS",
           "MAX_HEADS", "MAX_VOCAB", "MAX_POSITIONS", "MAX_EXPERTS", "MAX_LORA_RANK", "MAX_CLASSES"]

# Hard caps, each above every released model of its kind (LLaMA-3.1-405B: hidden 16384, 126 layers,
# 128 heads, intermediate 53248, vocab 128256; Qwen2.5-1M: 1,010,000 positions).
MAX_HIDDEN = 1 << 16
MAX_INTERMEDIATE = 1 << 20
MAX_LAYERS = 1024
MAX_HEADS = 1024
MAX_VOCAB = 1 << 22
MAX_POSITIONS = 1 << 24
MAX_EXPERTS = 1024
MAX_LORA_RANK = 1 << 14
MAX_CLASSES = 1 << 16
MAX_HEADER_BYTES = 100 << 20  # the safetensors spec's limit
MAX_STR = 4096
MAX_ITEMS = 4096

_KINDS = ("int", "float", "bool", "str", "strs")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class ConfigError(ValueError):
    """A config field with a bad type, value or combination; names the file, field, value and what is allowed.

    Attributes: file, field, value, allowed (each may be None); `str(err)` is the full message.
    """

    def __init__(self, field: str | None, value: Any = None, allowed: str | None = None, *, file: str | None = None,
                 why: str | None = None):
        super().__init__(field, value, allowed)
        self.field, self.value, self.allowed, self.file, self.why = field, value, allowed, file, why

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        what = f"{self.field}={_show(self.value)}" if self.field is not None else "the config"
        why = f" {self.why}" if self.why else (" is not allowed" if self.allowed else "")
        allowed = f"; {self.field or 'it'} must be {self.allowed}" if self.allowed else ""
        return f"{where}{what}{why}{allowed}"

    def __reduce__(self):
        return (_rebuild, (self.field, self.value, self.allowed, self.file, self.why))


def _rebuild(field, value, allowed, file, why):
    return ConfigError(field, value, allowed, file=file, why=why)


def fail(field: str | None, value: Any, allowed: str | None, *, file: str | None = None, why: str | None = None):
    """Raise `ConfigError` (a helper so rules read as one line)."""
    raise ConfigError(field, value, allowed, file=file, why=why)


def require(ok: bool, field: str, value: Any, why: str, *, file: str | None = None, allowed: str | None = None):
    """A cross-field rule: raise `ConfigError` unless `ok` ("hidden_size=30 must be divisible by ...")."""
    if not ok:
        fail(field, value, allowed, file=file, why=why)


@dataclasses.dataclass(frozen=True)
class Field:
    """One config field: its kind, inclusive range [lo, hi] (lo exclusive with `open_lo`), choices, optional.

    `optional`: None is allowed. `required`: `check` fails when the field is absent.
    """

    kind: str
    lo: float | None = None
    hi: float | None = None
    open_lo: bool = False
    choices: tuple | None = None
    optional: bool = False
    required: bool = False

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"Field: kind={self.kind!r} must be one of {_KINDS}")

    def allowed(self) -> str:
        none = " (or null)" if self.optional else ""
        if self.choices is not None:
            return f"one of {list(self.choices)}{none}"
        if self.kind in ("int", "float"):
            article = "an int" if self.kind == "int" else "a finite number"
            if self.lo is None and self.hi is None:
                return f"{article}{none}"
            left = "(" if self.open_lo else "["
            lo = "-inf" if self.lo is None else _num(self.lo)
            hi = "inf" if self.hi is None else _num(self.hi)
            return f"{article} in {left}{lo}, {hi}]{none}"
        return {"bool": "true or false", "str": f"a string of at most {MAX_STR} characters",
                "strs": f"a list of at most {MAX_ITEMS} strings"}[self.kind] + none

    def check(self, name: str, value: Any, file: str | None) -> None:
        if value is None:
            if not self.optional:
                fail(name, value, self.allowed(), file=file, why="is null")
            return
        kind = self.kind
        if kind == "bool":
            if not isinstance(value, bool):
                fail(name, value, self.allowed(), file=file, why=f"is a {type(value).__name__}")
        elif kind == "int":
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                fail(name, value, self.allowed(), file=file, why=f"is a {type(value).__name__}")
        elif kind == "float":
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                fail(name, value, self.allowed(), file=file, why=f"is a {type(value).__name__}")
            if not math.isfinite(value):
                fail(name, value, self.allowed(), file=file, why="is not finite")
        elif kind == "str":
            if not isinstance(value, str):
                fail(name, value, self.allowed(), file=file, why=f"is a {type(value).__name__}")
            if len(value) > MAX_STR:
                fail(name, value, self.allowed(), file=file, why=f"has {len(value)} characters")
        else:  # strs
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and len(v) <= MAX_STR
                                                                for v in value):
                fail(name, value, self.allowed(), file=file, why="is not a list of strings")
            if len(value) > MAX_ITEMS:
                fail(name, value, self.allowed(), file=file, why=f"has {len(value)} items")
        if self.choices is not None:
            hashable = isinstance(value, (str, int, float, bool))
            if not hashable or value not in self.choices:
                fail(name, value, self.allowed(), file=file)
            return
        if kind in ("int", "float"):
            if self.lo is not None and (value <= self.lo if self.open_lo else value < self.lo):
                fail(name, value, self.allowed(), file=file, why="is out of range")
            if self.hi is not None and value > self.hi:
                fail(name, value, self.allowed(), file=file, why="is out of range")


def _num(x: float) -> str:
    if isinstance(x, int) or float(x).is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


def check(values: Mapping, schema: Mapping[str, Field], *, file: str | None = None) -> None:
    """Validate the fields of `values` that `schema` names (absent fields pass unless `required`).

    Raises:
      ConfigError: the first bad field, with its file, value and allowed range.
    """
    if not isinstance(values, Mapping):
        fail(None, values, "a JSON object", file=file, why=f"is a {type(values).__name__}")
    for name, spec in schema.items():
        if name not in values:
            if spec.required:
                fail(name, None, spec.allowed(), file=file, why="is missing")
            continue
        spec.check(name, values[name], file)


def safetensors_shapes(path, *, root=None, error=None) -> dict:
    """Tensor name -> shape tuple from a safetensors file's header, reading only the header.

    The sizes a config implies are compared with these before any weight is
    created. `root`: symlinks must resolve inside it (`pdx._safefile`). The
    full reader (`pdx.checkpoint.load_safetensors`) checks the rest.
    `error(message)` builds the exception raised for a bad header (default: a ConfigError naming the file).
    """
    if error is None:
        error = lambda message: ConfigError(None, file=str(path), why=message)  # noqa: E731
    fd, size = open_regular(path, what="weights file", root=root, error=error)
    try:
        head = os.pread(fd, 8, 0)
        length = int.from_bytes(head, "little") if len(head) == 8 else -1
        if length < 2 or length > min(MAX_HEADER_BYTES, size - 8):
            raise error(f"{str(path)!r} declares a {length}-byte safetensors header in a {size}-byte file: "
                        "not a safetensors file")
        header = load_json(os.pread(fd, length, 8), what=f"safetensors header of {str(path)!r}", max_depth=3,
                           error=error)
    finally:
        os.close(fd)
    if not isinstance(header, dict):
        raise error(f"{str(path)!r}: the safetensors header is not a JSON object")
    shapes = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                  for d in shape):
            raise error(f"{str(path)!r}: tensor {name!r} has no valid shape in the header")
        shapes[name] = tuple(shape)
    return shapes
