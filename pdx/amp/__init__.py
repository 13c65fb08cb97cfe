"""pdx.amp: mixed precision (Paddle's `paddle.amp`).

`auto_cast` is a dtype policy that compute ops (linear, conv) consult;
`decorate` stores parameters in low precision for O2 with float32 master
weights in the optimizer; `GradScaler` is dynamic loss scaling whose state
(`LossScaleState`) lives in `pdx.TrainState`.
"""

from pdx.amp._autocast import autocast
from pdx.amp._autocast import get_autocast_cpu_dtype
from pdx.amp._autocast import get_autocast_dtype
from pdx.amp._autocast import get_autocast_gpu_dtype
from pdx.amp._autocast import is_autocast_enabled
from pdx.amp._autocast import is_bfloat16_supported
from pdx.amp._autocast import is_float16_supported
from pdx._amp_policy import AmpPolicy
from pdx._amp_policy import amp_guard
from pdx._amp_policy import auto_cast
from pdx._amp_policy import current_policy
from pdx.amp._grad_scaler import AmpScaler
from pdx.amp._grad_scaler import GradScaler
from pdx.amp._grad_scaler import LossScaleState
from pdx.amp._decorate import decorate
from pdx.amp._decorate import fp32_param_names

__all__ = [
    "autocast",
    "get_autocast_cpu_dtype",
    "get_autocast_dtype",
    "get_autocast_gpu_dtype",
    "is_autocast_enabled",
    "is_bfloat16_supported",
    "is_float16_supported",
    "AmpPolicy",
    "AmpScaler",
    "GradScaler",
    "LossScaleState",
    "amp_guard",
    "auto_cast",
    "current_policy",
    "decorate",
    "fp32_param_names",
]
