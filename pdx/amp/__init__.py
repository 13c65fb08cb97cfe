"""pdx.amp: mixed precision (Paddle's `paddle.amp`).

`auto_cast` is a dtype policy that compute ops (linear, conv) consult;
`decorate` stores parameters in low precision for O2 with float32 master
weights in the optimizer; `GradScaler` is dynamic loss scaling whose state
(`LossScaleState`) lives in `pdx.TrainState`.
"""

from pdx.amp._policy import AmpPolicy
from pdx.amp._policy import amp_guard
from pdx.amp._policy import auto_cast
from pdx.amp._policy import current_policy
from pdx.amp._grad_scaler import AmpScaler
from pdx.amp._grad_scaler import GradScaler
from pdx.amp._grad_scaler import LossScaleState
from pdx.amp._decorate import decorate

__all__ = [
    "AmpPolicy",
    "AmpScaler",
    "GradScaler",
    "LossScaleState",
    "amp_guard",
    "auto_cast",
    "current_policy",
    "decorate",
]
