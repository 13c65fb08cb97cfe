"""pdx.optimizer: Paddle-named optimizers and learning-rate schedulers on optax."""

from pdx.optimizer import lr
from pdx.optimizer._optimizer import Optimizer
from pdx.optimizer._optimizers import SGD, Adagrad, Adam, AdamW, Adamax, Lamb, Momentum, RMSProp

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Adamax", "Lamb", "Momentum", "Optimizer", "RMSProp", "lr"]
