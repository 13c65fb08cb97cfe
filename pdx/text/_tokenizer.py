"""Tokenizer: one interface over Hugging Face `tokenizers` files and sentencepiece models, plus chat templates.

A directory in the Hugging Face layout (`tokenizer.json` or
`tokenizer.model`, `tokenizer_config.json` with special tokens and a Jinja
`chat_template`) loads with `Tokenizer.from_pretrained(dir)` and is written
back by `save_pretrained`. Every file is read through pdx's file rule
(regular files only, size caps, strict UTF-8 JSON) and a tokenizer.json's
regexes are checked for catastrophic backtracking at load; chat templates
run in Jinja's immutable sandbox under a `TemplateBudget` (time, size,
nesting; see `pdx.text._template`), so a template from a file can neither
call Python nor run unbounded.
`train_bpe` trains a byte-level BPE (exact round trip of any text).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

from pdx import _safefile
from pdx.text._errors import TokenizerError
from pdx.text._regex_check import regex_problem, tokenizer_regexes
from pdx.text._template import TemplateBudget, TemplateError, render_chat_template

__all__ = ["Tokenizer", "TokenizerError", "train_bpe"]

_MAX_TOKENIZER_BYTES = 256 << 20
_MAX_CONFIG_BYTES = 4 << 20


def _backend_call(what, action: str, func, *args, **kwargs):
    """Call the tokenizers library, turning its errors and Rust panics (a BaseException) into TokenizerError."""
    try:
        return func(*args, **kwargs)
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as e:  # noqa: BLE001 - pyo3's PanicException derives from BaseException
        kind = "panicked" if type(e).__name__ == "PanicException" else "failed"
        raise TokenizerError(f"{what}: the tokenizers library {kind} during {action} ({str(e).strip()[:300]}); "
                             "the tokenizer file's regex or configuration cannot handle this input") from None


def _special(config: dict, key: str):
    """A special token from tokenizer_config.json: a string or HF's {"content": ...} form."""
    value = config.get(key)
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


