"""pdx.export: StableHLO artifacts and the runtimes that run them.

`export` traces a Layer or function through `pdx.jit` and writes an artifact
directory (StableHLO program, safetensors parameters, manifest with sha256
sums, one `.vmfb` per IREE target); `load` returns a `Predictor` running it
on XLA or IREE. `save_layer` / `load_layer` (Paddle's `pdx.jit.save` /
`pdx.jit.load`) save a Layer with its input shapes inferred and load an
artifact back as a fine-tunable `TranslatedLayer`. `serve_llm` /
`pdx serve --llm DIR` serves a language model with continuous batching
behind an OpenAI-compatible API.

Example:
    >>> import pdx, tempfile
    >>> net = pdx.nn.Linear(4, 2)
    >>> path = pdx.export.export(net, tempfile.mkdtemp() + "/net", [pdx.jit.InputSpec([None, 4], "float32", "x")])
    >>> predictor = pdx.export.load(path)
    >>> predictor.name, predictor(pdx.ones([3, 4])).shape
    ('linear', (3, 2))
"""

from pdx.export._artifact import ArtifactError
from pdx.export._client import Client, ServerError
from pdx.export._export import TARGETS, CpuOptions, export
from pdx.export._iree_export import IreeOptions
from pdx.export._layer_io import load_layer, save_layer
from pdx.export._llm_server import create_llm_app, serve_llm
from pdx.export._runtime import Predictor, load
from pdx.export._server import create_app, serve
from pdx.export._translated import TranslatedLayer

__all__ = ["ArtifactError", "Client", "CpuOptions", "IreeOptions", "Predictor", "ServerError", "TARGETS",
           "TranslatedLayer", "create_app", "create_llm_app", "export", "load", "load_layer", "save_layer", "serve",
           "serve_llm"]
