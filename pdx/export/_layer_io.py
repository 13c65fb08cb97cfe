"""Layers in and out of artifacts: `save_layer` / `load_layer`, which pdx gives Paddle's names
`pdx.jit.save` / `pdx.jit.load` (`paddle.jit.save` / `load`; the alias table is pdx/_paddle_tree.py's `NAMES`)."""

from __future__ import annotations

from pdx._static_layers import static_layers
from pdx.export._export import export
from pdx.export._translated import TranslatedLayer
from pdx.jit import InputSpec
from pdx.nn import Layer

__all__ = ["load_layer", "save_layer"]


def save_layer(layer, path, input_spec=None, **configs):
    """Save a Layer or function for inference and fine-tuning (Paddle's `paddle.jit.save`).

    `pdx.export.export` with the XLA target: StableHLO program, safetensors
    parameters and manifest in the directory `path` (Paddle writes
    `path.pdmodel` / `path.pdiparams` files; pdx writes one directory).

    Args:
      layer: a `pdx.nn.Layer` or a function (a `pdx.jit` StaticFunction too).
      path: the artifact directory.
      input_spec: a list of `pdx.jit.InputSpec`; may be omitted when the
        layer/function was decorated with `pdx.jit.to_static(input_spec=...)`,
        or after its `to_static` function ran. Then, as Paddle's saved programs
        do, the program takes other sizes than the last call's: every axis
        whose size all inputs of the last call share is saved dynamic (`None`);
        where the program cannot be traced that way (a size used as a Python
        number), only the batch axis is, and failing that the last call's
        shapes are kept.
      **configs: passed to `pdx.export.export` (name, output_names, platforms, ...).

    Returns:
      The artifact directory as a `pathlib.Path`.

    Example:
      >>> import pdx, tempfile
      >>> net = pdx.nn.Linear(4, 2)
      >>> path = pdx.jit.save(net, tempfile.mkdtemp() + "/net", [pdx.jit.InputSpec([None, 4], "float32", "x")])
      >>> pdx.jit.load(path)(pdx.ones([2, 4])).shape
      (2, 2)
    """
    relax = False  # the shapes of the last call: saved with dynamic axes
    if input_spec is None:
        static = layer
        if isinstance(layer, Layer):  # pdx.jit(layer), or @pdx.jit on the class's forward
            static = static_layers.get(layer) or getattr(type(layer), "forward", None)
        input_spec = getattr(static, "_input_spec", None)
        if input_spec is None and hasattr(static, "last_input_spec"):
            input_spec = static.last_input_spec()
            relax = input_spec is not None
        if input_spec is None:
            raise ValueError("pdx.jit.save: input_spec is required (e.g. [pdx.jit.InputSpec([None, 3, 224, 224], "
                             "'float32', 'image')]) unless the layer was decorated with "
                             "pdx.jit.to_static(input_spec=...) or its to_static function has run once "
                             "(then the shapes of that call are used)")
    if "targets" in configs:
        raise TypeError("pdx.jit.save writes the XLA target only; use pdx.export.export(..., targets=[...]) "
                        "for IREE targets")
    if relax:
        for axes in ("all", "all but last", (0,)):
            relaxed = _dynamic_axes(input_spec, axes)
            if relaxed is None:
                continue
            try:
                return export(layer, path, relaxed, **configs)
            except Exception:  # a size used as a Python number: try fewer dynamic axes  # noqa: BLE001
                continue
    return export(layer, path, input_spec, **configs)


def _dynamic_axes(specs, axes):
    """`specs` with each axis in `axes` ("all": every axis; "all but last": every axis but each spec's
    last, the features a weight matches) made dynamic where every spec that has it agrees on its size;
    None when that changes nothing."""
    rank = max((len(s.shape) for s in specs), default=0)
    chosen = range(rank) if isinstance(axes, str) else [a for a in axes if a < rank]
    dynamic = set()
    for axis in chosen:
        sizes = {s.shape[axis] for s in specs if len(s.shape) > axis}
        if len(sizes) == 1 and None not in sizes:
            dynamic.add(axis)
    keep_last = axes == "all but last"
    out = [InputSpec([None if a in dynamic and not (keep_last and a == len(s.shape) - 1) else d
                      for a, d in enumerate(s.shape)], s.dtype, s.name) for s in specs]
    return out if any(o.shape != s.shape for o, s in zip(out, specs)) else None


def load_layer(path, **configs):
    """Load an artifact as a fine-tunable `TranslatedLayer` (Paddle's `paddle.jit.load`).

    The manifest and every file's sha256 are checked before anything is
    deserialized (`pdx.export.ArtifactError` otherwise).

    A model Paddle saved (`paddle.jit.save`: `model.json` + `model.pdiparams`)
    loads too: `path` is its directory or prefix (`dir/model`), and the result
    is a `pdx.inference.PaddleTranslatedLayer` running its translated program.

    Args:
      path: the artifact directory written by `pdx.jit.save` / `pdx.export.export`,
        or a Paddle-saved model's directory or path prefix.
      **configs: accepted for Paddle compatibility; none are used.

    Returns:
      A `TranslatedLayer` with the artifact's parameters.
    """
    from pdx.inference import PaddleTranslatedLayer, is_paddle_model

    if is_paddle_model(path):
        return PaddleTranslatedLayer(path)
    return TranslatedLayer(path)
