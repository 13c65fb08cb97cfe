"""pdx.text: tokenizers, chat templates and the corpus -> packed-rows data pipeline for language models.

    Tokenizer          Hugging Face tokenizers (tokenizer.json) or sentencepiece (.model); from_pretrained /
                       save_pretrained in the Hugging Face layout; apply_chat_template, encode_chat
    TemplateBudget, TemplateError, render_chat_template   chat templates under a time/size/nesting budget
    train_bpe          byte-level BPE trained on texts or files (`pdx text train-bpe`)
    read_documents, bundled_corpus, tokenize_corpus (worker processes), TokenFile (memory-mapped)
    pack_documents, PackedDataset, lm_targets    rows of seq_len tokens with segment ids per document
    perplexity, multiple_choice, load_choice_task  evaluation of a causal LM (held-out tokens; lm-eval style tasks)
    viterbi_decode, ViterbiDecoder                 Paddle's CRF decoding (`paddle.text`)
"""

from pdx.text._data import (
    PackedDataset,
    TokenFile,
    bundled_corpus,
    iter_documents,
    lm_targets,
    pack_documents,
    read_documents,
    tokenize_corpus,
)
from pdx.text._errors import TokenizerError
from pdx.text._eval import load_choice_task, multiple_choice, perplexity
from pdx.text._template import TemplateBudget, TemplateError, render_chat_template
from pdx.text._tokenizer import Tokenizer, train_bpe
from pdx.text._viterbi import ViterbiDecoder, viterbi_decode

__all__ = [
    "PackedDataset",
    "TemplateBudget",
    "TemplateError",
    "TokenFile",
    "Tokenizer",
    "TokenizerError",
    "ViterbiDecoder",
    "bundled_corpus",
    "iter_documents",
    "lm_targets",
    "load_choice_task",
    "multiple_choice",
    "pack_documents",
    "perplexity",
    "read_documents",
    "render_chat_template",
    "tokenize_corpus",
    "train_bpe",
    "viterbi_decode",
]
