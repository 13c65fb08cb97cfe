"""The Paddle optimizers: SGD, Momentum, Adam, AdamW, Adagrad, RMSProp, Adamax, Lamb, ASGD, Adadelta, NAdam, RAdam, Rprop.

Each is `Optimizer` plus one optax chain per parameter group that reproduces
Paddle's kernel (optax's transform where the math is the same, a
`_transforms` one where it is not). Paddle's update order is kept:
grad clip -> regularization (L2Decay: +coeff*param, L1Decay: +coeff*sign(param))
-> update with lr * per-parameter multiplier.
"""

from __future__ import annotations

from collections.abc import Callable

import optax

from pdx.optimizer import _transforms
from pdx.optimizer._optimizer import Optimizer, _as_hyper
from pdx.regularizer import WeightDecayRegularizer

__all__ = ["ASGD", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "Lamb", "Momentum", "NAdam", "RAdam", "RMSProp", "Rprop"]


def _chain(**steps) -> optax.GradientTransformation:
    """A named chain (state keys like 'adam', 'lr'), skipping None steps."""
    return optax.named_chain(*[(name, t) for name, t in steps.items() if t is not None])


def _require(cls: str, **values) -> None:
    for arg, value in values.items():
        if value is None:
            raise ValueError(f"{cls}: {arg} is not set (got None)")


class SGD(Optimizer):
    """Stochastic gradient descent: `param -= lr * grad`.

    Args:
      learning_rate: a float or an `LRScheduler`.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: None, a float (L2), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      multi_precision: float32 master weights for float16/bfloat16 params.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([2], default_initializer=pdx.nn.initializer.Constant(1.0))
      >>> opt = pdx.optimizer.SGD(learning_rate=0.1, parameters=net)
      >>> opt.step({"w": jnp.array([1.0, -1.0])})
      >>> [round(v, 2) for v in net.w[...].tolist()]
      [0.9, 1.1]
    """

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision: bool = False, name: str | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, multi_precision=multi_precision)

    def _group_transform(self, group, learning_rate):
        return _chain(regularization=self._regularization(group), lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale))


class Momentum(Optimizer):
    """Momentum SGD: `v = momentum * v + g; param -= lr * v` (Nesterov:
    `param -= lr * (g + momentum * v)`).

    As in Paddle's fused kernel, `rescale_grad` scales the gradient before an
    L2 decay term is added (an L1 term is added before the rescale).

    Args:
      learning_rate: a float or an `LRScheduler`.
      momentum: the momentum factor.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      use_nesterov: Nesterov momentum.
      weight_decay: None, a float (L2), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      multi_precision: float32 master weights for float16/bfloat16 params.
      rescale_grad: multiply gradients by this before the update.
      use_multi_tensor: accepted for compatibility (XLA fuses the update).
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.Momentum(learning_rate=1.0, momentum=0.5, parameters=net)
      >>> for _ in range(2):
      ...     opt.step({"w": jnp.array([1.0])})
      >>> net.w[...].tolist()
      [-2.5]
    """

    def __init__(self, learning_rate=0.001, momentum: float = 0.9, parameters=None, use_nesterov: bool = False,
                 weight_decay=None, grad_clip=None, multi_precision: bool = False, rescale_grad: float = 1.0,
                 use_multi_tensor: bool = False, name: str | None = None) -> None:
        _require("Momentum", learning_rate=learning_rate, momentum=momentum)
        defaults = {"momentum": _as_hyper("Momentum", "momentum", momentum), "use_nesterov": bool(use_nesterov),
                    "rescale_grad": _as_hyper("Momentum", "rescale_grad", rescale_grad)}
        self._use_multi_tensor = use_multi_tensor
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, multi_precision=multi_precision, defaults=defaults)

    def _group_transform(self, group, learning_rate):
        opts = group.options
        rescale = float(opts["rescale_grad"])
        return _chain(
            l1_regularization=self._regularization(group, l2=False),
            rescale_grad=optax.scale(rescale) if rescale != 1.0 else None,
            l2_regularization=self._regularization(group, l1=False),
            velocity=optax.trace(decay=float(opts["momentum"]), nesterov=bool(opts["use_nesterov"])),
            lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale),
        )


