"""Corpus -> tokens -> packed training rows.

    read_documents(paths)         (iter_documents: the same, streamed line by line) .txt (blank-line separated), .jsonl ("text" field), .csv, .parquet -> texts
    tokenize_corpus(...)          texts tokenized in worker processes -> a TokenFile on disk
    TokenFile(prefix)             PREFIX.bin (uint16/uint32 tokens, memory-mapped) + PREFIX.idx.npy (document
                                  offsets) + PREFIX.json (header): corpora larger than RAM
    pack_documents(docs, L)       in-memory packing: rows of L tokens, segment ids per document piece
    PackedDataset(file, L)        the same rows read from a TokenFile on demand (a pdx.io Dataset: shuffle,
                                  shard with DistributedBatchSampler, resume with DataLoader.state_dict)
    lm_targets(tokens, seg)       next-token labels, ignore_index where the next token is another document

A row's documents are numbered 1, 2, ... (segment id 0 is padding); with
`segment_ids` passed to the model's attention a token only sees its own
document, so packing changes no logits. Positions restart at 0 with each
document piece.
"""

from __future__ import annotations

import concurrent.futures
import csv
import itertools
import multiprocessing
import os
from collections.abc import Iterable, Sequence

import numpy as np

from pdx import _safefile
from pdx.io import Dataset
from pdx.text._errors import TokenizerError

__all__ = ["PackedDataset", "TokenFile", "bundled_corpus", "iter_documents", "lm_targets", "pack_documents",
           "read_documents", "tokenize_corpus"]

_MAX_SOURCE_BYTES = 8 << 30
_MAX_HEADER_BYTES = 1 << 20
_MAX_DOCUMENT_BYTES = 64 << 20


def bundled_corpus() -> list[str]:
    """Python's bundled help topics (`pydoc_data`, ~460 KB of English), one document per topic.

    Example:
      >>> docs = bundled_corpus()
      >>> len(docs) > 50 and all(isinstance(d, str) for d in docs)
      True
    """
    import pydoc_data.topics

    topics = pydoc_data.topics.topics
    return [topics[k] for k in sorted(topics)]


def read_documents(paths: Sequence, text_field: str = "text") -> list[str]:
    """Documents from files: .txt (blocks separated by blank lines), .jsonl / .csv / .parquet (`text_field`).

    Example: `docs = read_documents(["corpus.jsonl"])`.
    """
    return list(iter_documents(paths, text_field))


def iter_documents(paths: Sequence, text_field: str = "text", *, max_document_bytes: int = _MAX_DOCUMENT_BYTES):
    """`read_documents` as a stream: files are read line by line, so memory holds one document at a time.

    A line (or a .txt document) over `max_document_bytes` (64 MiB) is refused
    with its file and line number, before it is read whole.

    Example: `tokenize_corpus(iter_documents(["corpus.jsonl"]), tok, "data/corpus")`.
    """
    for path in paths:
        path = os.fspath(path)
        if path.endswith(".parquet"):
            yield from _parquet(path, text_field)
            continue
        if not path.endswith((".jsonl", ".csv", ".txt")):
            raise TokenizerError(f"{path}: unknown corpus format; use .txt, .jsonl, .csv or .parquet")
        fd, size = _safefile.open_regular(path, what="corpus file", error=TokenizerError)
        if size > _MAX_SOURCE_BYTES:
            os.close(fd)
            raise TokenizerError(f"{path}: {size} bytes, over the corpus file limit of {_MAX_SOURCE_BYTES}")
        with os.fdopen(fd, "rb") as f:
            lines = _lines(f, path, max_document_bytes)
            if path.endswith(".jsonl"):
                for n, line in lines:
                    if not line.strip():
                        continue
                    record = _safefile.load_json(line, what=f"{path} line {n}", error=TokenizerError)
                    if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
                        raise TokenizerError(f"{path} line {n}: expected an object with a string {text_field!r} "
                                             "field")
                    yield record[text_field]
            elif path.endswith(".csv"):
                reader = csv.DictReader(line for _, line in lines)
                if text_field not in (reader.fieldnames or []):
                    raise TokenizerError(f"{path}: no {text_field!r} column (columns: {reader.fieldnames})")
                for row in reader:
                    yield row[text_field]
            else:
                block, chars = [], 0
                for n, line in lines:
                    if line.strip():
                        block.append(line)
                        chars += len(line)
                        if chars > max_document_bytes:
                            raise TokenizerError(f"{path}: the document ending at line {n} is over "
                                                 f"max_document_bytes={max_document_bytes}")
                    elif block:
                        yield "".join(block).strip("\n")
                        block, chars = [], 0
                if block:
                    yield "".join(block).strip("\n")


