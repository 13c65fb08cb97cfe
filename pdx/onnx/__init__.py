"""pdx.onnx: export a Layer to ONNX (Paddle's `paddle.onnx`), checked with onnxruntime.

`export(layer, path, input_spec)` writes `path + ".onnx"`: pdx's own
converter walks the layer's traced jaxpr and writes ONNX nodes per JAX
primitive, weights as initializers, `None` dims as symbolic ONNX dims.
`to_onnx` returns the `onnx.ModelProto` without writing it. See README.md
for the supported primitives and what is refused.

Example:
    >>> import pdx, tempfile
    >>> net = pdx.nn.Linear(4, 2)
    >>> path = pdx.onnx.export(net, tempfile.mkdtemp() + "/linear", [pdx.static.InputSpec([None, 4], "float32", "x")])
    >>> import onnxruntime, numpy as np                              # doctest: +SKIP
    >>> onnxruntime.InferenceSession(str(path)).run(None, {"x": np.ones((3, 4), np.float32)})[0].shape  # doctest: +SKIP
    (3, 2)
"""

from pdx.onnx._convert import OnnxExportError, UnsupportedPrimitiveError
from pdx.onnx._export import DEFAULT_OPSET, export, to_onnx
from pdx.onnx._rules import SUPPORTED

__all__ = ["DEFAULT_OPSET", "OnnxExportError", "SUPPORTED", "UnsupportedPrimitiveError", "export", "to_onnx"]
