"""pdx.models: the model zoo.

    pdx.models.list()                    every named model: family, task, config, parameter count
    pdx.models.create(name, **kw)        build one with fresh weights (`pdx export NAME` exports it)
    pdx.models.save_pretrained(m, dir, name=)   config.json + model.safetensors
    pdx.models.from_pretrained(path)     build and load a local directory or weights file
                                         (pdx, Hugging Face or Paddle .pdparams names; sharded HF directories)
    pdx.models.ConfigError               a config field, index file or weights shape that is refused
    pdx.models.llama    LLaMA-style decoders (presets tiny .. 7b), generation, HF weight import
    pdx.models.bert     BERT / ERNIE 3.0 encoders and task heads, WordPiece, HF and PaddleNLP weights
    pdx.models.detection  FCOS-style anchor-free detector, fixed-shape NMS, COCO mAP, generated shapes data
    pdx.models.ocr      CRNN text recognition (CTC, greedy/beam decoding) and DB text detection, rendered text data
    pdx.models.rec      CTR models (DeepFM, Wide&Deep) with sharded, sparsely trained embedding tables
    pdx.models.graph    GCN / GAT / GraphSAGE node classifiers, graph convs, neighbor sampling

Vision models live in `pdx.vision.models` (Paddle's place for them) and are
listed here too.
"""

from pdx.models import bert
from pdx.models import detection
from pdx.models import graph
from pdx.models import llama
from pdx.models import ocr
from pdx.models import rec
from pdx.models import _builtin  # noqa: F401  (registers llama and the vision models)
from pdx._config_check import ConfigError
from pdx.models._zoo import ZooEntry
from pdx.models._zoo import create
from pdx.models._zoo import from_pretrained
from pdx.models._zoo import get
from pdx.models._zoo import list  # noqa: A004
from pdx.models._zoo import register
from pdx.models._zoo import register_foreign
from pdx.models._zoo import save_pretrained

__all__ = ["ConfigError", "bert", "detection", "graph", "llama", "ocr", "rec", "ZooEntry", "create", "from_pretrained", "get", "list", "register", "register_foreign",
           "save_pretrained"]