class Tokenizer:
    """Text <-> token ids, with special tokens and a chat template.

    Build one with `Tokenizer.from_file(path)` (a `tokenizer.json` or a
    sentencepiece `.model`), `Tokenizer.from_pretrained(directory)` or
    `train_bpe(...)`.

    Example:
      >>> from pdx.text import train_bpe
      >>> tok = train_bpe(["hello world", "hello there"] * 50, vocab_size=300)
      >>> tok.decode(tok.encode("hello world!"), skip_special_tokens=True)
      'hello world!'
    """

    def __init__(self, backend, kind: str, *, bos_token=None, eos_token=None, pad_token=None, unk_token=None,
                 chat_template: str | None = None, add_bos_token: bool | None = None, add_eos_token: bool = False):
        self._backend = backend
        self.kind = kind  # "tokenizers" or "sentencepiece"
        self.bos_token, self.eos_token, self.pad_token, self.unk_token = bos_token, eos_token, pad_token, unk_token
        self.chat_template = chat_template
        self.add_bos_token = add_bos_token
        self.add_eos_token = add_eos_token
        self.template_budget = TemplateBudget()

    # -- loading -------------------------------------------------------------------------------------
    @classmethod
    def from_file(cls, path, **special) -> Tokenizer:
        """A `tokenizer.json` (Hugging Face tokenizers) or a sentencepiece `.model` file."""
        path = os.fspath(path)
        data = _safefile.read_file(path, max_bytes=_MAX_TOKENIZER_BYTES, what="tokenizer file", error=TokenizerError)
        if data[:1] == b"{":
            from tokenizers import Tokenizer as HFTokenizer

            config = _safefile.load_json(data, what=path, error=TokenizerError)
            if not isinstance(config, dict):
                raise TokenizerError(f"{path}: a tokenizers JSON file is an object; got {type(config).__name__}")
            for where, pattern in tokenizer_regexes(config):
                problem = regex_problem(pattern)
                if problem is not None:
                    raise TokenizerError(f"{path}: the regex at {where} is refused: {problem}. A backtracking regex "
                                         "engine takes exponential time on it; rewrite it without nested or "
                                         "overlapping repetition")
            backend = _backend_call(path, "load", HFTokenizer.from_str, data.decode("utf-8"))
            return cls(backend, "tokenizers", **special)
        import sentencepiece as spm

        backend = spm.SentencePieceProcessor()
        try:
            backend.LoadFromSerializedProto(data)
        except Exception as e:
            raise TokenizerError(f"{path}: neither a tokenizers JSON file nor a sentencepiece model ({e})") from None
        defaults = {"bos_token": _piece(backend, backend.bos_id()), "eos_token": _piece(backend, backend.eos_id()),
                    "pad_token": _piece(backend, backend.pad_id()), "unk_token": _piece(backend, backend.unk_id())}
        return cls(backend, "sentencepiece", **{**defaults, **special})

    @classmethod
    def from_pretrained(cls, directory) -> Tokenizer:
        """A Hugging Face-layout directory: tokenizer.json or tokenizer.model, plus tokenizer_config.json."""
        directory = os.fspath(directory)
        if not os.path.isdir(directory):
            raise TokenizerError(f"Tokenizer.from_pretrained: {directory!r} is not a directory")
        config = {}
        config_path = os.path.join(directory, "tokenizer_config.json")
        if os.path.lexists(config_path):
            raw = _safefile.read_file(config_path, max_bytes=_MAX_CONFIG_BYTES, what="tokenizer_config.json",
                                      root=directory, error=TokenizerError)
            config = _safefile.load_json(raw, what=config_path, error=TokenizerError)
            if not isinstance(config, dict):
                raise TokenizerError(f"{config_path}: expected a JSON object")
        template = config.get("chat_template")
        if isinstance(template, list):  # HF's named-templates form: take "default"
            template = next((t.get("template") for t in template if isinstance(t, dict) and t.get("name") == "default"),
                            None)
        special = {key: _special(config, key) for key in ("bos_token", "eos_token", "pad_token", "unk_token")}
        special = {k: v for k, v in special.items() if v is not None}
        options = {"chat_template": template if isinstance(template, str) else None,
                   "add_bos_token": config.get("add_bos_token") if isinstance(config.get("add_bos_token"), bool) else None,
                   "add_eos_token": bool(config.get("add_eos_token", False))}
        for name in ("tokenizer.json", "tokenizer.model"):
            path = os.path.join(directory, name)
            if os.path.lexists(path):
                return cls.from_file(path, **special, **options)
        raise TokenizerError(f"Tokenizer.from_pretrained: {directory!r} has neither tokenizer.json nor tokenizer.model")

    def save_pretrained(self, directory) -> None:
        """Write tokenizer.json (or tokenizer.model) and tokenizer_config.json, loadable by transformers."""
        os.makedirs(directory, exist_ok=True)
        if self.kind == "tokenizers":
            self._backend.save(os.path.join(directory, "tokenizer.json"))
        else:
            with open(os.path.join(directory, "tokenizer.model"), "wb") as f:
                f.write(self._backend.serialized_model_proto())
        config = {"tokenizer_class": "PreTrainedTokenizerFast" if self.kind == "tokenizers" else "LlamaTokenizer",
                  "model_max_length": 1 << 30, "clean_up_tokenization_spaces": False}
        for key in ("bos_token", "eos_token", "pad_token", "unk_token"):
            if getattr(self, key) is not None:
                config[key] = getattr(self, key)
        if self.add_bos_token is not None:
            config["add_bos_token"] = self.add_bos_token
        config["add_eos_token"] = self.add_eos_token
        if self.chat_template is not None:
            config["chat_template"] = self.chat_template
        with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, ensure_ascii=False)

    # -- ids ------------------------------------------------------------------------------------------
    def token_to_id(self, token: str | None) -> int | None:
        if token is None:
            return None
        if self.kind == "tokenizers":
            return self._backend.token_to_id(token)
        i = self._backend.piece_to_id(token)
        return i if self._backend.id_to_piece(i) == token else None

    def id_to_token(self, i: int) -> str:
        return self._backend.id_to_token(i) if self.kind == "tokenizers" else self._backend.id_to_piece(i)

    @property
    def vocab_size(self) -> int:
        return self._backend.get_vocab_size() if self.kind == "tokenizers" else self._backend.get_piece_size()

    def __len__(self) -> int:
        return self.vocab_size

    bos_token_id = property(lambda self: self.token_to_id(self.bos_token))
    eos_token_id = property(lambda self: self.token_to_id(self.eos_token))
    pad_token_id = property(lambda self: self.token_to_id(self.pad_token))
    unk_token_id = property(lambda self: self.token_to_id(self.unk_token))

    # -- encode / decode ------------------------------------------------------------------------------
    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of `text`.

        `add_special_tokens`: a tokenizers file applies its own post-processor
        (its template adds BOS/EOS as configured); a sentencepiece model adds
        BOS unless `add_bos_token=False`, and EOS if `add_eos_token`.
        """
        if not isinstance(text, str):
            raise TypeError(f"Tokenizer.encode: text must be a str; got {type(text).__name__}")
        if self.kind == "tokenizers":
            ids = list(_backend_call("Tokenizer.encode", "encode", self._backend.encode, text,
                                     add_special_tokens=add_special_tokens).ids)
            if add_special_tokens and self.add_bos_token and self.bos_token_id is not None and ids[:1] != [self.bos_token_id]:
                ids = [self.bos_token_id] + ids
            return ids
        ids = list(self._backend.encode(text))
        if add_special_tokens:
            if self.add_bos_token is not False and self.bos_token_id is not None:
                ids = [self.bos_token_id] + ids
            if self.add_eos_token and self.eos_token_id is not None:
                ids = ids + [self.eos_token_id]
        return ids

    def encode_batch(self, texts: Sequence[str], add_special_tokens: bool = True) -> list[list[int]]:
        """`encode` of each text (the tokenizers library runs the batch on its own threads)."""
        if self.kind == "tokenizers" and not self.add_bos_token:
            batch = _backend_call("Tokenizer.encode_batch", "encode", self._backend.encode_batch, list(texts),
                                  add_special_tokens=add_special_tokens)
            return [list(e.ids) for e in batch]
        return [self.encode(t, add_special_tokens) for t in texts]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        ids = [int(i) for i in ids]
        if self.kind == "tokenizers":
            return self._backend.decode(ids, skip_special_tokens=skip_special_tokens)
        if skip_special_tokens:
            ids = [i for i in ids if not self._backend.IsControl(i)]
        return self._backend.decode(ids)

    def __call__(self, text, add_special_tokens: bool = True) -> dict:
        """{"input_ids": ...} for a str or a list of them (Paddle/HF's call form)."""
        if isinstance(text, str):
            return {"input_ids": self.encode(text, add_special_tokens)}
        return {"input_ids": self.encode_batch(list(text), add_special_tokens)}

    # -- chat -----------------------------------------------------------------------------------------
    def apply_chat_template(self, messages: Sequence[dict], add_generation_prompt: bool = False,
                            tokenize: bool = True, chat_template: str | None = None, *, tools: Sequence | None = None,
                            budget: TemplateBudget | None = None, **template_vars):
        """Render `messages` ([{"role": ..., "content": ...}, ...]) with the Jinja chat template.

        The template runs in Jinja's immutable sandbox with Hugging Face's
        variables (`messages`, `tools`, `add_generation_prompt`, `bos_token`,
        `eos_token`, `raise_exception`, `strftime_now`, plus `template_vars`)
        under `budget` (default `self.template_budget`, a `TemplateBudget`:
        2 s to render, 2 s to compile a new template, 64 KiB of template,
        4 MiB of input, 4 Mi characters of output, nesting 64). Returns ids (tokenize=True; no special tokens added
        beyond what the template writes) or the text.

        Raises `TemplateError` (a `TokenizerError`/`ValueError`; `.limit` names
        the budget field exceeded) for a template or input over budget and for
        any failure of the template on these messages. Thread-safe.

        Example:
          >>> tok = train_bpe(["hi there"] * 20, vocab_size=270,
          ...                 chat_template="{% for m in messages %}{{ m['content'] }}\\n{% endfor %}")
          >>> tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
          'hi\\n'
        """
        source = chat_template or self.chat_template
        if source is None:
            raise TokenizerError("apply_chat_template: this tokenizer has no chat_template; pass chat_template= "
                                 "or set tokenizer.chat_template")
        if not isinstance(messages, (list, tuple)) or not all(
                isinstance(m, dict) and "role" in m and "content" in m for m in messages):
            raise TemplateError("apply_chat_template: messages must be a list of {'role': ..., 'content': ...} dicts")
        variables = {**template_vars, "messages": list(messages), "add_generation_prompt": bool(add_generation_prompt),
                     "bos_token": self.bos_token or "", "eos_token": self.eos_token or ""}
        if tools is not None:
            variables["tools"] = list(tools) if isinstance(tools, (list, tuple)) else tools
        text = render_chat_template(source, variables, budget if budget is not None else self.template_budget)
        return self.encode(text, add_special_tokens=False) if tokenize else text

    def encode_chat(self, messages: Sequence[dict]) -> tuple[list[int], list[bool]]:
        """(ids, loss_mask) of a conversation: the mask is True on the assistant turns' tokens.

        Each assistant turn's tokens are those the template adds between the
        conversation rendered up to the prompt for that turn and rendered
        through the turn, so masking follows the template exactly.
        """
        ids = self.apply_chat_template(messages)
        mask = [False] * len(ids)
        for i, m in enumerate(messages):
            if m["role"] != "assistant":
                continue
            start = len(self.apply_chat_template(list(messages[:i]), add_generation_prompt=True))
            end = len(self.apply_chat_template(list(messages[:i + 1])))
            for j in range(start, min(end, len(ids))):
                mask[j] = True
        return ids, mask

    def __repr__(self) -> str:
        return f"Tokenizer({self.kind}, vocab_size={self.vocab_size}, bos={self.bos_token!r}, eos={self.eos_token!r})"


def _piece(backend, i: int):
    return backend.id_to_piece(i) if i is not None and i >= 0 else None


def train_bpe(corpus, vocab_size: int = 8000, *, special_tokens: Sequence[str] = ("<unk>", "<s>", "</s>", "<pad>"),
              min_frequency: int = 2, chat_template: str | None = None) -> Tokenizer:
    """Train a byte-level BPE tokenizer (GPT-2 style: any text round-trips exactly).

    Args:
      corpus: an iterable of texts, or a list of .txt / .jsonl file paths.
      vocab_size: target size including the 256 byte symbols and special tokens.
      special_tokens: unk, bos, eos, pad (in that order; fewer is fine).
      min_frequency: pairs seen fewer times are not merged.
      chat_template: a Jinja template stored with the tokenizer.

    Example:
      >>> tok = train_bpe(["abc abd"] * 20, vocab_size=270)
      >>> tok.decode(tok.encode("abd abc", add_special_tokens=False))
      'abd abc'
    """
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    if not isinstance(vocab_size, int) or vocab_size < 256 + len(special_tokens):
        raise TokenizerError(f"train_bpe: vocab_size must be an int >= 256 + {len(special_tokens)} special tokens; "
                             f"got {vocab_size!r}")
    backend = HFTokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=list(special_tokens),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    if isinstance(corpus, (list, tuple)) and corpus and all(isinstance(p, (os.PathLike,)) or (
            isinstance(p, str) and p.endswith((".txt", ".jsonl")) and os.path.isfile(p)) for p in corpus):
        from pdx.text._data import read_documents

        texts = read_documents(corpus)
    else:
        texts = corpus
    backend.train_from_iterator(texts, trainer=trainer)
    names = dict(zip(("unk_token", "bos_token", "eos_token", "pad_token"), special_tokens))
    if "bos_token" in names:  # encode(text) starts with BOS, as LLaMA-family tokenizers do
        from tokenizers import processors

        bos = names["bos_token"]
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, backend.token_to_id(bos))])
    return Tokenizer(backend, "tokenizers", chat_template=chat_template, **names)
