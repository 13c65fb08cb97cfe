"""pdx.optimizer: Paddle-named optimizers and learning-rate schedulers on optax."""

from pdx.optimizer import lr
from pdx.optimizer._lbfgs import LBFGS
from pdx.optimizer._optimizer import Optimizer
from pdx.optimizer._optimizers import (ASGD, SGD, Adadelta, Adagrad, Adam, AdamW, Adamax, Lamb, Momentum, NAdam, RAdam,
                                       RMSProp, Rprop)
from pdx.optimizer._update import MasterWeightsState, apply_update, init_opt_state, master_weights

__all__ = ["ASGD", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Lamb", "MasterWeightsState", "Momentum",
           "NAdam", "Optimizer", "RAdam", "RMSProp", "Rprop", "apply_update", "init_opt_state", "lr", "master_weights"]
