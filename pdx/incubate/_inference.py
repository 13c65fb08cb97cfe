"""paddle.incubate.jit.inference: run a Layer (or its forward) as one compiled program."""

from __future__ import annotations

__all__ = ["inference"]


def inference(function=None, cache_static_model=False, save_model_dir=None, memory_pool_init_size_mb=1000,
              precision_mode="float32", switch_ir_optim=True, switch_ir_debug=False, enable_cinn=False, with_trt=False,
              trt_precision_mode="float32", trt_use_static=False, collect_shape=False, enable_new_ir=False,
              exp_enable_use_cutlass=False, delete_pass_lists=None, skip_prune_program=False):
    """Compile a Layer or a Layer's `forward` for inference (Paddle's `paddle.incubate.jit.inference`).

    Paddle converts the function to a static program and runs it with a Paddle
    Inference predictor; pdx compiles it with XLA: this is `pdx.jit.to_static`.
    Used bare, with options (`@inference()`), on a method, or on a Layer
    (`layer = inference(layer)`), as in Paddle. The predictor's tuning options
    (memory pool, IR passes, CINN, TensorRT, caching/saving the static model)
    have no XLA counterpart and are accepted and ignored; export a model with
    `pdx.jit.save`.

    Args:
      function: the Layer or function; None returns the decorator.
      precision_mode: must be 'float32' (weights run in their own dtype; for float16 /
        bfloat16 cast the model with `pdx.amp.decorate` first).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.incubate.jit.inference(pdx.nn.Linear(2, 3))
      >>> net(jnp.ones((1, 2))).shape
      (1, 3)
    """
    if precision_mode not in ("float32", "fp32"):
        raise ValueError(f"pdx.incubate.jit.inference: precision_mode={precision_mode!r} is not supported; the model "
                         "runs in its parameters' dtype: cast it with pdx.amp.decorate(models=..., level='O2', "
                         "dtype='float16') and keep precision_mode='float32'")

    def decorate(fn):
        from pdx import jit  # pdx.jit builds on pdx.nn; loaded on first use

        return jit.to_static(fn)

    return decorate if function is None else decorate(function)
