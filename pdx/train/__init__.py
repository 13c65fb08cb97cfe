"""pdx.train: the one training engine — all training state as one pytree and the pure step over it.

    TrainState          params, buffers, opt_state, rng, step, lr, loss scale, non-finite counter
    make_step           loss_fn(model, batch) -> step(state, batch) -> (state, metrics):
                        NaN/Inf guard, gradient accumulation, AMP loss scaling, clipping
    make_train_step, make_eval_step, make_predict_step
                        the same step with Paddle's loss(*outputs, *labels) convention and
                        metrics (what pdx.Model runs), and the evaluation-mode steps
    state_shardings     the NamedSharding of every state leaf, from logical names + HybridConfig
    place_state         move a state onto those shardings
    jit_step            jax.jit(step, in_shardings=, out_shardings=, donate_argnums=0)
"""

from pdx.train._state import TrainState
from pdx.train._step import make_eval_step
from pdx.train._step import make_predict_step
from pdx.train._step import make_step
from pdx.train._step import make_train_step
from pdx.train._sharding import jit_step
from pdx.train._sharding import place_state
from pdx.train._sharding import state_shardings

__all__ = ["TrainState", "jit_step", "make_eval_step", "make_predict_step", "make_step", "make_train_step",
           "place_state", "state_shardings"]
