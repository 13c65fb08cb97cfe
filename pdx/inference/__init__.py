"""pdx.inference: run Paddle's saved inference models — Paddle's `paddle.inference`.

`Config` → `create_predictor` → input/output handles → `run`, as in Paddle
Inference, over programs saved by `paddle.jit.save` (PIR JSON `model.json` +
`model.pdiparams`), translated op by op into one compiled JAX function.
`PaddleTranslatedLayer` (also what `pdx.jit.load` returns for such a model)
is the same program as a fine-tunable Layer.

Example:
    >>> from pdx import inference                                  # doctest: +SKIP
    >>> config = inference.Config("m/model.json", "m/model.pdiparams")  # doctest: +SKIP
    >>> predictor = inference.create_predictor(config)             # doctest: +SKIP
"""

from pdx.inference._layer import PaddleTranslatedLayer
from pdx.inference._mixed_precision import convert_to_mixed_precision
from pdx.inference._predictor import (
    Config,
    DataType,
    PlaceType,
    PrecisionType,
    Predictor,
    PredictorPool,
    Tensor,
    create_predictor,
    get_num_bytes_of_data_type,
    get_trt_compile_version,
    get_trt_runtime_version,
    get_version,
)
from pdx.inference._program_file import ModelFormatError
from pdx.inference._translate import PaddleProgram, is_paddle_model

__all__ = [
    "Config",
    "DataType",
    "ModelFormatError",
    "PaddleProgram",
    "PaddleTranslatedLayer",
    "PlaceType",
    "PrecisionType",
    "Predictor",
    "PredictorPool",
    "Tensor",
    "convert_to_mixed_precision",
    "create_predictor",
    "get_num_bytes_of_data_type",
    "get_trt_compile_version",
    "get_trt_runtime_version",
    "get_version",
    "is_paddle_model",
]
