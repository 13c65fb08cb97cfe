"""`decorate`: prepare models (and optimizers) for O2 mixed precision.

At O2 the parameters themselves are stored in low precision, except those of
normalization layers (their statistics need float32). The optimizer keeps
float32 master weights, updates those and casts the result back, so many tiny
updates are not lost to bfloat16/float16 rounding.

`pdx.Model.prepare(amp_configs={"level": "O2", ...})` does not need this:
its compiled step keeps float32 parameters in the TrainState and casts
low-precision copies for the forward pass.
"""

from __future__ import annotations

from pdx._amp_policy import _DTYPES

__all__ = ["decorate", "fp32_param_names"]

_NORM_LAYERS = ("BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "LayerNorm", "RMSNorm", "GroupNorm",
                "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D", "SyncBatchNorm")


def fp32_param_names(model) -> frozenset:
    """Dotted names of the parameters O2 keeps in float32 (those of norm layers).

    Example:
      >>> net = pdx.nn.Sequential(pdx.nn.Linear(2, 2), pdx.nn.LayerNorm(2))
      >>> sorted(pdx.amp.fp32_param_names(net))
      ['1.bias', '1.weight']
    """
    from pdx import nn

    norm_types = tuple(getattr(nn, n) for n in _NORM_LAYERS if hasattr(nn, n))
    keep = set()
    for prefix, layer in model.named_sublayers(include_self=True):
        if isinstance(layer, norm_types):
            for name, _ in layer.named_parameters():
                keep.add(f"{prefix}.{name}" if prefix else name)
    return frozenset(keep)


def _as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def decorate(models, optimizers=None, level: str = "O1", dtype: str = "bfloat16", master_weight=None,
             save_dtype=None, master_grad: bool = False, excluded_layers=None):
    """Cast models for mixed precision (Paddle's `paddle.amp.decorate`).

    Args:
      models: a Layer or a list of Layers.
      optimizers: None, an optimizer or a list (bound to those models).
      level: 'O1' changes nothing (parameters stay float32); 'O2' casts every
        floating parameter outside normalization layers (and `excluded_layers`)
        to `dtype`.
      dtype: 'bfloat16' or 'float16'.
      master_weight: keep float32 master weights in the optimizers (default
        True at O2).
      save_dtype: accepted for Paddle compatibility; `state_dict()` returns the
        stored dtype.
      master_grad: accepted; gradients are taken with respect to the float32
        master values inside the optimizer's update.
      excluded_layers: Layers or Layer types whose parameters stay float32.

    Returns:
      `models` if no optimizers were given, else `(models, optimizers)`, the
      same objects (modified in place), as in Paddle.

    Example:
      >>> import pdx
      >>> net = pdx.nn.Sequential(pdx.nn.Linear(4, 4), pdx.nn.LayerNorm(4))
      >>> opt = pdx.optimizer.AdamW(1e-3, parameters=net)
      >>> net, opt = pdx.amp.decorate(net, opt, level="O2")
      >>> str(net[0].weight[...].dtype), str(net[1].weight[...].dtype)
      ('bfloat16', 'float32')
    """
    import jax.numpy as jnp

    from pdx.nn import Layer

    if not isinstance(level, str) or level.upper() not in ("O0", "O1", "O2"):
        raise ValueError(f"decorate: level must be 'O1' or 'O2'; got level={level!r}")
    if dtype not in _DTYPES:
        raise ValueError(f"decorate: dtype must be 'bfloat16' or 'float16'; got dtype={dtype!r}")
    level = level.upper()
    model_list, opt_list = _as_list(models), _as_list(optimizers)
    for m in model_list:
        if not hasattr(m, "named_parameters"):
            raise TypeError(f"decorate: models must be pdx Layers; got {type(m).__name__}")
    if level != "O2":
        return models if optimizers is None else (models, optimizers)

    low = _DTYPES[dtype]
    excluded = _as_list(excluded_layers)
    cast_vars = {}
    for m in model_list:
        keep = fp32_param_names(m)
        for prefix, layer in m.named_sublayers(include_self=True):
            if any(layer is e or (isinstance(e, type) and isinstance(layer, e)) for e in excluded):
                keep |= {f"{prefix}.{n}" if prefix else n for n, _ in layer.named_parameters()}
        for name, var in m.named_parameters():
            if name not in keep and jnp.issubdtype(var.get_value().dtype, jnp.floating):
                cast_vars[id(var)] = var
    use_master = True if master_weight is None else bool(master_weight)
    for opt in opt_list:
        if use_master:
            # Master copies are taken from the float32 values before the cast below.
            opt.add_master_weights([name for name, var in opt.trainable_parameters() if id(var) in cast_vars])
    for var in cast_vars.values():
        var.set_value(var.get_value().astype(low))
    for m in model_list:
        for layer in m.sublayers(include_self=True):
            if isinstance(layer, Layer):
                layer._dtype = low  # a structural change: compiled functions over the layer retrace
    return models if optimizers is None else (models, optimizers)
