"""Unstructured magnitude pruning with masks kept through training (PaddleSlim's UnstructuredPruner names)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

__all__ = ["GMPUnstructuredPruner", "UnstructuredPruner"]


def _default_skip(name: str, param) -> bool:
    """Biases and norm scales (1-D) stay dense, as PaddleSlim's default."""
    return param.ndim < 2


class UnstructuredPruner:
    """Zero the smallest-magnitude weights and keep them zero.

    Call `step()` after each optimizer step: it recomputes the masks (by
    `ratio` of the prunable weights, globally or per parameter with
    `local_sparsity`, or by absolute `threshold`) and multiplies them in, so
    pruned weights stay zero while the others train.

    Args:
      model: a pdx Layer.
      mode: "ratio" or "threshold".
      threshold: |w| below it is pruned (mode "threshold").
      ratio: fraction of prunable weights set to zero (mode "ratio").
      prune_params_type: None (all prunable) or "conv1x1_only" (4-D weights with a 1x1 kernel).
      skip_params_func: (name, param) -> True to leave a parameter dense; default skips 1-D ones.
      local_sparsity: the ratio applies to each parameter instead of all of them together.

    Example:
      >>> import pdx
      >>> net = pdx.nn.Linear(8, 8)
      >>> pruner = UnstructuredPruner(net, ratio=0.5)
      >>> pruner.step()
      >>> pruner.sparsity()
      0.5
    """

    def __init__(self, model, mode: str = "ratio", threshold: float = 0.01, ratio: float = 0.55,
                 prune_params_type: str | None = None, skip_params_func=None, local_sparsity: bool = False):
        if mode not in ("ratio", "threshold"):
            raise ValueError(f"mode={mode!r} must be 'ratio' or 'threshold'")
        if not 0.0 <= ratio < 1.0:
            raise ValueError(f"ratio={ratio!r} must lie in [0, 1)")
        if prune_params_type not in (None, "conv1x1_only"):
            raise ValueError(f"prune_params_type={prune_params_type!r} must be None or 'conv1x1_only'")
        self.model, self.mode, self.threshold, self.ratio = model, mode, float(threshold), float(ratio)
        self.local_sparsity = local_sparsity
        skip = skip_params_func or _default_skip
        self._params = {}
        for name, p in model.named_parameters():
            value = p.get_value()
            if skip(name, value):
                continue
            if prune_params_type == "conv1x1_only" and not (value.ndim == 4 and value.shape[2:] == (1, 1)):
                continue
            self._params[name] = p
        if not self._params:
            raise ValueError(f"UnstructuredPruner: no prunable parameter in {type(model).__name__} "
                             f"(prune_params_type={prune_params_type!r})")
        self.masks = {name: jnp.ones(p.shape, bool) for name, p in self._params.items()}

    def _thresholds(self) -> dict:
        if self.mode == "threshold":
            return dict.fromkeys(self._params, self.threshold)
        if self.local_sparsity:
            return {n: float(np.quantile(np.abs(np.asarray(p.get_value())), self.ratio)) for n, p in self._params.items()}
        everything = np.concatenate([np.abs(np.asarray(p.get_value())).ravel() for p in self._params.values()])
        return dict.fromkeys(self._params, float(np.quantile(everything, self.ratio)) if self.ratio > 0 else -1.0)

    def update_masks(self) -> None:
        """Recompute the masks from the current weights (weights already pruned stay pruned)."""
        limits = self._thresholds()
        for name, p in self._params.items():
            self.masks[name] = self.masks[name] & (jnp.abs(p.get_value()) > limits[name])

    def update_params(self) -> None:
        """Multiply the masks into the weights."""
        for name, p in self._params.items():
            p.set_value(jnp.where(self.masks[name], p.get_value(), 0).astype(p.get_value().dtype))

    def step(self) -> None:
        self.update_masks()
        self.update_params()

    def sparsity(self) -> float:
        """Fraction of the prunable weights that are zero."""
        zeros = sum(int(jnp.sum(p.get_value() == 0)) for p in self._params.values())
        return zeros / sum(p.get_value().size for p in self._params.values())

    @staticmethod
    def total_sparse(model) -> float:
        """Fraction of all of the model's parameters that are zero (PaddleSlim's total_sparse)."""
        values = [p.get_value() for p in model.parameters()]
        return sum(int(jnp.sum(v == 0)) for v in values) / max(sum(v.size for v in values), 1)


class GMPUnstructuredPruner(UnstructuredPruner):
    """Gradual magnitude pruning: the ratio rises from `initial_ratio` to `ratio` on a cubic schedule.

    configs (PaddleSlim's keys): stable_iterations (dense first), pruning_iterations (length of the
    ramp), tunning_iterations (at the final ratio), pruning_steps (how many times the ratio rises
    during the ramp), initial_ratio, resume_iteration.
    """

    def __init__(self, model, ratio: float = 0.55, prune_params_type=None, skip_params_func=None,
                 local_sparsity: bool = False, configs: dict | None = None):
        super().__init__(model, "ratio", ratio=0.0, prune_params_type=prune_params_type,
                         skip_params_func=skip_params_func, local_sparsity=local_sparsity)
        c = {"stable_iterations": 0, "pruning_iterations": 1000, "tunning_iterations": 0, "pruning_steps": 10,
             "initial_ratio": 0.15, "resume_iteration": -1, **(configs or {})}
        if c["pruning_iterations"] <= 0 or c["pruning_steps"] <= 0:
            raise ValueError(f"configs: pruning_iterations and pruning_steps must be positive; got {c}")
        self.configs, self.target_ratio = c, float(ratio)
        self.cur_iteration = max(int(c["resume_iteration"]), 0)

    def ratio_at(self, iteration: int) -> float:
        """The scheduled ratio after `iteration` steps (0 while stable, cubic ramp, then the target)."""
        c = self.configs
        if iteration < c["stable_iterations"]:
            return 0.0
        done = iteration - c["stable_iterations"]
        if done >= c["pruning_iterations"]:
            return self.target_ratio
        every = max(c["pruning_iterations"] // c["pruning_steps"], 1)
        progress = (done // every) * every / c["pruning_iterations"]
        return self.target_ratio + (c["initial_ratio"] - self.target_ratio) * (1.0 - progress) ** 3

    def step(self) -> None:
        self.cur_iteration += 1
        ratio = self.ratio_at(self.cur_iteration)
        if ratio != self.ratio:
            self.ratio = ratio
            self.update_masks()
        self.update_params()
