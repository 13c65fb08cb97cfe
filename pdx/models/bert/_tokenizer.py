"""WordPiece tokenization for BERT / ERNIE on Hugging Face `tokenizers`, through `pdx.text.Tokenizer`.

`train_wordpiece` learns a vocabulary from texts; `wordpiece_from_vocab`
reads a BERT `vocab.txt`. Both give a `pdx.text.Tokenizer` whose `encode`
adds [CLS] ... [SEP]; `encode_inputs` turns texts (and optional second
segments) into the padded (input_ids, token_type_ids, attention_mask)
arrays BertModel takes, truncating the longer segment first.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import numpy as np

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_MAX_VOCAB_BYTES = 64 << 20


def _wrap(backend, *, fixed_length: int | None):
    from tokenizers import processors

    from pdx.text import Tokenizer

    cls_id, sep_id = backend.token_to_id("[CLS]"), backend.token_to_id("[SEP]")
    if cls_id is None or sep_id is None or backend.token_to_id("[PAD]") is None:
        raise ValueError("WordPiece vocabulary must hold [PAD], [CLS] and [SEP]")
    backend.post_processor = processors.BertProcessing(("[SEP]", sep_id), ("[CLS]", cls_id))
    if fixed_length is not None:
        backend.enable_truncation(max_length=fixed_length)
        backend.enable_padding(length=fixed_length, pad_id=backend.token_to_id("[PAD]"), pad_token="[PAD]")
    return Tokenizer(backend, "tokenizers", pad_token="[PAD]", unk_token="[UNK]")


def _backend(vocab: dict | None, lowercase: bool):
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, normalizers, pre_tokenizers

    model = models.WordPiece(vocab, unk_token="[UNK]") if vocab is not None else models.WordPiece(unk_token="[UNK]")
    backend = HFTokenizer(model)
    backend.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                    strip_accents=None, lowercase=lowercase)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece(prefix="##")
    return backend


def train_wordpiece(corpus: Iterable[str], vocab_size: int = 8000, *, lowercase: bool = True,
                    min_frequency: int = 2, fixed_length: int | None = None):
    """Train a BERT WordPiece vocabulary (BERT's normalizer and pre-tokenizer, tokenizers' WordPieceTrainer).

    Args:
      corpus: texts.
      vocab_size: target size, special tokens included ([PAD]=0, [UNK], [CLS], [SEP], [MASK]).
      lowercase: lowercase the text (the "uncased" BERT models).
      min_frequency: pairs seen fewer times are not merged.
      fixed_length: if set, `encode` truncates and pads every text to this many
        tokens (stored in tokenizer.json: what `pdx serve --tokenizer` needs).

    Returns:
      A `pdx.text.Tokenizer`; `encode(text)` is `[CLS] pieces [SEP]`.

    Example:
      >>> tok = train_wordpiece(["the cat sat", "the dog sat"] * 20, vocab_size=60)
      >>> tok.decode(tok.encode("the cat"))
      '[CLS] the cat [SEP]'
    """
    from tokenizers import trainers

    if not isinstance(vocab_size, int) or vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"train_wordpiece: vocab_size must be an int > {len(SPECIAL_TOKENS)} (the special tokens); "
                         f"got {vocab_size!r}")
    backend = _backend(None, lowercase)
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=list(SPECIAL_TOKENS), show_progress=False)
    backend.train_from_iterator(corpus, trainer=trainer)
    return _wrap(backend, fixed_length=fixed_length)


def wordpiece_from_vocab(vocab_file, *, lowercase: bool = True, fixed_length: int | None = None):
    """A WordPiece tokenizer from a BERT `vocab.txt` (one token per line, id = line number).

    Example: `tok = wordpiece_from_vocab("/models/bert-base-uncased/vocab.txt")`.
    """
    vocab_file = os.fspath(vocab_file)
    if not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"wordpiece_from_vocab: {vocab_file!r} is not a file; pass the model's vocab.txt")
    if os.path.getsize(vocab_file) > _MAX_VOCAB_BYTES:
        raise ValueError(f"wordpiece_from_vocab: {vocab_file!r} is over {_MAX_VOCAB_BYTES >> 20} MiB; "
                         "not a vocabulary file")
    with open(vocab_file, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    vocab = {}
    for i, token in enumerate(tokens):
        vocab.setdefault(token, i)
    return _wrap(_backend(vocab, lowercase), fixed_length=fixed_length)


def _truncate_pair(a: list, b: list, budget: int) -> tuple[list, list]:
    """Drop tokens from the end of the longer segment until both fit (Hugging Face's longest_first;
    on a tie the second segment loses the token)."""
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
        (a if len(a) > len(b) else b).pop()
    return a, b


def encode_inputs(tokenizer, text: str | Sequence[str], text_pair: str | Sequence[str] | None = None, *,
                  max_length: int = 128, padding: str = "longest") -> dict[str, np.ndarray]:
    """BERT inputs for a batch: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, truncated and padded.

    Args:
      tokenizer: a WordPiece `pdx.text.Tokenizer` (`train_wordpiece`, `wordpiece_from_vocab`) with
        [CLS], [SEP] and [PAD] in its vocabulary.
      text: a text or a list of texts.
      text_pair: optional second segments (same count), token type 1.
      max_length: most tokens per row, special tokens included; the longer segment is cut first.
      padding: "longest" (to the longest row) or "max_length" (every row to max_length).

    Returns:
      {"input_ids", "token_type_ids", "attention_mask"}: int32 arrays (B, L); the mask is 1 on
      real tokens, 0 on padding.

    Example:
      >>> tok = train_wordpiece(["the cat sat", "the dog sat"] * 20, vocab_size=60)
      >>> encode_inputs(tok, ["the cat", "the dog sat"])["attention_mask"].tolist()
      [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    """
    single = isinstance(text, str)
    texts = [text] if single else list(text)
    pairs = None if text_pair is None else ([text_pair] if isinstance(text_pair, str) else list(text_pair))
    if not texts or not all(isinstance(t, str) for t in texts):
        raise TypeError(f"encode_inputs: text must be a str or a non-empty list of str; got {text!r:.80}")
    if pairs is not None and (len(pairs) != len(texts) or not all(isinstance(t, str) for t in pairs)):
        raise ValueError(f"encode_inputs: text_pair must hold one str per text ({len(texts)}); got {len(pairs)} values")
    if padding not in ("longest", "max_length"):
        raise ValueError(f"encode_inputs: padding must be 'longest' or 'max_length'; got {padding!r}")
    specials = 3 if pairs is not None else 2
    if not isinstance(max_length, int) or max_length <= specials:
        raise ValueError(f"encode_inputs: max_length must be an int > {specials} (the special tokens); "
                         f"got {max_length!r}")
    cls_id, sep_id, pad_id = (tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]"))
    if None in (cls_id, sep_id, pad_id):
        raise ValueError("encode_inputs: the tokenizer's vocabulary lacks [CLS], [SEP] or [PAD]; use a WordPiece "
                         "tokenizer from train_wordpiece or wordpiece_from_vocab")
    first = tokenizer.encode_batch(texts, add_special_tokens=False)
    second = tokenizer.encode_batch(pairs, add_special_tokens=False) if pairs is not None else [None] * len(texts)
    rows, types = [], []
    for a, b in zip(first, second):
        a = [i for i in a if i != pad_id]  # a fixed-length tokenizer pads even without special tokens
        b = None if b is None else [i for i in b if i != pad_id]
        a, b = _truncate_pair(a, b or [], max_length - specials)
        ids = [cls_id, *a, sep_id] + ([*b, sep_id] if pairs is not None else [])
        rows.append(ids)
        types.append([0] * (len(a) + 2) + [1] * (len(ids) - len(a) - 2))
    width = max_length if padding == "max_length" else max(len(r) for r in rows)
    input_ids = np.full((len(rows), width), pad_id, np.int32)
    token_type_ids = np.zeros((len(rows), width), np.int32)
    attention_mask = np.zeros((len(rows), width), np.int32)
    for i, (ids, tt) in enumerate(zip(rows, types)):
        input_ids[i, :len(ids)], token_type_ids[i, :len(ids)], attention_mask[i, :len(ids)] = ids, tt, 1
    return {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask}
