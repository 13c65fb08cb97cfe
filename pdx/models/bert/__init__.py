"""pdx.models.bert: BERT and ERNIE encoders (PaddleNLP's parameter names), task heads, WordPiece, HF import.

    BertConfig, ErnieConfig, PRESETS       hyperparameters (Hugging Face field names); bert-tiny, bert-mini,
                                           bert-base-uncased, ernie-3.0-tiny, ernie-3.0-medium-zh
    BertModel, ErnieModel                  embeddings -> post-LN Transformer encoder -> (sequence, pooled)
    BertFor{Sequence,Token}Classification, BertForQuestionAnswering   task heads (and the Ernie* ones)
    padding_mask                           PaddleNLP's additive attention mask from ids or a 0/1 mask
    train_wordpiece, wordpiece_from_vocab, encode_inputs   WordPiece tokenization ([CLS]/[SEP], pairs, padding)
    hf_to_pdx, config_from_hf, build_from_hf, load_hf_bert  import Hugging Face BERT / ERNIE checkpoints
"""

from pdx.models._zoo import register, register_foreign
from pdx.models.bert._config import PRESETS, BertConfig, ErnieConfig
from pdx.models.bert._hf import build_from_hf, config_from_hf, hf_to_pdx, load_hf_bert, num_params_from_hf
from pdx.models.bert._model import (
    BertEmbeddings,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    BertPooler,
    ErnieForQuestionAnswering,
    ErnieForSequenceClassification,
    ErnieForTokenClassification,
    ErnieModel,
    padding_mask,
)
from pdx.models.bert._tokenizer import encode_inputs, train_wordpiece, wordpiece_from_vocab

__all__ = [
    "PRESETS",
    "BertConfig",
    "BertEmbeddings",
    "BertForQuestionAnswering",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertModel",
    "BertPooler",
    "ErnieConfig",
    "ErnieForQuestionAnswering",
    "ErnieForSequenceClassification",
    "ErnieForTokenClassification",
    "ErnieModel",
    "build_from_hf",
    "config_from_hf",
    "encode_inputs",
    "hf_to_pdx",
    "load_hf_bert",
    "padding_mask",
    "train_wordpiece",
    "wordpiece_from_vocab",
]

_HEAD_ARGS = ("num_classes", "dropout")


def _builder(preset: str):
    config_class = PRESETS[preset][0]
    head = ErnieForSequenceClassification if config_class is ErnieConfig else BertForSequenceClassification

    def build(**overrides):
        head_args = {k: overrides.pop(k) for k in _HEAD_ARGS if k in overrides}
        return head(config_class.from_preset(preset, **overrides), **head_args)

    return build


def _num_params(preset: str):
    from pdx._config_check import MAX_CLASSES, Field, check

    config_class = PRESETS[preset][0]
    head_schema = {"num_classes": Field("int", lo=1, hi=MAX_CLASSES), "dropout": Field("float", lo=0.0, hi=0.999,
                                                                                        optional=True)}

    def num_params(**overrides):
        check(overrides, head_schema)
        fields = {k: v for k, v in overrides.items() if k not in _HEAD_ARGS}
        return config_class.from_preset(preset, **fields).num_params()

    return num_params


for _name, (_cls, _fields) in PRESETS.items():
    _family = "ernie" if _cls is ErnieConfig else "bert"
    register(_name, _builder(_name), family=_family, task="sequence-classification",
             config={**_cls.from_preset(_name).to_dict(), "num_classes": 2},
             description=f"{_cls.__name__[:-6]} encoder + pooled classifier; build(num_classes=, dropout=, "
                         "<config field>=...)", inputs=("input_ids:None,None:int32",), num_params=_num_params(_name))

register_foreign("bert", build_from_hf, hf_to_pdx, num_params=num_params_from_hf)
register_foreign("ernie", build_from_hf, hf_to_pdx, num_params=num_params_from_hf)
