"""The pure compiled steps behind `pdx.Model`.

`make_train_step` returns `(state, batch) -> (state, out)` over a
`pdx.TrainState`:

1. forward + loss under the AMP policy (O2: float32 master parameters are cast
   to the low-precision dtype for the forward pass, outside norm layers), the
   loss multiplied by the loss scale;
2. gradients, averaged over the micro-batches of a stacked batch (gradient
   accumulation: a leading axis of k micro-batches, one `lax.scan`);
3. unscale, then the guard: if the loss or any gradient is non-finite the
   update is skipped (params, opt_state, buffers and step are the old arrays,
   bitwise) and `nonfinite_steps` counts up; a finite step resets it;
4. the optimizer update (the optimizer's own gradient clipping included);
5. the loss-scale update and the metrics' device-side `compute`.

`make_eval_step` / `make_predict_step` run the evaluation-mode graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import optax

from pdx._amp_policy import AmpPolicy, use_policy

__all__ = ["make_train_step", "make_eval_step", "make_predict_step"]


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _cast_params(params: dict, policy: AmpPolicy | None, keep_fp32: frozenset) -> dict:
    if policy is None or policy.level != "O2":
        return params
    low = policy.compute_dtype
    return {n: v if n in keep_fp32 or not jnp.issubdtype(v.dtype, jnp.floating) else v.astype(low)
            for n, v in params.items()}


def _total_loss(loss) -> jax.Array:
    parts = _as_list(loss)
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    total = jnp.asarray(total)
    if total.ndim != 0:
        total = jnp.mean(total)  # Paddle's losses reduce by default; a per-sample loss is averaged
    return total.astype(jnp.float32)


def _metric_outputs(metrics: Sequence, outputs: list, labels: list) -> list:
    outs = []
    for m in metrics:
        res = m.compute(*(outputs + labels))
        outs.append(tuple(_as_list(res)))
    return outs


def make_train_step(loss_fn: Callable, metrics: Sequence = (), *, policy: AmpPolicy | None = None,
                    keep_fp32: frozenset = frozenset(), accumulate: bool = False) -> Callable:
    """Build the pure train step `(state, (inputs, labels)) -> (state, out)`.

    Args:
      loss_fn: called as `loss_fn(*outputs, *labels)` (Paddle's convention).
      metrics: `pdx.metric.Metric`s whose `compute` runs in the step.
      policy: an `AmpPolicy` or None.
      keep_fp32: parameter names O2 leaves in float32 (norm layers).
      accumulate: the batch has a leading axis of micro-batches; gradients are
        averaged over it and applied once.

    Returns:
      A function to `jax.jit`; `out` holds 'loss' (float32, unscaled),
      'grad_norm' (global norm of the unscaled gradients), 'finite',
      'nonfinite_steps', 'loss_scale' and 'metrics' (device results).
    """

    def forward(params, buffers, state, inputs, labels):
        model = state.merge(_cast_params(params, policy, keep_fp32), buffers, training=True)
        with use_policy(policy):
            outputs = _as_list(model(*inputs))
            loss = _total_loss(loss_fn(*(outputs + list(labels))))
        scaled = state.spec.scaler.scale(loss, state.loss_scale)
        return scaled, (loss, outputs, state.read_buffers(model))

    grad_fn = jax.value_and_grad(forward, has_aux=True)

    def step(state, batch):
        inputs, labels = batch
        if not accumulate:
            (_, (loss, outputs, buffers)), grads = grad_fn(state.params, state.buffers, state, inputs, labels)
        else:
            k = jax.tree.leaves((inputs, labels))[0].shape[0]

            def micro(carry, mb):
                gsum, lsum, bufs = carry
                (_, (l, outs, bufs)), g = grad_fn(state.params, bufs, state, mb[0], mb[1])
                return (jax.tree.map(jnp.add, gsum, g), lsum + l, bufs), outs

            zeros = jax.tree.map(jnp.zeros_like, state.params)
            (gsum, lsum, buffers), outs = jax.lax.scan(micro, (zeros, jnp.zeros((), jnp.float32), state.buffers),
                                                      (inputs, labels))
            grads = jax.tree.map(lambda g: g / k, gsum)
            loss = lsum / k
            outputs = [o.reshape((-1,) + o.shape[2:]) for o in outs]
            labels = [lb.reshape((-1,) + lb.shape[2:]) for lb in labels]
        scaler = state.spec.scaler
        grads = scaler.unscale(grads, state.loss_scale)
        grads = {n: g.astype(jnp.promote_types(state.params[n].dtype, jnp.float32)) for n, g in grads.items()}
        grads_finite = scaler.all_finite(grads)
        finite = jnp.isfinite(loss) & grads_finite
        updated = state.replace(buffers=buffers).apply_gradients(grads)

        def pick(new, old):
            return jax.tree.map(lambda a, b: jnp.where(finite, a, b), new, old)

        new_state = state.replace(
            params=pick(updated.params, state.params),
            opt_state=pick(updated.opt_state, state.opt_state),
            buffers=pick(updated.buffers, state.buffers),
            step=jnp.where(finite, updated.step, state.step),
            loss_scale=scaler.update(state.loss_scale, grads_finite),
            nonfinite_steps=jnp.where(finite, 0, state.nonfinite_steps + 1).astype(jnp.int32),
            rng=jax.random.key_data(jax.random.split(jax.random.wrap_key_data(state.rng))[0]),
        )
        out = {"loss": loss, "grad_norm": optax.global_norm(grads), "finite": finite,
               "nonfinite_steps": new_state.nonfinite_steps, "loss_scale": new_state.loss_scale.scale,
               "metrics": _metric_outputs(metrics, [jax.lax.stop_gradient(o) for o in outputs], list(labels))}
        return new_state, out

    return step


def make_eval_step(loss_fn: Callable | None, metrics: Sequence = (), *, policy: AmpPolicy | None = None,
                   keep_fp32: frozenset = frozenset()) -> Callable:
    """Build `(state, (inputs, labels)) -> out` in evaluation mode: 'loss' (when a
    loss and labels are given), 'metrics' and 'outputs'."""

    def step(state, batch):
        inputs, labels = batch
        model = state.merge(_cast_params(state.params, policy, keep_fp32), training=False)
        with use_policy(policy):
            outputs = _as_list(model(*inputs))
            out = {"outputs": outputs}
            if loss_fn is not None and labels:
                out["loss"] = _total_loss(loss_fn(*(outputs + list(labels))))
        if labels:
            out["metrics"] = _metric_outputs(metrics, outputs, list(labels))
        return out

    return step


def make_predict_step(*, policy: AmpPolicy | None = None, keep_fp32: frozenset = frozenset()) -> Callable:
    """Build `(state, inputs) -> outputs` (a list) in evaluation mode."""

    def step(state, inputs):
        model = state.merge(_cast_params(state.params, policy, keep_fp32), training=False)
        with use_policy(policy):
            return _as_list(model(*inputs))

    return step