class Adam(Optimizer):
    """Adam: bias-corrected first/second moments,
    `param -= lr * m_hat / (sqrt(v_hat) + epsilon)`; `amsgrad=True` keeps the
    running max of the second moment (Paddle's variant).

    Args:
      learning_rate: a float or an `LRScheduler`.
      beta1, beta2: the moment decay rates.
      epsilon: added to the denominator.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: None, a float (L2, coupled), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      lazy_mode: accepted for compatibility (pdx gradients are dense).
      multi_precision: float32 master weights for float16/bfloat16 params.
      use_multi_tensor: accepted for compatibility.
      amsgrad: use AMSGrad.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.Adam(learning_rate=0.1, parameters=net)
      >>> opt.step({"w": jnp.array([3.0])})
      >>> [round(v, 4) for v in net.w[...].tolist()]
      [-0.1]
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None, weight_decay=None,
                 grad_clip=None, lazy_mode: bool = False, multi_precision: bool = False, use_multi_tensor: bool = False,
                 amsgrad: bool = False, name: str | None = None) -> None:
        _require("Adam", learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon)
        defaults = _adam_defaults("Adam", beta1, beta2, epsilon)
        defaults["lazy_mode"] = bool(lazy_mode)
        self._amsgrad = bool(amsgrad)
        self._use_multi_tensor = use_multi_tensor
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, multi_precision=multi_precision, defaults=defaults)

    def _group_transform(self, group, learning_rate):
        return _chain(regularization=self._regularization(group), adam=_adam_direction(group.options, self._amsgrad),
                      lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale))


def _adam_defaults(cls: str, beta1, beta2, epsilon) -> dict:
    beta1, beta2 = _as_hyper(cls, "beta1", beta1), _as_hyper(cls, "beta2", beta2)
    epsilon = _as_hyper(cls, "epsilon", epsilon)
    for arg, value in (("beta1", beta1), ("beta2", beta2)):
        if not 0 <= value < 1:
            raise ValueError(f"{cls}: {arg} must be in [0, 1); got {value}")
    if epsilon < 0:
        raise ValueError(f"{cls}: epsilon must be >= 0; got {epsilon}")
    return {"beta1": beta1, "beta2": beta2, "epsilon": epsilon}


def _adam_direction(opts, amsgrad: bool):
    b1, b2, eps = float(opts["beta1"]), float(opts["beta2"]), float(opts["epsilon"])
    if amsgrad:
        return _transforms.scale_by_paddle_amsgrad(b1, b2, eps)
    return optax.scale_by_adam(b1=b1, b2=b2, eps=eps)


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay,
    `param -= lr * coeff * param` (before the Adam step, on the old param).

    Args:
      learning_rate: a float or an `LRScheduler`.
      beta1, beta2, epsilon: as in `Adam`.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: the decoupled decay coefficient (a float).
      use_lowprecision_moment: accepted for compatibility (moments of
        float16/bfloat16 params are kept in float32).
      lr_ratio: None or `fn(param) -> float`, a per-parameter lr multiplier.
      apply_decay_param_fun: None or `fn(name) -> bool`; decay only the
        parameters it accepts (`name` is the parameter's dotted name).
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      lazy_mode, multi_precision, amsgrad, name: as in `Adam`.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(1.0))
      >>> opt = pdx.optimizer.AdamW(learning_rate=0.1, parameters=net, weight_decay=0.5)
      >>> opt.step({"w": jnp.array([0.0])})
      >>> [round(v, 4) for v in net.w[...].tolist()]
      [0.95]
    """

    _decoupled_weight_decay = True

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None, weight_decay=0.01,
                 use_lowprecision_moment: bool = False, lr_ratio: Callable | None = None,
                 apply_decay_param_fun: Callable[[str], bool] | None = None, grad_clip=None, lazy_mode: bool = False,
                 multi_precision: bool = False, amsgrad: bool = False, name: str | None = None) -> None:
        _require("AdamW", learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon, weight_decay=weight_decay)
        if isinstance(weight_decay, WeightDecayRegularizer):
            raise TypeError(f"AdamW: weight_decay is the decoupled decay coefficient and must be a float; got {weight_decay!r} "
                            "(for coupled L1/L2 use Adam(weight_decay=...) or ParamAttr(regularizer=...))")
        if lr_ratio is not None and not callable(lr_ratio):
            raise TypeError(f"AdamW: lr_ratio must be None or a function param -> float; got {lr_ratio!r}")
        if apply_decay_param_fun is not None and not callable(apply_decay_param_fun):
            raise TypeError(f"AdamW: apply_decay_param_fun must be None or a function name -> bool; got {apply_decay_param_fun!r}")
        self._weight_decay = _as_hyper("AdamW", "weight_decay", weight_decay)
        self._lr_ratio = lr_ratio
        self._apply_decay_param_fun = apply_decay_param_fun
        self._use_lowprecision_moment = use_lowprecision_moment
        self._amsgrad = bool(amsgrad)
        defaults = _adam_defaults("AdamW", beta1, beta2, epsilon)
        defaults.update(lazy_mode=bool(lazy_mode), weight_decay=self._weight_decay)
        Optimizer.__init__(self, learning_rate, parameters, None, grad_clip, name, multi_precision=multi_precision, defaults=defaults)

    def _group_transform(self, group, learning_rate):
        coeff = _as_hyper("AdamW", "parameter group weight_decay", group.options["weight_decay"])
        decay = {n: self._apply_decay_param_fun is None or bool(self._apply_decay_param_fun(n)) for n in group.names}
        scale = dict(group.lr_scale)
        if self._lr_ratio is not None:
            scale = {n: s * float(self._lr_ratio(group.params[n])) for n, s in scale.items()}
        coeffs = {n: coeff if decay[n] else 0.0 for n in group.names}
        return _chain(
            regularization=self._regularization(group),
            adam=_adam_direction(group.options, self._amsgrad),
            lr=_transforms.scale_by_paddle_lr(learning_rate, scale,
                                              decoupled_decay=coeffs if any(coeffs.values()) else None),
        )


