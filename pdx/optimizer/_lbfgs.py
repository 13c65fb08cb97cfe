"""`LBFGS`: Paddle's limited-memory BFGS with its closure API.

L-BFGS re-evaluates the loss during a step (a line search, or `max_iter`
inner iterations), so `step(closure)` takes a function that computes the loss
and calls it as often as the algorithm needs, as Paddle's does. The algorithm
follows Paddle's (`paddle.optimizer.LBFGS`, itself PyTorch's): the same
two-loop recursion, first step size, strong-Wolfe line search with cubic
interpolation and stopping rules, in the same float32/float64 mix, so the
iterates agree with Paddle's.

The one difference is where gradients come from: pdx has no
`loss.backward()`, so the closure only returns the loss and LBFGS
differentiates it with respect to the optimizer's parameters itself (drop
`opt.clear_grad()` / `loss.backward()` from a Paddle closure, or return
`(loss, grads)` with grads from `pdx.value_and_grad`). A step runs eagerly:
its control flow depends on loss values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from pdx import _nnx
from pdx.optimizer._optimizer import Optimizer

__all__ = ["LBFGS"]

_NO_TRANSFORMATION = (
    "LBFGS has no optax transformation: each step re-evaluates the loss (line search, inner "
    "iterations), so it needs the closure. Call opt.step(closure) eagerly; for a compiled "
    "quasi-Newton step use optax.lbfgs() with optax.value_and_grad_from_state."
)


def _dot(x, y):
    return (x * y).sum(axis=-1)


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimum of the cubic through (x1, f1, g1), (x2, f2, g2), within bounds."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = jnp.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, alpha, d, loss, grad, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search for a step satisfying the strong Wolfe conditions (bracketing, then zoom).

    Returns (loss, grad, alpha, evaluations) at the accepted step.
    """
    d_norm = jnp.abs(d).max()
    loss_new, grad_new = obj_func(alpha, d)
    ls_func_evals = 1
    gtd_new = _dot(grad_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, loss, grad, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if loss_new > (loss + c1 * alpha * gtd) or (ls_iter > 1 and loss_new >= f_prev):
            bracket, bracket_f = [t_prev, alpha], [f_prev, loss_new]
            bracket_g, bracket_gtd = [g_prev, grad_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [alpha], [loss_new], [grad_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, alpha], [f_prev, loss_new]
            bracket_g, bracket_gtd = [g_prev, grad_new], [gtd_prev, gtd_new]
            break
        min_step = alpha + 0.01 * (alpha - t_prev)
        max_step = alpha * 10
        tmp = alpha
        alpha = _cubic_interpolate(t_prev, f_prev, gtd_prev, alpha, loss_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, loss_new, grad_new, gtd_new
        loss_new, grad_new = obj_func(alpha, d)
        ls_func_evals += 1
        gtd_new = _dot(grad_new, d)
        ls_iter += 1

    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, alpha], [loss, loss_new], [grad, grad_new]

    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        alpha = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # an interpolant close to the bracket's ends makes little progress: move it 10% inside
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - alpha, alpha - min(bracket)) < eps:
            if insuf_progress or alpha >= max(bracket) or alpha <= min(bracket):
                if abs(alpha - max(bracket)) < abs(alpha - min(bracket)):
                    alpha = max(bracket) - eps
                else:
                    alpha = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        loss_new, grad_new = obj_func(alpha, d)
        ls_func_evals += 1
        gtd_new = _dot(grad_new, d)
        ls_iter += 1
        if loss_new > (loss + c1 * alpha * gtd) or loss_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = alpha, loss_new
            bracket_g[high_pos], bracket_gtd[high_pos] = grad_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = alpha, loss_new
            bracket_g[low_pos], bracket_gtd[low_pos] = grad_new, gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    """L-BFGS (Paddle's `paddle.optimizer.LBFGS`): a quasi-Newton method that
    keeps the last `history_size` steps and gradient changes to approximate
    the inverse Hessian.

    `step(closure)` runs up to `max_iter` iterations (at most `max_eval`
    loss evaluations) and returns the loss the closure gave first. The
    closure computes the loss from the current parameters; LBFGS takes its
    gradient with respect to them (see the module docs). As in Paddle,
    `weight_decay` and `grad_clip` are accepted and play no part in the step.

    Args:
      learning_rate: the step size (scales the first step and each line search's first trial).
      max_iter: iterations per `step`.
      max_eval: loss evaluations per `step`; default `max_iter * 5 // 4`.
      tolerance_grad: stop when the largest gradient entry is at most this.
      tolerance_change: stop when the step or the loss change is below this.
      history_size: how many updates the inverse-Hessian approximation keeps.
      line_search_fn: None (fixed step `learning_rate`) or `'strong_wolfe'`.
      parameters: a Layer, `layer.parameters()` or one parameter group.
      weight_decay, grad_clip: accepted for compatibility (unused, as in Paddle).
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([2], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.LBFGS(learning_rate=1.0, line_search_fn="strong_wolfe", parameters=net)
      >>> def closure():
      ...     return ((net.w - jnp.array([1.0, -2.0])) ** 2).sum()
      >>> _ = opt.step(closure)
      >>> [round(v, 4) for v in net.w[...].tolist()]
      [1.0, -2.0]
    """

    def __init__(self, learning_rate: float = 1.0, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-07, tolerance_change: float = 1e-09, history_size: int = 100,
                 line_search_fn: str | None = None, parameters=None, weight_decay=None, grad_clip=None,
                 name: str | None = None) -> None:
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(f"LBFGS: learning_rate must be a float; got {learning_rate!r}")
        for arg, value in (("max_iter", max_iter), ("history_size", history_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"LBFGS: {arg} must be a positive int; got {arg}={value!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe'; got {line_search_fn!r}")
        self.learning_rate = float(learning_rate)
        self.max_iter = int(max_iter)
        self.max_eval = int(max_eval)
        self.tolerance_grad = float(tolerance_grad)
        self.tolerance_change = float(tolerance_change)
        self.history_size = int(history_size)
        self.line_search_fn = line_search_fn
        super().__init__(1.0, parameters, weight_decay, grad_clip, name)
        self._lbfgs = nnx.data({})  # Paddle's `state`: Python values and arrays between steps (eager only)
        self._closure_form = None  # "loss" or "loss_and_grads", learned from the closure's first result

    def _group_transform(self, group, learning_rate):
        return optax.identity()

    def transformation(self):
        """Not available: raises, naming `step(closure)` and `optax.lbfgs`."""
        raise NotImplementedError(_NO_TRANSFORMATION)

    # -- flat views of the parameters ------------------------------------------------------------------
    def _vars(self):
        return [var for _, var in self.trainable_parameters()]

    def _flat_params(self):
        return [var.get_value() for var in self._vars()]

    def _set_params(self, values) -> None:
        for var, value in zip(self._vars(), values):
            var.set_value(value)

    def _add_grad(self, alpha, direction) -> None:
        offset = 0
        for var in self._vars():
            value = var.get_value()
            size = value.size
            var.set_value(value + direction[offset:offset + size].reshape(value.shape) * alpha)
            offset += size

    def _evaluate(self, closure: Callable):
        """(loss as returned, loss as a float, flat gradient) at the current parameters."""
        variables = self._vars()
        values = [v.get_value() for v in variables]
        out = None
        if self._closure_form is None:
            # the closure's first call tells its form; a loss-only closure is then called again to differentiate
            out = closure()
            self._closure_form = "loss_and_grads" if isinstance(out, tuple) and len(out) == 2 else "loss"
        if self._closure_form == "loss_and_grads":
            loss, grads = out if out is not None else closure()
            matched = self._match_grads(grads) if isinstance(grads, Mapping) else dict(zip(self._trainable, grads))
            flat = [jnp.asarray(matched[n].get_value() if hasattr(matched[n], "get_value") else matched[n]).reshape(-1)
                    for n in self._trainable]
        else:
            def loss_of(vals):
                with _nnx.mutable_in_trace(variables, [], vals):
                    return jnp.asarray(closure()).reshape(())

            loss, flat = jax.value_and_grad(loss_of)(values)
            flat = [g.reshape(-1) for g in flat]
        flat_grad = jnp.concatenate(flat).astype(jnp.float32) if flat else jnp.zeros((0,), jnp.float32)
        return loss, float(np.asarray(loss)), flat_grad

    def step(self, closure=None):
        """Run up to `max_iter` L-BFGS iterations on the loss `closure()` computes.

        Args:
          closure: a function of no arguments returning the loss (a scalar),
            computed from this optimizer's parameters; or returning
            `(loss, grads)` with the gradients already taken. The form is
            learned from its first result (that one call of a loss-only
            closure is repeated to differentiate it); each later evaluation
            calls it once.

        Returns:
          The loss of the first evaluation (before this step moved the parameters).
        """
        if closure is None or not callable(closure):
            raise TypeError("LBFGS.step(closure): closure must be a function returning the loss, e.g.\n"
                            "    def closure():\n        return loss_fn(model(x), y)\n    opt.step(closure)")
        if any(isinstance(v, jax.core.Tracer) for v in self._flat_params()):
            raise RuntimeError("LBFGS.step runs eagerly (its control flow depends on loss values); "
                               "call it outside pdx.jit, or use optax.lbfgs() in a compiled step")
        lr, state = self.learning_rate, self._lbfgs
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss, loss, flat_grad = self._evaluate(closure)
        current_evals = 1
        state["func_evals"] += 1
        if jnp.abs(flat_grad).max() <= self.tolerance_grad:
            return orig_loss

        d, alpha = state.get("d"), state.get("alpha")
        old_yk, old_sk, ro = state.get("old_yk"), state.get("old_sk"), state.get("ro")
        h_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < self.max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_yk, old_sk, ro = [], [], []
                h_diag = jnp.asarray(1.0, jnp.float32)
            else:
                y = flat_grad - prev_flat_grad
                s = d * jnp.asarray(alpha, d.dtype)
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_yk) == self.history_size:
                        old_yk.pop(0)
                        old_sk.pop(0)
                        ro.pop(0)
                    old_yk.append(y)
                    old_sk.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / _dot(y, y)
                num_old = len(old_yk)
                al = [None] * num_old
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = _dot(old_sk[i], q) * ro[i]
                    q = q + old_yk[i] * (-al[i])
                d = r = q * h_diag
                for i in range(num_old):
                    be_i = _dot(old_yk[i], r) * ro[i]
                    r = r + old_sk[i] * (al[i] - be_i)
                d = r
            prev_flat_grad = flat_grad
            prev_loss = loss

            if state["n_iter"] == 1:
                alpha = min(1.0, 1.0 / jnp.abs(flat_grad).sum()) * lr
            else:
                alpha = lr
            gtd = _dot(flat_grad, d)
            if gtd > -self.tolerance_change:
                break

            ls_func_evals = 0
            if self.line_search_fn is not None:
                x_init = self._flat_params()

                def obj_func(step_size, direction):
                    self._add_grad(step_size, direction)
                    _, value, grad = self._evaluate(closure)
                    self._set_params(x_init)
                    return value, grad

                loss, flat_grad, alpha, ls_func_evals = _strong_wolfe(obj_func, alpha, d, loss, flat_grad, gtd)
                self._add_grad(alpha, d)
                opt_cond = jnp.abs(flat_grad).max() <= self.tolerance_grad
            else:
                self._add_grad(alpha, d)
                opt_cond = False
                if n_iter != self.max_iter:
                    _, loss, flat_grad = self._evaluate(closure)
                    opt_cond = jnp.abs(flat_grad).max() <= self.tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if opt_cond:
                break
            if jnp.abs(d * alpha).max() <= self.tolerance_change:
                break
            if abs(loss - prev_loss) < self.tolerance_change:
                break
            if current_evals >= self.max_eval:
                break
            if n_iter == self.max_iter:
                break

        state.update(d=d, alpha=alpha, old_yk=old_yk, old_sk=old_sk, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def state_dict(self) -> dict:
        """Paddle's layout: `{'state': {'func_evals': ..., 'n_iter': ..., 'd': ..., ...}}`."""
        return {"state": dict(self._lbfgs)}

    def set_state_dict(self, state_dict: Mapping) -> None:
        """Load a `state_dict()` (Paddle's `{'state': {...}}`)."""
        if not isinstance(state_dict, Mapping) or "state" not in state_dict:
            raise KeyError(f"LBFGS.set_state_dict: expected {{'state': {{...}}}} as state_dict() returns; got keys "
                           f"{sorted(state_dict) if isinstance(state_dict, Mapping) else type(state_dict).__name__}")
        self._lbfgs = nnx.data(dict(state_dict["state"]))

    set_dict = set_state_dict

    def minimize(self, loss=None, startup_program=None, parameters=None, no_grad_set=None):
        """Not available (as in Paddle): use `step(closure)`."""
        raise NotImplementedError("LBFGS does not minimize a loss tensor; pass a closure that computes it: opt.step(closure)")
