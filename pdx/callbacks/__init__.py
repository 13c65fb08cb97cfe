"""pdx.callbacks: hooks for `pdx.Model.fit/evaluate/predict` (Paddle's `paddle.callbacks`).

Progress bars, checkpoints, early stopping, learning-rate scheduling,
TensorBoard (`VisualDL`) and CSV / JSON-lines logs.
"""

from pdx.callbacks._callbacks import CSVLogger
from pdx.callbacks._callbacks import Callback
from pdx.callbacks._callbacks import EarlyStopping
from pdx.callbacks._callbacks import LRScheduler
from pdx.callbacks._callbacks import ModelCheckpoint
from pdx.callbacks._callbacks import ProgBarLogger
from pdx.callbacks._callbacks import ReduceLROnPlateau
from pdx.callbacks._callbacks import VisualDL
from pdx.callbacks._callbacks import config_callbacks

__all__ = ["CSVLogger", "Callback", "EarlyStopping", "LRScheduler", "ModelCheckpoint", "ProgBarLogger",
           "ReduceLROnPlateau", "VisualDL", "config_callbacks"]
