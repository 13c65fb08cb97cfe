"""Which collectives a compiled step runs: parsed from XLA's optimized HLO."""

from __future__ import annotations

import dataclasses
import math
import re

_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16,
                "f8e4m3fn": 1, "f8e5m2": 1}
# "%name = <result type> <op>(" where the result type is one array type or a tuple of them.
_INSTRUCTION = re.compile(r"=\s*(?P<type>\([^=]*?\)|[a-z0-9]+\[[0-9,]*\](?:\{[^}]*\})?)\s+"
                          r"(?P<op>" + "|".join(_KINDS) + r")(?P<start>-start)?\(")
_ARRAY = re.compile(r"([a-z0-9]+)\[([0-9,]*)\]")


_COMMENT = re.compile(r"/\*.*?\*/")


@dataclasses.dataclass(frozen=True)
class Collective:
    """One collective instruction of a compiled program (XLA may combine
    several arrays into one instruction: `shapes` lists them all)."""

    kind: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    bytes: int


def _arrays(type_text: str) -> list[tuple[str, tuple[int, ...]]]:
    return [(dt, tuple(int(d) for d in dims.split(",") if d)) for dt, dims in _ARRAY.findall(type_text)]


def collectives(compiled) -> list[Collective]:
    """The collectives in a compiled program (or its HLO text), in program order.

    `compiled` is what `jax.jit(f).lower(...).compile()` (or pdx.jit's
    `lower(...).compile()`) returns, or the text of `compiled.as_text()`.
    The size is the result's: for an all-gather the gathered array, for a
    reduce-scatter the scattered shard.

    Example:
      >>> import jax, jax.numpy as jnp, pdx
      >>> f = jax.jit(lambda x: x.sum())
      >>> pdx.parallel.collectives(f.lower(jnp.ones(4)).compile())
      []
    """
    text = compiled if isinstance(compiled, str) else compiled.as_text()
    found = []
    for line in text.splitlines():
        m = _INSTRUCTION.search(_COMMENT.sub("", line))
        if not m:
            continue
        arrays = _arrays(m.group("type"))
        if m.group("start") and m.group("op") != "all-reduce" and len(arrays) > 1:
            arrays = arrays[-1:]  # async start ops return (operand, result, ...): keep the result
        size = sum(math.prod(shape) * _DTYPE_BYTES.get(dtype, 4) for dtype, shape in arrays)
        found.append(Collective(m.group("op"), tuple(s for _, s in arrays), tuple(d for d, _ in arrays), size))
    return found


def collective_summary(compiled) -> dict[str, dict[str, int]]:
    """Per kind: {"count": n, "bytes": total} over `collectives(compiled)`.

    Example: `pdx.parallel.collective_summary(step.lower(x, y).compile())`
    -> `{"all-reduce": {"count": 3, "bytes": 4108}}`.
    """
    out: dict[str, dict[str, int]] = {}
    for c in collectives(compiled):
        entry = out.setdefault(c.kind, {"count": 0, "bytes": 0})
        entry["count"] += 1
        entry["bytes"] += c.bytes
    return out
