"""`pdx text`: train a BPE tokenizer, tokenize a corpus into a TokenFile."""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="text_command", metavar="SUBCOMMAND", required=True)
    train = sub.add_parser("train-bpe", help="train a byte-level BPE tokenizer; writes a Hugging Face directory")
    train.add_argument("corpus", nargs="*", help=".txt/.jsonl/.csv/.parquet files (default: Python's bundled docs)")
    train.add_argument("--vocab-size", type=int, default=8000)
    train.add_argument("--min-frequency", type=int, default=2)
    train.add_argument("--out", required=True, help="output directory (tokenizer.json, tokenizer_config.json)")
    train.set_defaults(func=_train)
    tok = sub.add_parser("tokenize", help="tokenize a corpus with worker processes into PREFIX.bin/.idx.npy/.json")
    tok.add_argument("corpus", nargs="*", help="corpus files (default: Python's bundled docs)")
    tok.add_argument("--tokenizer", required=True, help="a tokenizer directory or tokenizer.json / .model file")
    tok.add_argument("--out", required=True, help="output prefix")
    tok.add_argument("--workers", type=int, default=2)
    tok.set_defaults(func=_tokenize)


def _texts(paths):
    from pdx.text import bundled_corpus, read_documents

    return read_documents(paths) if paths else bundled_corpus()


def _stream(paths):
    from pdx.text import bundled_corpus, iter_documents

    return iter_documents(paths) if paths else iter(bundled_corpus())


def _load(path):
    import os

    from pdx.text import Tokenizer

    return Tokenizer.from_pretrained(path) if os.path.isdir(path) else Tokenizer.from_file(path)


def _guard(func):
    from pdx.text import TokenizerError

    def run(args) -> int:
        try:
            return func(args)
        except (TokenizerError, FileNotFoundError) as e:
            print(f"pdx text: {e}", file=sys.stderr)
            return 2

    return run


@_guard
def _train(args) -> int:
    from pdx.text import train_bpe

    texts = _texts(args.corpus)
    tok = train_bpe(texts, vocab_size=args.vocab_size, min_frequency=args.min_frequency)
    tok.save_pretrained(args.out)
    print(f"trained byte-level BPE: {tok.vocab_size} tokens on {len(texts)} documents -> {args.out}")
    return 0


def _tokenize_impl(args) -> int:
    from pdx.text import tokenize_corpus

    tok = _load(args.tokenizer)
    texts = _stream(args.corpus)
    out = tokenize_corpus(texts, tok, args.out, num_workers=args.workers)
    print(f"{len(out)} documents, {out.num_tokens} tokens ({out.dtype}) -> {args.out}.bin")
    return 0


_tokenize = _guard(_tokenize_impl)