def _lines(f, path: str, cap: int):
    """(line number, decoded line) of a binary file, refusing a line over `cap` bytes before reading it whole."""
    for n in itertools.count(1):
        raw = f.readline(cap + 1)
        if not raw:
            return
        if len(raw) > cap and not raw.endswith(b"\n"):
            raise TokenizerError(f"{path} line {n}: over max_document_bytes={cap}; split the document")
        try:
            yield n, raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise TokenizerError(f"{path} line {n}: not UTF-8 text ({e})") from None


def _parquet(path: str, text_field: str) -> list[str]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise TokenizerError(f"{path}: reading .parquet needs pyarrow (pip install pyarrow)") from None
    _safefile.open_regular(path, what="corpus file", error=TokenizerError)
    table = pq.read_table(path, columns=[text_field])
    return [str(t) for t in table.column(text_field).to_pylist()]


def pack_documents(docs: Iterable[Sequence[int]], seq_len: int, *, eos_id: int | None = None, pad_id: int = 0):
    """Pack token documents into rows of `seq_len`: (tokens, segment_ids, positions), each (rows, seq_len) int32.

    Documents are laid end to end (each followed by `eos_id` if given); a
    document that does not fit the rest of a row continues in the next row
    as a new piece. The last row is padded with `pad_id` / segment 0.

    Example:
      >>> t, s, p = pack_documents([[5, 6, 7], [8, 9]], 4)
      >>> t.tolist(), s.tolist(), p.tolist()
      ([[5, 6, 7, 8], [9, 0, 0, 0]], [[1, 1, 1, 2], [1, 0, 0, 0]], [[0, 1, 2, 0], [0, 0, 0, 0]])
    """
    if not isinstance(seq_len, int) or seq_len < 1:
        raise ValueError(f"pack_documents: seq_len must be a positive int; got {seq_len!r}")
    flat, doc_of = [], []
    for d, doc in enumerate(docs):
        doc = list(doc) + ([eos_id] if eos_id is not None else [])
        flat.extend(doc)
        doc_of.extend([d] * len(doc))
    return _rows(np.asarray(flat, np.int64), np.asarray(doc_of, np.int64), 0, len(flat), seq_len, pad_id,
                 rows=-(-len(flat) // seq_len))


def _rows(tokens, doc_of, start: int, stop: int, seq_len: int, pad_id: int, rows: int):
    """Rows [start, stop) of the token stream cut into seq_len pieces with per-row segment ids and positions."""
    n = rows * seq_len
    out_t = np.full(n, pad_id, np.int32)
    out_s = np.zeros(n, np.int32)
    out_p = np.zeros(n, np.int32)
    k = stop - start
    out_t[:k] = tokens[start:stop]
    docs = doc_of[start:stop]
    index = np.arange(k)
    row = index // seq_len
    # a piece starts at a row start or where the document changes
    starts = (index % seq_len == 0) | np.concatenate([[True], docs[1:] != docs[:-1]])
    piece = np.cumsum(starts)
    first_piece_of_row = piece[np.flatnonzero(index % seq_len == 0)]
    out_s[:k] = piece - first_piece_of_row[row] + 1
    piece_start = np.flatnonzero(starts)
    out_p[:k] = index - piece_start[piece - 1]
    shape = (rows, seq_len)
    return out_t.reshape(shape), out_s.reshape(shape), out_p.reshape(shape)


def lm_targets(tokens, segment_ids, ignore_index: int = -100):
    """Next-token labels of packed rows: `tokens[:, i+1]` where it is in the same document, else ignore_index.

    Example:
      >>> import numpy as np
      >>> lm_targets(np.array([[5, 6, 7, 8]]), np.array([[1, 1, 2, 2]])).tolist()
      [[6, -100, 8, -100]]
    """
    tokens, segment_ids = np.asarray(tokens), np.asarray(segment_ids)
    nxt = np.concatenate([tokens[:, 1:], np.zeros_like(tokens[:, :1])], axis=1)
    same = np.concatenate([segment_ids[:, 1:] == segment_ids[:, :-1], np.zeros_like(tokens[:, :1], bool)], axis=1)
    return np.where(same & (segment_ids > 0), nxt, ignore_index).astype(np.int32)


class TokenFile:
    """A tokenized corpus on disk, memory-mapped: PREFIX.bin + PREFIX.idx.npy + PREFIX.json.

    Example:
      >>> import tempfile, os
      >>> prefix = os.path.join(tempfile.mkdtemp(), "corpus")
      >>> TokenFile.write(prefix, [[1, 2, 3], [4]], vocab_size=10)
      >>> f = TokenFile(prefix)
      >>> len(f), f[0].tolist(), f.num_tokens
      (2, [1, 2, 3], 4)
    """

    def __init__(self, prefix):
        self.prefix = os.fspath(prefix)
        header_path = self.prefix + ".json"
        header = _safefile.load_json(_safefile.read_file(header_path, max_bytes=_MAX_HEADER_BYTES, what="token file "
                                                         "header", error=TokenizerError), what=header_path,
                                     error=TokenizerError)
        if not isinstance(header, dict) or header.get("format") != "pdx-tokens-1" or header.get("dtype") not in (
                "uint16", "uint32") or not isinstance(header.get("num_tokens"), int):
            raise TokenizerError(f"{header_path}: not a pdx token file header (format pdx-tokens-1)")
        self.dtype = np.dtype(header["dtype"])
        self.num_tokens = header["num_tokens"]
        self.vocab_size = header.get("vocab_size")
        _safefile.open_regular(self.prefix + ".idx.npy", what="token file index", error=TokenizerError)
        self.offsets = np.load(self.prefix + ".idx.npy", allow_pickle=False)
        size = os.stat(self.prefix + ".bin").st_size
        if size != self.num_tokens * self.dtype.itemsize or self.offsets.ndim != 1 or (
                len(self.offsets) and (self.offsets[0] != 0 or self.offsets[-1] != self.num_tokens)):
            raise TokenizerError(f"{self.prefix}: .bin holds {size} bytes but the header says {self.num_tokens} "
                                 f"{self.dtype} tokens, or the index does not cover them; the file is truncated "
                                 "or from another corpus: write it again")
        self._tokens = None

    @staticmethod
    def write(prefix, docs: Iterable[Sequence[int]], vocab_size: int) -> None:
        """Write token documents (each a sequence of ids < vocab_size)."""
        prefix = os.fspath(prefix)
        dtype = np.uint16 if vocab_size <= 1 << 16 else np.uint32
        offsets = [0]
        with open(prefix + ".bin", "wb") as f:
            for doc in docs:
                arr = doc if isinstance(doc, np.ndarray) and doc.dtype.kind in "iu" else np.asarray(doc, np.int64)
                if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= vocab_size):
                    raise TokenizerError(f"TokenFile.write: a token id is outside [0, {vocab_size})")
                f.write(arr.astype(dtype, copy=False).tobytes())
                offsets.append(offsets[-1] + arr.size)
        np.save(prefix + ".idx.npy", np.asarray(offsets, np.int64))
        import json

        with open(prefix + ".json", "w") as f:
            json.dump({"format": "pdx-tokens-1", "dtype": np.dtype(dtype).name, "num_tokens": offsets[-1],
                       "num_documents": len(offsets) - 1, "vocab_size": vocab_size}, f)

    @property
    def tokens(self) -> np.ndarray:
        if self._tokens is None:
            self._tokens = np.memmap(self.prefix + ".bin", dtype=self.dtype, mode="r", shape=(self.num_tokens,))
        return self._tokens

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return np.asarray(self.tokens[self.offsets[i]:self.offsets[i + 1]])

    def __getstate__(self):  # worker processes map the file themselves
        state = dict(self.__dict__)
        state["_tokens"] = None
        return state


class PackedDataset(Dataset):
    """Rows of `seq_len` tokens packed from a TokenFile, read on demand: dict(tokens, segment_ids, positions, labels).

    Row i is tokens [i * seq_len, (i + 1) * seq_len) of the corpus stream
    (documents end to end, as `pack_documents` lays them); `labels` are
    `lm_targets` (no target across a document boundary). A `pdx.io` Dataset:
    feed it to `DataLoader` (shuffle, workers, `DistributedBatchSampler`,
    resumable order through `DataLoader.state_dict`).

    Example: `loader = pdx.io.DataLoader(PackedDataset(TokenFile("corpus"), 512), batch_size=8, shuffle=True)`.
    """

    def __init__(self, token_file: TokenFile, seq_len: int, pad_id: int = 0, ignore_index: int = -100):
        if not isinstance(token_file, TokenFile):
            raise TypeError(f"PackedDataset: token_file must be a TokenFile; got {type(token_file).__name__}")
        if not isinstance(seq_len, int) or seq_len < 2:
            raise ValueError(f"PackedDataset: seq_len must be an int >= 2; got {seq_len!r}")
        self.file, self.seq_len, self.pad_id, self.ignore_index = token_file, seq_len, pad_id, ignore_index

    def __len__(self) -> int:
        return -(-self.file.num_tokens // self.seq_len)

    def __getitem__(self, i: int) -> dict:
        if not -len(self) <= i < len(self):
            raise IndexError(f"PackedDataset: row {i} out of range for {len(self)} rows")
        i %= len(self)
        start, stop = i * self.seq_len, min((i + 1) * self.seq_len, self.file.num_tokens)
        offsets = self.file.offsets
        first, last = np.searchsorted(offsets, start, "right") - 1, np.searchsorted(offsets, stop, "left")
        doc_of = np.repeat(np.arange(first, last), np.diff(offsets[first:last + 1]))
        doc_of = doc_of[start - offsets[first]:stop - offsets[first]]
        tokens = np.asarray(self.file.tokens[start:stop], np.int64)
        t, s, p = _rows(tokens, doc_of, 0, stop - start, self.seq_len, self.pad_id, rows=1)
        return {"tokens": t[0], "segment_ids": s[0], "positions": p[0],
                "labels": lm_targets(t, s, self.ignore_index)[0]}


_PIECE_CHARS = 1 << 16
_CUT_WINDOW = 1 << 10
_CHUNK_CHARS = 8 << 20
_PIECES_PER_BATCH = 8


def _specials(tokenizer) -> tuple[list[int], list[int]] | None:
    """The ids `encode` adds before and after a text (BOS, EOS...), found from a probe; None if not separable."""
    full = tokenizer.encode("a")
    bare = tokenizer.encode("a", add_special_tokens=False)
    for k in range(len(full) - len(bare) + 1):
        if full[k:k + len(bare)] == bare:
            return full[:k], full[k + len(bare):]
    return None


def _pieces(text: str, size: int):
    """`text` cut into pieces of at most `size` characters, each cut just before a whitespace where there is one."""
    pos = 0
    while len(text) - pos > size:
        end = pos + size
        window = text[end - _CUT_WINDOW:end]
        cut = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
        end = end - _CUT_WINDOW + cut if cut > 0 else end
        yield text[pos:end]
        pos = end
    yield text[pos:]


def _encode_long(tokenizer, text: str, specials, piece_chars: int, tail: list[int]) -> np.ndarray:
    """Token ids of a long text, encoded piece by piece so the library never holds the whole encoding."""
    dtype = _id_dtype(tokenizer.vocab_size)
    prefix, suffix = specials
    parts = [np.asarray(prefix, dtype)]
    pieces = _pieces(text, piece_chars)
    while group := list(itertools.islice(pieces, _PIECES_PER_BATCH)):  # the library encodes a batch on its threads
        parts.extend(np.asarray(ids, dtype) for ids in tokenizer.encode_batch(group, add_special_tokens=False))
    parts.append(np.asarray(suffix + tail, dtype))
    return np.concatenate(parts)


def _id_dtype(vocab_size: int):
    return np.uint16 if vocab_size <= 1 << 16 else np.uint32


def _encode_chunk(args):
    tokenizer, texts, add_eos, piece_chars = args
    eos = [tokenizer.eos_token_id] if add_eos and tokenizer.eos_token_id is not None else []
    short = [t for t in texts if len(t) <= piece_chars]
    encoded = iter(tokenizer.encode_batch(short)) if short else iter(())
    dtype = _id_dtype(tokenizer.vocab_size)
    specials = None
    out = []
    for t in texts:
        if len(t) <= piece_chars:
            out.append(np.asarray(next(encoded) + eos, dtype))
        else:
            specials = specials or _specials(tokenizer) or ([], [])
            out.append(_encode_long(tokenizer, t, specials, piece_chars, eos))
    return out


def _chunks(texts, tokenizer, add_eos, chunk_size: int, piece_chars: int):
    """Tasks of at most `chunk_size` documents and about `_CHUNK_CHARS` characters, read lazily from `texts`."""
    batch, chars = [], 0
    for t in texts:
        if not isinstance(t, str):
            raise TokenizerError(f"tokenize_corpus: texts must be strings; got {type(t).__name__}")
        batch.append(t)
        chars += len(t)
        if len(batch) >= chunk_size or chars >= _CHUNK_CHARS:
            yield tokenizer, batch, add_eos, piece_chars
            batch, chars = [], 0
    if batch:
        yield tokenizer, batch, add_eos, piece_chars


def _encoded(chunks, num_workers: int):
    """Encoded chunks in order; at most 2 * num_workers chunks are in flight, so memory stays bounded."""
    import collections

    first = list(itertools.islice(chunks, 2))
    if not num_workers or num_workers <= 0 or len(first) < 2:  # one chunk: no worker start-up
        for c in itertools.chain(first, chunks):
            yield _encode_chunk(c)
        return
    chunks = itertools.chain(first, chunks)
    with concurrent.futures.ProcessPoolExecutor(num_workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = collections.deque()
        for c in chunks:
            pending.append(pool.submit(_encode_chunk, c))
            while len(pending) >= 2 * num_workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def tokenize_corpus(texts: Iterable[str], tokenizer, out_prefix, *, num_workers: int = 2, chunk_size: int = 256,
                    add_eos: bool = True, piece_chars: int = _PIECE_CHARS) -> TokenFile:
    """Tokenize `texts` in `num_workers` worker processes and write them as a TokenFile (documents in order).

    `texts` is read lazily (a generator of documents streams). A document
    longer than `piece_chars` characters is encoded in pieces cut just
    before a whitespace (or at `piece_chars` where a piece has none), so a
    16 MiB line costs a few MB, not the library's GBs of offsets; its ids
    can differ from a one-shot `encode` only at those cuts. Special tokens
    the tokenizer adds (BOS/EOS) are added once per document.

    Example: `tokenize_corpus(iter_documents(["a.jsonl"]), tok, "data/corpus", num_workers=4)`.
    """
    if not isinstance(piece_chars, int) or piece_chars < 2 * _CUT_WINDOW:
        raise ValueError(f"tokenize_corpus: piece_chars must be an int >= {2 * _CUT_WINDOW}; got {piece_chars!r}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"tokenize_corpus: chunk_size must be a positive int; got {chunk_size!r}")
    chunks = _chunks(texts, tokenizer, add_eos, chunk_size, piece_chars)
    TokenFile.write(out_prefix, (ids for chunk in _encoded(chunks, num_workers) for ids in chunk),
                    tokenizer.vocab_size)
    return TokenFile(out_prefix)
