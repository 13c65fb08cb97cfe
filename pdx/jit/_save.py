"""`pdx.jit.save` / `pdx.jit.load` (Paddle's `paddle.jit.save` / `load`), on top of `pdx.export`."""

from __future__ import annotations

from pdx._static_layers import static_layers
from pdx.nn import Layer

__all__ = ["load", "save"]


def save(layer, path, input_spec=None, **configs):
    """Save a Layer or function for inference and fine-tuning (Paddle's `paddle.jit.save`).

    `pdx.export.export` with the XLA target: StableHLO program, safetensors
    parameters and manifest in the directory `path` (Paddle writes
    `path.pdmodel` / `path.pdiparams` files; pdx writes one directory).

    Args:
      layer: a `pdx.nn.Layer` or a function (a `pdx.jit` StaticFunction too).
      path: the artifact directory.
      input_spec: a list of `pdx.jit.InputSpec`; may be omitted when the
        layer/function was decorated with `pdx.jit.to_static(input_spec=...)`,
        or after its `to_static` function ran: the shapes of the last call are
        used (as Paddle does).
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
    if input_spec is None:
        static = layer
        if isinstance(layer, Layer):  # pdx.jit(layer), or @pdx.jit on the class's forward
            static = static_layers.get(layer) or getattr(type(layer), "forward", None)
        input_spec = getattr(static, "_input_spec", None)
        if input_spec is None and hasattr(static, "last_input_spec"):
            input_spec = static.last_input_spec()
        if input_spec is None:
            raise ValueError("pdx.jit.save: input_spec is required (e.g. [pdx.jit.InputSpec([None, 3, 224, 224], "
                             "'float32', 'image')]) unless the layer was decorated with "
                             "pdx.jit.to_static(input_spec=...) or its to_static function has run once "
                             "(then the shapes of that call are used)")
    if "targets" in configs:
        raise TypeError("pdx.jit.save writes the XLA target only; use pdx.export.export(..., targets=[...]) "
                        "for IREE targets")
    from pdx.export import export  # pdx.export imports pdx.jit

    return export(layer, path, input_spec, **configs)


def load(path, **configs):
    """Load an artifact as a fine-tunable `TranslatedLayer` (Paddle's `paddle.jit.load`).

    The manifest and every file's sha256 are checked before anything is
    deserialized (`pdx.export.ArtifactError` otherwise).

    Args:
      path: the artifact directory written by `pdx.jit.save` / `pdx.export.export`.
      **configs: accepted for Paddle compatibility; none are used.

    Returns:
      A `TranslatedLayer` with the artifact's parameters.
    """
    from pdx.export import TranslatedLayer  # pdx.export imports pdx.jit

    return TranslatedLayer(path)