class Adagrad(Optimizer):
    """Adagrad: `acc += g^2; param -= lr * g / (sqrt(acc) + epsilon)`.

    Args:
      learning_rate: a float or an `LRScheduler`.
      epsilon: added to the denominator (outside the square root).
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: None, a float (L2), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      name: ignored.
      initial_accumulator_value: the starting value of `acc`.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.Adagrad(learning_rate=0.1, parameters=net, epsilon=0.0)
      >>> opt.step({"w": jnp.array([2.0])})
      >>> [round(v, 4) for v in net.w[...].tolist()]
      [-0.1]
    """

    def __init__(self, learning_rate, epsilon: float = 1e-06, parameters=None, weight_decay=None, grad_clip=None,
                 name: str | None = None, initial_accumulator_value: float = 0.0) -> None:
        _require("Adagrad", learning_rate=learning_rate, epsilon=epsilon)
        defaults = {"epsilon": _as_hyper("Adagrad", "epsilon", epsilon),
                    "initial_accumulator_value": _as_hyper("Adagrad", "initial_accumulator_value", initial_accumulator_value)}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, defaults=defaults)

    def _group_transform(self, group, learning_rate):
        opts = group.options
        return _chain(regularization=self._regularization(group),
                      adagrad=_transforms.scale_by_paddle_adagrad(float(opts["epsilon"]), float(opts["initial_accumulator_value"])),
                      lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale))


class RMSProp(Optimizer):
    """RMSProp: `ms = rho * ms + (1 - rho) * g^2`,
    `mom = momentum * mom + lr * g / sqrt(ms + epsilon)`, `param -= mom`
    (centered: `ms - mg^2` under the root, `mg` the running mean gradient).

    Args:
      learning_rate: a float or an `LRScheduler`.
      rho: the decay rate of the squared-gradient average.
      epsilon: added inside the square root.
      momentum: the momentum factor.
      centered: subtract the squared running mean gradient.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: None, a float (L2), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.RMSProp(learning_rate=0.1, rho=0.75, epsilon=0.0, parameters=net)
      >>> opt.step({"w": jnp.array([1.0])})
      >>> [round(v, 4) for v in net.w[...].tolist()]
      [-0.2]
    """

    def __init__(self, learning_rate, rho: float = 0.95, epsilon: float = 1e-06, momentum: float = 0.0,
                 centered: bool = False, parameters=None, weight_decay=None, grad_clip=None, name: str | None = None) -> None:
        _require("RMSProp", learning_rate=learning_rate, rho=rho, epsilon=epsilon, momentum=momentum)
        defaults = {"rho": _as_hyper("RMSProp", "rho", rho), "epsilon": _as_hyper("RMSProp", "epsilon", epsilon),
                    "momentum": _as_hyper("RMSProp", "momentum", momentum), "centered": bool(centered)}
        for arg in ("rho", "epsilon", "momentum"):
            if defaults[arg] < 0:
                raise ValueError(f"RMSProp: {arg} must be >= 0; got {defaults[arg]}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, defaults=defaults)

    def _group_transform(self, group, learning_rate):
        opts = group.options
        rho, eps = float(opts["rho"]), float(opts["epsilon"])
        scale = optax.scale_by_stddev(decay=rho, eps=eps) if opts["centered"] else optax.scale_by_rms(decay=rho, eps=eps)
        # lr sits inside Paddle's momentum accumulator: scale by +lr, accumulate, then descend.
        return _chain(regularization=self._regularization(group), mean_square=scale,
                      lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale, flip_sign=False),
                      momentum=optax.trace(decay=float(opts["momentum"])), descend=optax.scale(-1.0))


