"""pdx.utils.unique_name: Paddle's name generator (`generate('fc')` -> 'fc_0', 'fc_1', ...).

Example:
  >>> from pdx.utils import unique_name
  >>> with unique_name.guard():
  ...     unique_name.generate("fc"), unique_name.generate("fc")
  ('fc_0', 'fc_1')
"""

from __future__ import annotations

import collections
import contextlib

__all__ = ["UniqueNameGenerator", "generate", "generate_with_ignorable_key", "guard", "switch"]


class UniqueNameGenerator:
    """Counts names per key and hands out `key_N` (with an optional prefix)."""

    def __init__(self, prefix: str | None = None):
        self.prefix = prefix or ""
        self.ids = collections.defaultdict(int)

    def __call__(self, key: str) -> str:
        n = self.ids[key]
        self.ids[key] += 1
        return f"{self.prefix}{key}_{n}"


_state = {"generator": UniqueNameGenerator()}


def generate(key):
    """A new unique name `key_N`.

    Args:
      key: the name stem.

    Returns:
      A string.

    Example:
      >>> from pdx.utils import unique_name
      >>> unique_name.generate("w").startswith("w_")
      True
    """
    return _state["generator"](str(key))


def generate_with_ignorable_key(key):
    """Same as `generate` (Paddle's variant for names that may be dropped).

    Args:
      key: the name stem.

    Returns:
      A string.

    Example:
      >>> from pdx.utils import unique_name
      >>> unique_name.generate_with_ignorable_key("tmp").startswith("tmp_")
      True
    """
    return generate(key)


def switch(new_generator=None):
    """Install a new generator (fresh counters when None) and return the old one.

    Args:
      new_generator: a `UniqueNameGenerator` or None.

    Returns:
      The previous generator.

    Example:
      >>> from pdx.utils import unique_name
      >>> old = unique_name.switch()
      >>> _ = unique_name.switch(old)
    """
    old = _state["generator"]
    _state["generator"] = new_generator or UniqueNameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Use fresh counters (or `new_generator`, or a prefix string) inside a `with` block.

    Args:
      new_generator: None, a prefix string, or a `UniqueNameGenerator`.

    Returns:
      A context manager.

    Example:
      >>> from pdx.utils import unique_name
      >>> with unique_name.guard("block_"):
      ...     unique_name.generate("fc")
      'block_fc_0'
    """
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)
