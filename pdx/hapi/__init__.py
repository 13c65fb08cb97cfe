"""pdx.hapi: Paddle's high-level API — `Model` (fit/evaluate/predict over one
compiled step on a `pdx.TrainState`), `summary` and `flops`.

Callbacks live in `pdx.callbacks`, metrics in `pdx.metric`, mixed precision
in `pdx.amp`; `pdx.hapi.progressbar.ProgressBar` is Paddle's text bar. See README.md in this directory for how a batch flows.
"""

from pdx.hapi import progressbar
from pdx.hapi._model import Model
from pdx.hapi._save import ModelFileError
from pdx.hapi._summary import flops
from pdx.hapi._summary import summary

__all__ = ["Model", "ModelFileError", "flops", "progressbar", "summary"]
