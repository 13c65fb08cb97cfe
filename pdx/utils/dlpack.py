"""pdx.utils.dlpack: zero-copy exchange with torch/paddle/numpy via DLPack (`to_dlpack`, `from_dlpack`).

Example:
  >>> import numpy as np
  >>> from pdx.utils import dlpack
  >>> dlpack.from_dlpack(np.arange(3)).tolist()
  [0, 1, 2]
"""

from pdx.ops import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