class Adamax(Optimizer):
    """Adamax: `m = beta1 * m + (1 - beta1) * g`, `u = max(beta2 * u + epsilon, |g|)`,
    `param -= lr / (1 - beta1^t) * m / u`.

    Args:
      learning_rate: a float or an `LRScheduler`.
      beta1, beta2: the decay rates.
      epsilon: added to the decayed infinity norm.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: None, a float (L2), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.Adamax(learning_rate=0.1, parameters=net)
      >>> opt.step({"w": jnp.array([2.0])})
      >>> [round(v, 4) for v in net.w[...].tolist()]
      [-0.1]
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None, weight_decay=None,
                 grad_clip=None, name: str | None = None) -> None:
        _require("Adamax", learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, defaults=_adam_defaults("Adamax", beta1, beta2, epsilon))

    def _group_transform(self, group, learning_rate):
        opts = group.options
        return _chain(regularization=self._regularization(group),
                      adamax=_transforms.scale_by_paddle_adamax(float(opts["beta1"]), float(opts["beta2"]), float(opts["epsilon"])),
                      lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale))


class Lamb(Optimizer):
    """LAMB: the Adam direction plus decoupled decay `r = m_hat / (sqrt(v_hat) + eps) + wd * param`,
    scaled by the trust ratio `||param|| / ||r||`: `param -= lr * trust * r`.

    Parameters with zero decay (excluded by `exclude_from_weight_decay_fn`)
    skip the trust ratio unless `always_adapt=True`, as in Paddle.

    Args:
      learning_rate: a float or an `LRScheduler`.
      lamb_weight_decay: the decoupled decay coefficient.
      beta1, beta2, epsilon: as in `Adam`.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      exclude_from_weight_decay_fn: None or `fn(param) -> bool`; True skips decay.
      multi_precision: float32 master weights for float16/bfloat16 params.
      always_adapt: apply the trust ratio to every parameter.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([2], default_initializer=pdx.nn.initializer.Constant(1.0))
      >>> opt = pdx.optimizer.Lamb(learning_rate=0.1, lamb_weight_decay=0.0, parameters=net)
      >>> opt.step({"w": jnp.array([1.0, 1.0])})
      >>> [round(v, 4) for v in net.w[...].tolist()]
      [0.9, 0.9]
    """

    _decoupled_weight_decay = True

    def __init__(self, learning_rate=0.001, lamb_weight_decay: float = 0.01, beta1=0.9, beta2=0.999, epsilon=1e-06,
                 parameters=None, grad_clip=None, exclude_from_weight_decay_fn: Callable | None = None,
                 multi_precision: bool = False, always_adapt: bool = False, name: str | None = None) -> None:
        _require("Lamb", learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon)
        if exclude_from_weight_decay_fn is not None and not callable(exclude_from_weight_decay_fn):
            raise TypeError(f"Lamb: exclude_from_weight_decay_fn must be None or a function param -> bool; got {exclude_from_weight_decay_fn!r}")
        defaults = _adam_defaults("Lamb", beta1, beta2, epsilon)
        defaults.update(lamb_weight_decay=_as_hyper("Lamb", "lamb_weight_decay", lamb_weight_decay),
                        exclude_from_weight_decay_fn=exclude_from_weight_decay_fn)
        self.always_adapt = bool(always_adapt)
        super().__init__(learning_rate, parameters, None, grad_clip, name, multi_precision=multi_precision, defaults=defaults)

    def _group_transform(self, group, learning_rate):
        opts = group.options
        wd = float(opts["lamb_weight_decay"])
        exclude = opts["exclude_from_weight_decay_fn"]
        decay = {n: wd > 0 and not (exclude is not None and bool(exclude(group.params[n]))) for n in group.names}
        adapt = {n: decay[n] or self.always_adapt for n in group.names}
        return _chain(
            regularization=self._regularization(group),
            adam=optax.scale_by_adam(b1=float(opts["beta1"]), b2=float(opts["beta2"]), eps=float(opts["epsilon"])),
            weight_decay=optax.add_decayed_weights(wd, mask=decay) if any(decay.values()) else None,
            trust_ratio=optax.masked(optax.scale_by_trust_ratio(), adapt) if any(adapt.values()) else None,
            lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale),
        )


class ASGD(Optimizer):
    """ASGD (stochastic average gradient): keep the last gradient of each of
    `batch_num` slots; step `m` replaces slot `m % batch_num` and descends
    along the slots' mean, `param -= lr * d / min(m + 1, batch_num)`.

    Args:
      learning_rate: a float or an `LRScheduler`.
      batch_num: the number of slots (batches in an epoch).
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: None, a float (L2), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      multi_precision: float32 master weights for float16/bfloat16 params.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.ASGD(learning_rate=1.0, batch_num=2, parameters=net)
      >>> opt.step({"w": jnp.array([2.0])})
      >>> opt.step({"w": jnp.array([4.0])})
      >>> net.w[...].tolist()
      [-5.0]
    """

    def __init__(self, learning_rate=0.001, batch_num: int = 1, parameters=None, weight_decay=None, grad_clip=None,
                 multi_precision: bool = False, name: str | None = None) -> None:
        _require("ASGD", learning_rate=learning_rate, batch_num=batch_num)
        if isinstance(batch_num, bool) or not isinstance(batch_num, int) or batch_num <= 0:
            raise ValueError(f"ASGD: batch_num must be a positive int; got batch_num={batch_num!r}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, multi_precision=multi_precision,
                         defaults={"batch_num": int(batch_num)})

    def _group_transform(self, group, learning_rate):
        return _chain(regularization=self._regularization(group),
                      asgd=_transforms.scale_by_paddle_asgd(int(group.options["batch_num"])),
                      lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale))


class Adadelta(Optimizer):
    """Adadelta: `E[g^2] = rho * E[g^2] + (1 - rho) * g^2`,
    `dx = sqrt((E[dx^2] + eps) / (E[g^2] + eps)) * g`,
    `E[dx^2] = rho * E[dx^2] + (1 - rho) * dx^2`, `param -= lr * dx`.

    Args:
      learning_rate: a float or an `LRScheduler`.
      epsilon: added inside both square roots.
      rho: the decay rate of the running averages.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: None, a float (L2), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.Adadelta(learning_rate=1.0, epsilon=1.0, rho=0.0, parameters=net)
      >>> opt.step({"w": jnp.array([1.0])})
      >>> [round(v, 4) for v in net.w[...].tolist()]
      [-0.7071]
    """

    def __init__(self, learning_rate=0.001, epsilon: float = 1e-06, rho: float = 0.95, parameters=None,
                 weight_decay=None, grad_clip=None, name: str | None = None) -> None:
        _require("Adadelta", learning_rate=learning_rate, epsilon=epsilon, rho=rho)
        defaults = {"epsilon": _as_hyper("Adadelta", "epsilon", epsilon), "rho": _as_hyper("Adadelta", "rho", rho)}
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, defaults=defaults)

    def _group_transform(self, group, learning_rate):
        opts = group.options
        return _chain(regularization=self._regularization(group),
                      adadelta=_transforms.scale_by_paddle_adadelta(float(opts["rho"]), float(opts["epsilon"])),
                      lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale))


class NAdam(Optimizer):
    """NAdam: Adam with Nesterov momentum, the momentum coefficient
    `mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))`.

    Args:
      learning_rate: a float or an `LRScheduler`.
      beta1, beta2: the moment decay rates.
      epsilon: added to the denominator.
      momentum_decay: psi in `mu_t`.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: None, a float (L2), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.NAdam(learning_rate=0.1, parameters=net)
      >>> opt.step({"w": jnp.array([3.0])})
      >>> [round(v, 3) for v in net.w[...].tolist()]
      [-0.1]
    """

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, epsilon=1e-08, momentum_decay=0.004,
                 parameters=None, weight_decay=None, grad_clip=None, name: str | None = None) -> None:
        _require("NAdam", learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon, momentum_decay=momentum_decay)
        defaults = _adam_defaults("NAdam", beta1, beta2, epsilon)
        defaults["momentum_decay"] = _as_hyper("NAdam", "momentum_decay", momentum_decay)
        if defaults["momentum_decay"] < 0:
            raise ValueError(f"NAdam: momentum_decay must be >= 0; got {momentum_decay}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, defaults=defaults)

    def _group_transform(self, group, learning_rate):
        opts = group.options
        return _chain(regularization=self._regularization(group),
                      nadam=_transforms.scale_by_paddle_nadam(float(opts["beta1"]), float(opts["beta2"]),
                                                              float(opts["epsilon"]), float(opts["momentum_decay"])),
                      lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale))


class RAdam(Optimizer):
    """RAdam: Adam whose adaptive term is switched on, rectified, once the
    variance estimate is reliable (`rho_t > 5`); before that a momentum step.

    Args:
      learning_rate: a float or an `LRScheduler`.
      beta1, beta2: the moment decay rates.
      epsilon: added to the denominator.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      weight_decay: None, a float (L2), `L1Decay` or `L2Decay`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.RAdam(learning_rate=0.1, parameters=net)
      >>> opt.step({"w": jnp.array([3.0])})
      >>> [round(v, 3) for v in net.w[...].tolist()]
      [-0.3]
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None, weight_decay=None,
                 grad_clip=None, name: str | None = None) -> None:
        _require("RAdam", learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, defaults=_adam_defaults("RAdam", beta1, beta2, epsilon))

    def _group_transform(self, group, learning_rate):
        opts = group.options
        return _chain(regularization=self._regularization(group),
                      radam=_transforms.scale_by_paddle_radam(float(opts["beta1"]), float(opts["beta2"]), float(opts["epsilon"])),
                      lr=_transforms.scale_by_paddle_lr(learning_rate, group.lr_scale))


