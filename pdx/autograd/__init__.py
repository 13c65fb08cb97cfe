"""pdx.autograd: Paddle's `paddle.autograd` on JAX's function transformations.

pdx keeps no tape: gradients come from transforming functions (`pdx.grad`,
`pdx.value_and_grad`, `jax.grad`). So `jacobian`, `hessian` and `grad` take
the function that computes the outputs instead of the outputs themselves;
`PyLayer` is a `jax.custom_vjp`; `backward` raises and names `pdx.grad`; the
grad-mode switches keep the flag that `is_grad_enabled()` reports.
"""

from pdx.autograd._functional import Hessian, Jacobian, backward, grad, hessian, jacobian
from pdx.autograd._grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from pdx.autograd._py_layer import Function, PyLayer, PyLayerContext, saved_tensors_hooks

__all__ = [
    "Function",
    "Hessian",
    "Jacobian",
    "PyLayer",
    "PyLayerContext",
    "backward",
    "enable_grad",
    "grad",
    "hessian",
    "is_grad_enabled",
    "jacobian",
    "no_grad",
    "saved_tensors_hooks",
    "set_grad_enabled",
]
