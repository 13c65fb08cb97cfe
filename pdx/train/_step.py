"""The pure training step over a `TrainState`: `make_step` and the `pdx.Model` steps.

`make_step(loss_fn)` returns `step(state, batch) -> (state, metrics)`:

1. forward + loss (`loss_fn(model, batch)`, the model rebuilt from the state's
   traced values) under the AMP policy (O2: float32 master parameters are
   cast to the low-precision dtype for the forward pass, outside norm
   layers), the loss multiplied by the loss scale;
2. gradients, averaged over the micro-batches of a stacked batch (gradient
   accumulation: a leading axis of k micro-batches, one `lax.scan`);
3. unscale, then the guard: if the loss or any gradient is non-finite the
   update is skipped (params, opt_state, buffers and step are the old arrays,
   bitwise) and `nonfinite_steps` counts up; a finite step resets it;
4. the optimizer update (the optimizer's own gradient clipping included);
5. the loss-scale update.

`make_train_step` is that step for Paddle's `loss(*outputs, *labels)`
convention plus the metrics' device-side `compute` (what `pdx.Model` runs);
`make_eval_step` / `make_predict_step` run the evaluation-mode graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import optax

from pdx._amp_policy import AmpPolicy, use_policy

__all__ = ["make_step", "make_train_step", "make_eval_step", "make_predict_step"]

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


def make_step(loss_fn: Callable, *, has_aux: bool = False, accumulate: bool = False,
              policy: AmpPolicy | None = None, keep_fp32: frozenset = frozenset()) -> Callable:
    """Build the pure train step `(state, batch) -> (state, metrics)` over a `TrainState`.

    Args:
      loss_fn: `loss_fn(model, batch) -> loss` (or `(loss, aux)` with
        `has_aux`); `model` is the Layer rebuilt from the state in training
        mode. A non-scalar loss is averaged.
      has_aux: `loss_fn` returns `(loss, aux)`; `aux` comes back in
        `metrics['aux']` (stacked over micro-batches when accumulating).
      accumulate: the batch has a leading axis of micro-batches; gradients
        are averaged over it and applied once.
      policy: a `pdx.amp.AmpPolicy` the forward pass runs under, or None.
      keep_fp32: parameter names O2 leaves in float32 (norm layers).

    Returns:
      A pure function to `jax.jit` (see `jit_step`); `metrics` holds 'loss'
      (float32, unscaled), 'grad_norm' (global norm of the unscaled
      gradients), 'finite', 'nonfinite_steps' and 'loss_scale'.

    Example:
      >>> import jax, jax.numpy as jnp, pdx
      >>> net = pdx.nn.Linear(3, 1)
      >>> state = pdx.TrainState.create(net, pdx.optimizer.SGD(0.1, parameters=net))
      >>> step = jax.jit(pdx.train.make_step(lambda m, b: ((m(b[0]) - b[1]) ** 2).mean()))
      >>> state, metrics = step(state, (jnp.ones((4, 3)), jnp.zeros((4, 1))))
      >>> int(state.step), bool(metrics["finite"])
      (1, True)
    """

    def forward(params, buffers, state, batch):
        model = state.merge(_cast_params(params, policy, keep_fp32), buffers, training=True)
        with use_policy(policy):
            result = loss_fn(model, batch)
            loss, aux = result if has_aux else (result, None)
            loss = _total_loss(loss)
        scaled = state.spec.scaler.scale(loss, state.loss_scale)
        return scaled, (loss, aux, state.read_buffers(model))

    grad_fn = jax.value_and_grad(forward, has_aux=True)

    def step(state, batch):
        if not accumulate:
            (_, (loss, aux, buffers)), grads = grad_fn(state.params, state.buffers, state, batch)
        else:
            k = jax.tree.leaves(batch)[0].shape[0]

            def micro(carry, mb):
                gsum, lsum, bufs = carry
                (_, (l, a, bufs)), g = grad_fn(state.params, bufs, state, mb)
                return (jax.tree.map(jnp.add, gsum, g), lsum + l, bufs), a

            zeros = jax.tree.map(jnp.zeros_like, state.params)
            (gsum, lsum, buffers), aux = jax.lax.scan(micro, (zeros, jnp.zeros((), jnp.float32), state.buffers),
                                                     batch)
            grads = jax.tree.map(lambda g: g / k, gsum)
            loss = lsum / k
        new_state, metrics = _guarded_update(state, grads, loss, buffers)
        if has_aux:
            metrics["aux"] = aux
        return new_state, metrics

    return step


def _guarded_update(state, grads, loss, buffers):
    """Unscale, check finiteness, apply (or skip bitwise), update the loss scale and counters."""
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
    metrics = {"loss": loss, "grad_norm": optax.tree.norm(grads), "finite": finite,
               "nonfinite_steps": new_state.nonfinite_steps, "loss_scale": new_state.loss_scale.scale}
    return new_state, metrics


def make_train_step(loss_fn: Callable, metrics: Sequence = (), *, policy: AmpPolicy | None = None,
                    keep_fp32: frozenset = frozenset(), accumulate: bool = False) -> Callable:
    """Build `pdx.Model`'s train step `(state, (inputs, labels)) -> (state, out)`.

    `make_step` with Paddle's conventions: the network is called as
    `model(*inputs)`, the loss as `loss_fn(*outputs, *labels)`, and each
    metric's `compute(*outputs, *labels)` runs in the step.

    Args:
      loss_fn: called as `loss_fn(*outputs, *labels)`.
      metrics: `pdx.metric.Metric`s whose `compute` runs in the step.
      policy, keep_fp32, accumulate: as for `make_step`.

    Returns:
      A function to `jax.jit`; `out` holds `make_step`'s metrics plus
      'metrics' (the device results of each metric's `compute`).
    """

    def network_loss(model, batch):
        inputs, labels = batch
        outputs = _as_list(model(*inputs))
        return loss_fn(*(outputs + list(labels))), outputs

    inner = make_step(network_loss, has_aux=True, accumulate=accumulate, policy=policy, keep_fp32=keep_fp32)

    def step(state, batch):
        new_state, out = inner(state, batch)
        outputs, labels = out.pop("aux"), list(batch[1])
        if accumulate:
            outputs = [o.reshape((-1,) + o.shape[2:]) for o in outputs]
            labels = [lb.reshape((-1,) + lb.shape[2:]) for lb in labels]
        out["metrics"] = _metric_outputs(metrics, [jax.lax.stop_gradient(o) for o in outputs], labels)
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