class Rprop(Optimizer):
    """Rprop (full-batch): each element keeps its own step size, starting at
    `learning_rate`, grown by `etas[1]` while the gradient keeps its sign and
    shrunk by `etas[0]` when it flips (then that element holds still for one
    step), within `learning_rate_range`; `param -= sign(g) * step`.

    As in Paddle, `learning_rate` only sets the starting step sizes (a float;
    the global learning rate and per-parameter multipliers play no part
    afterwards), and there is no weight decay.

    Args:
      learning_rate: the initial step size (a float).
      learning_rate_range: (min, max) of the step sizes.
      parameters: a Layer, `layer.parameters()` or parameter groups.
      etas: (decrease, increase) factors, `0 < etas[0] < 1 < etas[1]`.
      grad_clip: None or a `pdx.nn.ClipGradBy*`.
      multi_precision: float32 master weights for float16/bfloat16 params.
      name: ignored.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Layer()
      >>> net.w = net.create_parameter([1], default_initializer=pdx.nn.initializer.Constant(0.0))
      >>> opt = pdx.optimizer.Rprop(learning_rate=0.1, parameters=net)
      >>> for _ in range(2):
      ...     opt.step({"w": jnp.array([3.0])})
      >>> [round(v, 3) for v in net.w[...].tolist()]
      [-0.22]
    """

    def __init__(self, learning_rate=0.001, learning_rate_range=(1e-05, 50), parameters=None, etas=(0.5, 1.2),
                 grad_clip=None, multi_precision: bool = False, name: str | None = None) -> None:
        _require("Rprop", learning_rate=learning_rate, learning_rate_range=learning_rate_range, etas=etas)
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)):
            raise TypeError(f"Rprop: learning_rate is the initial step size and must be a float; got {learning_rate!r}")
        try:
            lo, hi = (float(v) for v in learning_rate_range)
            eta_minus, eta_plus = (float(v) for v in etas)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Rprop: learning_rate_range and etas must be pairs of floats; got "
                            f"learning_rate_range={learning_rate_range!r}, etas={etas!r}") from e
        if not 0.0 < lo <= learning_rate <= hi:
            raise ValueError(f"Rprop: need 0 < learning_rate_range[0] <= learning_rate <= learning_rate_range[1]; "
                             f"got learning_rate={learning_rate}, learning_rate_range={learning_rate_range}")
        if not 0.0 < eta_minus < 1.0 < eta_plus:
            raise ValueError(f"Rprop: need 0 < etas[0] < 1 < etas[1]; got etas={etas}")
        defaults = {"learning_rate_range": (lo, hi), "etas": (eta_minus, eta_plus)}
        self._initial_learning_rate = float(learning_rate)
        super().__init__(learning_rate, parameters, None, grad_clip, name, multi_precision=multi_precision, defaults=defaults)

    def _group_transform(self, group, learning_rate):
        opts = group.options
        return _transforms.scale_by_paddle_rprop(self._initial_learning_rate, opts["learning_rate_range"], opts["etas"])
