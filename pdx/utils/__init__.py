"""pdx.utils: Paddle's small utilities (try_import, run_check, require_version, unique_name, dlpack,
nested-structure helpers).

Example:
  >>> from pdx.utils import try_import, unique_name
  >>> try_import("math").floor(2.5)
  2
"""

from pdx.utils import dlpack, unique_name
from pdx.utils._utils import (
    deprecated,
    flatten,
    map_structure,
    pack_sequence_as,
    require_version,
    run_check,
    try_import,
)

__all__ = [
    "deprecated",
    "dlpack",
    "flatten",
    "map_structure",
    "pack_sequence_as",
    "require_version",
    "run_check",
    "try_import",
    "unique_name",
]
