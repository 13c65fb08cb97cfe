"""A dataset whose samples say which of some heavy modules are loaded where they are made."""

import json
import os
import sys

from pdx.io import Dataset
from pdx.vision import transforms  # noqa: F401  (what an image dataset's module imports; numpy only)

# Loaded by `import pdx` before its subpackages became lazy; a DataLoader
# worker runs numpy code and needs none of them.
NOT_IN_WORKERS = ("pdx.nn", "pdx.vision.models", "pdx.hapi", "pdx.optimizer", "pdx.sparse", "pdx.audio",
                  "pdx.checkpoint", "pdx.jit", "pdx.export", "jax.experimental.sparse", "IPython")


class ModulesLoaded(Dataset):
    """Sample i: JSON {"pid", "loaded": the names of NOT_IN_WORKERS in sys.modules}."""

    def __getitem__(self, idx):
        return json.dumps({"pid": os.getpid(), "loaded": [m for m in NOT_IN_WORKERS if m in sys.modules]})

    def __len__(self):
        return 4
