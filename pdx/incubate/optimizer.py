"""pdx.incubate.optimizer: Paddle's `paddle.incubate.optimizer` (LookAhead, ModelAverage, LBFGS) and the
pure optax transforms behind the wrappers (`lookahead`, `model_average`, `average_params`)."""

from pdx.incubate._optimizer import LookAhead
from pdx.incubate._optimizer import LookAheadState
from pdx.incubate._optimizer import ModelAverage
from pdx.incubate._optimizer import ModelAverageState
from pdx.incubate._optimizer import average_params
from pdx.incubate._optimizer import lookahead
from pdx.incubate._optimizer import model_average
from pdx.optimizer import LBFGS

__all__ = ["LBFGS", "LookAhead", "LookAheadState", "ModelAverage", "ModelAverageState", "average_params", "lookahead",
           "model_average"]
