"""`pdx serve --llm DIR`: an OpenAI-compatible text-generation server over `LLMEngine`.

    POST /v1/completions          {"prompt": str, "max_tokens", "temperature", "top_p", "top_k", "stop",
                                   "seed", "stream"}
    POST /v1/chat/completions     {"messages": [{"role", "content"}, ...], same options}  (the chat template)
    GET  /v1/models               the one model
    GET  /health/live, /health/ready, /metrics (Prometheus text)

The model directory is a Hugging Face layout (config.json, *.safetensors,
tokenizer files) as `save_hf_pretrained` and the LLM recipes write. Bodies
are read with a size cap and parsed by pdx's JSON rule (depth checked);
every field is validated (400 naming it). A prompt that cannot fit the
context with its max_tokens gets 400; when every slot is busy requests wait,
and past `max_queue` waiting they get 503. `"stream": true` answers with
server-sent events, one `data: {...}` chunk per text delta and `data: [DONE]`.

Hardening (every request field, before any work):
- fields: unknown names, wrong types (a bool is not an int), NaN/Inf and
  out-of-range values (temperature >= 0, 0 < top_p <= 1, 0 <= top_k <= vocab,
  1 <= max_tokens < max_len, 1 <= n <= max_n), strings that are not Unicode
  (lone surrogates), prompt token ids outside the vocabulary: 400 naming the
  field (OpenAI's error object: message, type, param, code).
- budgets: the prompt's UTF-8 bytes are checked against `max_prompt_bytes`
  (default max_len x the longest token's bytes: no longer text can fit)
  before tokenizing; requests admitted are counted against max_slots +
  max_queue before tokenizing (503 beyond, exactly that many admitted).
- parsing of large bodies, tokenizing and chat-template rendering run on
  daemon threads, never on the event loop: `/health/live` and other streams
  keep going, template/tokenizer errors are 400, and shutdown never waits on
  a render.
- `n` choices are decoded as n requests (seeds seed, seed+1, ...).
- a stream holds back the tail that may begin a stop string, so streamed text
  equals the non-streamed text; a request whose client left or that timed out
  is cancelled and frees its slot at the next decode step.
- `/metrics` counts every response by status code (uncaught errors included;
  499: the client left); SIGTERM answers requests still waiting for a slot
  503 at once and those still generating 503 shortly before the grace period
  ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import math
import os
import sys
import threading
import time
import uuid

from pdx.export._server_batching import DaemonPool, settle_future
from pdx.export._server_decode import ClientDisconnected, HTTPError, read_body

from ._json_constraint import JSONObjectConstraint, JSONVocab, json_constraint

__all__ = ["check_vocab", "create_llm_app", "load_llm", "serve_llm"]

_log = logging.getLogger("uvicorn.error")

DEFAULT_MAX_SLOTS = 16
DEFAULT_MAX_LEN = 256
DEFAULT_MAX_N = 8
_MAX_STOP_CHARS = 128
_MAX_MESSAGES = 1024
_TEXT_THREADS = 2
_SWITCH_INTERVAL_S = 0.001
# Bodies larger than this are parsed on a pool thread, not on the event loop.
_INLINE_PARSE_BYTES = 64 * 1024


def _read_config(directory: str) -> dict:
    from pdx import _safefile

    path = os.path.join(directory, "config.json")
    raw = _safefile.read_file(path, max_bytes=1 << 20, what="config.json", root=directory, error=ValueError)
    config = _safefile.load_json(raw, what=path, error=ValueError)
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return config


def check_vocab(tokenizer, vocab_size: int, where: str = "model") -> None:
    """ValueError when the tokenizer can produce ids the model's embedding does not have.

    Example:
      >>> from pdx.text import train_bpe
      >>> check_vocab(train_bpe(["hello world"] * 20, vocab_size=270), 270)
    """
    if tokenizer.vocab_size > vocab_size:
        raise ValueError(f"{where}: the tokenizer has {tokenizer.vocab_size} ids but the model's vocabulary "
                         f"(vocab_size) has {vocab_size}; ids from {vocab_size} up would be out of range. "
                         "Use the tokenizer the model was trained with")


def load_llm(directory: str, tokenizer=None):
    """(model, tokenizer) from a Hugging Face-layout directory; the tokenizer must fit the model's vocabulary."""
    from pdx.models.llama import LlamaForCausalLM, config_from_hf, load_hf_safetensors
    from pdx.text import Tokenizer

    config = config_from_hf(_read_config(directory))
    tokenizer = Tokenizer.from_pretrained(directory) if tokenizer is None else tokenizer
    check_vocab(tokenizer, config.vocab_size, directory)  # before the weights are created
    model = LlamaForCausalLM(config)
    load_hf_safetensors(model, directory)
    return model, tokenizer


_ROUTES = {"/v1/completions": "completions", "/v1/chat/completions": "chat", "/v1/models": "models",
           "/health/live": "health", "/health/ready": "health", "/metrics": "metrics"}


class _Metrics:
    def __init__(self):
        self.requests = {}          # (route, status) -> count, of every response sent (499: the client left)
        self.stream_disconnects = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.ttft = []              # seconds to first token, last 1000

    def count(self, route: str, status: int) -> None:
        self.requests[(route, status)] = self.requests.get((route, status), 0) + 1

    def text(self, engine, outstanding: int) -> str:
        lines = [("# HELP pdx_llm_requests_total Responses sent, by route and HTTP status (499: the client left "
                  "before the answer)."), "# TYPE pdx_llm_requests_total counter"]
        lines += [f'pdx_llm_requests_total{{route="{r}",status="{s}"}} {n}' for (r, s), n in sorted(self.requests.items())]
        load = engine.load()
        lines += ["# TYPE pdx_llm_stream_disconnects_total counter",
                  f"pdx_llm_stream_disconnects_total {self.stream_disconnects}",
                  "# TYPE pdx_llm_prompt_tokens_total counter", f"pdx_llm_prompt_tokens_total {self.prompt_tokens}",
                  "# TYPE pdx_llm_completion_tokens_total counter",
                  f"pdx_llm_completion_tokens_total {self.completion_tokens}",
                  "# TYPE pdx_llm_active_slots gauge", f"pdx_llm_active_slots {load['active']}",
                  "# TYPE pdx_llm_waiting_requests gauge", f"pdx_llm_waiting_requests {load['waiting']}",
                  "# TYPE pdx_llm_admitted_requests gauge", f"pdx_llm_admitted_requests {outstanding}",
                  "# TYPE pdx_llm_decode_steps_total counter", f"pdx_llm_decode_steps_total {engine.stats['decode_steps']}"]
        kv = engine.kv_usage()
        lines += ["# TYPE pdx_llm_kv_blocks_used gauge", f"pdx_llm_kv_blocks_used {kv['blocks_used']}",
                  "# TYPE pdx_llm_kv_blocks_total gauge", f"pdx_llm_kv_blocks_total {kv['blocks_total']}",
                  "# TYPE pdx_llm_kv_tokens_held gauge", f"pdx_llm_kv_tokens_held {kv['tokens_held']}"]
        if engine.speculative is not None:
            spec = engine.spec_stats()
            lines += ["# TYPE pdx_llm_spec_proposed_tokens_total counter",
                      f"pdx_llm_spec_proposed_tokens_total {spec['proposed']}",
                      "# TYPE pdx_llm_spec_accepted_tokens_total counter",
                      f"pdx_llm_spec_accepted_tokens_total {spec['accepted']}"]
        if self.ttft:
            ordered = sorted(self.ttft)
            lines += ["# TYPE pdx_llm_time_to_first_token_seconds summary"]
            for q in (0.5, 0.9, 0.99):
                lines.append(f'pdx_llm_time_to_first_token_seconds{{quantile="{q}"}} '
                             f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.6f}")
        return "\n".join(lines) + "\n"


class _CountingApp:
    """The ASGI app, wrapped so that every response is counted by its status, 500s from uncaught errors included."""

    def __init__(self, app, metrics: _Metrics):
        self.app, self.metrics = app, metrics

    @property
    def state(self):
        return self.app.state

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        status = None

        async def counting_send(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:  # an error or a cancellation before the response started: the server answers 500
            self.metrics.count(_ROUTES.get(scope.get("path"), "other"), 500 if status is None else status)


# -- request fields ------------------------------------------------------------------------------------

def _bad(param: str, message: str, status: int = 400) -> HTTPError:
    error = HTTPError(status, message)
    error.param = param
    return error


def _number(body: dict, key: str, default, kind, low, high, *, open_low: bool = False):
    """body[key] (or `default` when absent/null): an int (bool refused) or a finite number within [low, high]."""
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise _bad(key, f"{key} must be {'a number' if kind is float else 'an integer'}; got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _bad(key, f"{key} must be a finite number; got {value!r}")
    if value < low or (open_low and value == low) or value > high:
        raise _bad(key, f"{key}={value!r} is out of range {'(' if open_low else '['}{low}, {high}]")
    return kind(value)


def _walk_strings(value, path: str) -> int:
    """UTF-8 bytes of every string in `value` (keys included); a lone surrogate is 400 naming where."""
    if isinstance(value, str):
        try:
            return len(value.encode("utf-8"))
        except UnicodeEncodeError as e:
            raise _bad(path, f"{path} is not valid Unicode ({e.reason} at character {e.start}: "
                             f"{value[e.start]!r}); send UTF-8 text") from None
    if isinstance(value, dict):
        return sum(_walk_strings(k, f"{path} key") + _walk_strings(v, f"{path}.{k}") for k, v in value.items())
    if isinstance(value, list):
        return sum(_walk_strings(v, f"{path}[{i}]") for i, v in enumerate(value))
    return 0


_COMMON_FIELDS = {"model", "max_tokens", "temperature", "top_p", "top_k", "stop", "seed", "stream", "stream_options",
                  "n", "user", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "stop_token_ids"}
_COMPLETION_FIELDS = _COMMON_FIELDS | {"prompt", "echo", "best_of", "suffix"}
_CHAT_FIELDS = _COMMON_FIELDS | {"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice",
                                     "response_format"}
_MESSAGE_FIELDS = {"role", "content", "name", "tool_calls", "tool_call_id"}


def _unsupported(body: dict, key: str, allowed) -> None:
    value = body.get(key)
    if value is not None and not any(value == a and type(value) is type(a) for a in allowed):
        raise _bad(key, f"{key}={value!r} is not supported by this server (only {' or '.join(map(repr, allowed))})")


def _options(body: dict, chat: bool, limits: dict):
    """(SamplingParams, n, stream, include_usage) from a request body, every field checked (400 naming it)."""
    from pdx.models.llama import SamplingParams

    unknown = sorted(set(body) - (_CHAT_FIELDS if chat else _COMPLETION_FIELDS))
    if unknown:
        raise _bad(unknown[0], f"unknown field(s) {unknown}; this route takes "
                               f"{sorted(_CHAT_FIELDS if chat else _COMPLETION_FIELDS)}")
    stop = body.get("stop")
    stop = [] if stop is None else [stop] if isinstance(stop, str) else stop
    if (not isinstance(stop, list) or len(stop) > 8
            or not all(isinstance(s, str) and 0 < len(s) <= _MAX_STOP_CHARS for s in stop)):
        raise _bad("stop", f"stop must be a non-empty string or a list of up to 8 of them, each at most "
                           f"{_MAX_STOP_CHARS} characters; got {body.get('stop')!r:.200}")
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise _bad("stream", f"stream must be true or false; got {stream!r}")
    include_usage = False
    options = body.get("stream_options")
    if options is not None:
        if not isinstance(options, dict) or set(options) - {"include_usage"} or not isinstance(
                options.get("include_usage", False), bool):
            raise _bad("stream_options", f'stream_options must be {{"include_usage": true|false}}; got {options!r:.200}')
        include_usage = options.get("include_usage", False)
    for key in ("model", "user"):
        if body.get(key) is not None and not (isinstance(body[key], str) and len(body[key]) <= 256):
            raise _bad(key, f"{key} must be a string of at most 256 characters; got {body[key]!r:.100}")
    for key in ("presence_penalty", "frequency_penalty"):
        _number(body, key, 0.0, float, -2.0, 2.0)
        _unsupported(body, key, (0, 0.0))
    _unsupported(body, "logit_bias", ({},))
    _unsupported(body, "echo", (False,))
    _unsupported(body, "suffix", ("",))
    _unsupported(body, "tool_choice", ("none", "auto"))
    max_tokens = _number(body, "max_tokens", None, int, 1, limits["max_tokens"])
    if chat:
        alias = _number(body, "max_completion_tokens", None, int, 1, limits["max_tokens"])
        if alias is not None and max_tokens is not None and alias != max_tokens:
            raise _bad("max_completion_tokens", f"max_completion_tokens={alias} and max_tokens={max_tokens} differ; "
                                                "send one of them")
        max_tokens = alias if max_tokens is None else max_tokens
    n = _number(body, "n", 1, int, 1, limits["n"])
    best_of = _number(body, "best_of", n, int, 1, limits["n"])
    if best_of != n:
        raise _bad("best_of", f"best_of={best_of} is not supported by this server unless it equals n={n}")
    params = SamplingParams(max_tokens=16 if max_tokens is None else max_tokens,
                            temperature=_number(body, "temperature", 1.0, float, 0.0, 100.0),
                            top_p=_number(body, "top_p", 1.0, float, 0.0, 1.0, open_low=True),
                            top_k=_number(body, "top_k", 0, int, 0, limits["vocab"]),
                            stop=tuple(stop), seed=_number(body, "seed", 0, int, 0, (1 << 32) - 1),
                            logprobs=_logprobs(body, chat), stop_token_ids=_stop_ids(body, limits["vocab"]))
    return params, n, stream, include_usage


def _logprobs(body: dict, chat: bool):
    """The engine's `logprobs=k` (None: off) from chat's logprobs + top_logprobs or completions' logprobs=k."""
    from pdx.models.llama import MAX_LOGPROBS

    if not chat:
        return _number(body, "logprobs", None, int, 0, MAX_LOGPROBS)
    on = body.get("logprobs")
    if on is not None and not isinstance(on, bool):
        raise _bad("logprobs", f"logprobs must be true or false for chat completions; got {on!r:.100}")
    top = _number(body, "top_logprobs", None, int, 0, MAX_LOGPROBS)
    if top is not None and not on:
        raise _bad("top_logprobs", f"top_logprobs={top} needs logprobs=true")
    return (top or 0) if on else None


def _stop_ids(body: dict, vocab: int) -> tuple:
    ids = body.get("stop_token_ids")
    if ids is None:
        return ()
    if (not isinstance(ids, list) or len(ids) > 64
            or not all(type(i) is int and 0 <= i < vocab for i in ids)):
        raise _bad("stop_token_ids", f"stop_token_ids must be a list of up to 64 token ids in [0, {vocab}); "
                                     f"got {ids!r:.200}")
    return tuple(ids)


def _messages(body: dict) -> list[dict]:
    """The chat messages, each checked: role str, content str (or text parts, or null beside tool_calls)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or len(messages) > _MAX_MESSAGES:
        raise _bad("messages", f"messages must be a non-empty list of at most {_MAX_MESSAGES} "
                               '{"role": str, "content": str} objects')
    out = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not m["role"] or len(m["role"]) > 64:
            raise _bad("messages", f'{where} must be an object with a "role" string; got {m!r:.200}')
        extra = sorted(set(m) - _MESSAGE_FIELDS)
        if extra:
            raise _bad("messages", f"{where} has unknown field(s) {extra}; a message takes {sorted(_MESSAGE_FIELDS)}")
        content = m.get("content")
        if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
            if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                       and set(p) <= {"type", "text"} for p in content):
                raise _bad("messages", f'{where}.content parts must be {{"type": "text", "text": str}}; this server '
                                       "takes text only")
            content = "".join(p["text"] for p in content)
        if content is None and m.get("tool_calls"):
            content = ""
        if not isinstance(content, str):
            raise _bad("messages", f'{where}.content must be a string; got {type(content).__name__}')
        message = {"role": m["role"], "content": content}
        for key in ("name", "tool_call_id"):
            if m.get(key) is not None:
                if not isinstance(m[key], str):
                    raise _bad("messages", f"{where}.{key} must be a string; got {m[key]!r:.100}")
                message[key] = m[key]
        if m.get("tool_calls") is not None:
            calls = m["tool_calls"]
            if not isinstance(calls, list) or len(calls) > 64 or not all(
                    isinstance(c, dict) and set(c) <= {"id", "type", "function"} and c.get("type", "function") == "function"
                    and isinstance(c.get("id", ""), str) and isinstance(c.get("function"), dict)
                    and set(c["function"]) <= {"name", "arguments"} and isinstance(c["function"].get("name"), str)
                    and isinstance(c["function"].get("arguments", ""), str) for c in calls):
                raise _bad("messages", f'{where}.tool_calls must be a list of {{"id": str, "type": "function", '
                                       '"function": {"name": str, "arguments": str}}')
            message["tool_calls"] = [{"id": c.get("id", ""), "type": "function",
                                      "function": {"name": c["function"]["name"],
                                                   "arguments": c["function"].get("arguments", "")}} for c in calls]
        out.append(message)
    return out


def _tools(body: dict):
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list) or len(tools) > 64 or not all(
            isinstance(t, dict) and t.get("type") == "function" and set(t) <= {"type", "function"}
            and isinstance(t.get("function"), dict) and isinstance(t["function"].get("name"), str)
            and set(t["function"]) <= {"name", "description", "parameters", "strict"} for t in tools):
        raise _bad("tools", 'tools must be a list of at most 64 {"type": "function", "function": {"name": str, '
                            '"description": str, "parameters": object}}')
    return tools


def _held(text: str, stops) -> int:
    """Length of the longest tail of `text` that begins a stop string: it may still become one, so it waits."""
    best = 0
    for stop in stops:
        for k in range(min(len(stop) - 1, len(text)), best, -1):
            if text.endswith(stop[:k]):
                best = k
                break
    return best


def _error_body(status: int, message: str, param=None) -> dict:
    kind = ("invalid_request_error" if status < 500 else "server_error") if status not in (408, 504) else "timeout"
    code = {503: "unavailable", 504: "timeout", 408: "timeout", 413: "too_large", 499: "client_closed"}.get(status)
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _error(status: int, message: str, param=None):
    from starlette.responses import JSONResponse

    headers = {"Retry-After": "1"} if status == 503 else None  # clients (openai's included) retry after it
    return JSONResponse(_error_body(status, message, param), status_code=status, headers=headers)


class _ClientGone(Exception):
    """The client closed its connection while its request was being answered."""


class _Ticket:
    """One HTTP request in flight: its engine requests, and a way for shutdown to answer it 503."""

    def __init__(self, loop):
        self.abort = loop.create_future()
        self.handles = []
        self.reserved = 0           # engine places held for it (admission), not yet handed back

    def queued(self) -> bool:
        """True while no engine request of it has produced a token (waiting for a slot, or not submitted)."""
        return not any(h.tokens or h.finish_reason for h in self.handles)

    def stop(self, message: str) -> None:
        if not self.abort.done():
            self.abort.set_result(message)
        for h in self.handles:
            h.cancelled = True


def _run_in_daemon(fn) -> asyncio.Future:
    """fn() on a fresh daemon thread, as a future of the running loop (never joined at exit)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def target():
        try:
            result, error = fn(), None
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting coroutine
            result, error = None, e
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle_future, future, result, error)

    threading.Thread(target=target, name="pdx-llm-aside", daemon=True).start()
    return future


def _longest_token_bytes(tokenizer) -> int:
    longest = 1
    for i in range(tokenizer.vocab_size):
        with contextlib.suppress(Exception):
            longest = max(longest, len(tokenizer.id_to_token(i).encode("utf-8", "replace")))
    return longest


class _LLMService:
    def __init__(self, directory, *, name, max_slots, max_len, max_queue, max_body_bytes, timeout_s,
                 max_json_depth, max_n, max_prompt_bytes, tokenizer=None, on_load_error=None, speculative=None,
                 num_speculative_tokens=4):
        self.directory, self.max_slots, self.max_len, self.max_queue = directory, max_slots, max_len, max_queue
        self.speculative, self.num_speculative_tokens = speculative, num_speculative_tokens
        self.max_body_bytes, self.timeout_s, self.max_json_depth = max_body_bytes, timeout_s, max_json_depth
        self.max_n, self.max_prompt_bytes = max_n, max_prompt_bytes
        self.name = name or (os.path.basename(os.path.normpath(directory)) if isinstance(directory, str) else "model")
        self.engine = None
        self.tokenizer = tokenizer
        self.vocab = None
        self.metrics = _Metrics()
        self.draining = False
        self.load_error = None
        self.outstanding = 0        # engine requests admitted (in a slot or waiting) and not finished
        self.tickets: set[_Ticket] = set()
        self.pool = None
        self.on_load_error = on_load_error

    @property
    def capacity(self) -> int:
        return self.max_slots + self.max_queue

    async def start(self):
        from pdx.models.llama import LLMEngine, SamplingParams, SpeculativeConfig

        self.pool = DaemonPool(_TEXT_THREADS, name="pdx-llm-text")
        # renders and tokenizers hold the GIL in slices: a shorter slice lets the event loop (health checks,
        # streams) in sooner while one runs
        sys.setswitchinterval(min(sys.getswitchinterval(), _SWITCH_INTERVAL_S))

        def load():
            if isinstance(self.directory, tuple):
                model, tok = self.directory
            else:
                model, tok = load_llm(self.directory, tokenizer=self.tokenizer)
            check_vocab(tok, model.config.vocab_size, self.name)
            spec = None
            if self.speculative is not None:
                draft = self.speculative
                if isinstance(draft, str) and draft != "ngram":   # a draft model directory sharing the tokenizer
                    draft = load_llm(draft, tokenizer=tok)[0]
                spec = (SpeculativeConfig("ngram", self.num_speculative_tokens) if draft == "ngram" else
                        SpeculativeConfig("draft", self.num_speculative_tokens, draft_model=draft))
            # the engine's own queue holds every request the server admits (admission is counted here)
            engine = LLMEngine(model, tok, max_slots=self.max_slots, max_len=self.max_len,
                               max_queue=self.max_slots + self.max_queue, speculative=spec)
            engine.generate(tok.encode("warm up")[: self.max_len - 2] or [0], SamplingParams(max_tokens=2, temperature=0))
            budget = self.max_prompt_bytes or min(self.max_body_bytes, self.max_len * _longest_token_bytes(tok))
            return engine, tok, model.config.vocab_size, budget

        try:
            self.engine, self.tokenizer, self.vocab, self.max_prompt_bytes = await _run_in_daemon(load)
        except Exception as e:  # noqa: BLE001 - reported on /health/ready and in the log
            self.load_error = f"{type(e).__name__}: {e}"
            _log.error("pdx serve --llm: cannot load the model: %s", self.load_error)
            if self.on_load_error is not None:
                self.on_load_error(self.load_error)

    async def stop(self):
        for ticket in list(self.tickets):
            ticket.stop("the server is shutting down")
        if self.pool is not None:
            self.pool.stop()
        if self.engine is not None:  # the engine thread ends after its current step; not waited for past 2 s
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(_run_in_daemon(self.engine.close)), 2.0)

    def begin_drain(self, grace_s: float) -> None:
        """Shutdown began: not ready; requests not started are answered 503 now, the rest shortly before
        `grace_s` runs out (uvicorn would cancel them, answering 500)."""
        self.draining = True
        for ticket in list(self.tickets):
            if ticket.queued():
                ticket.stop("the server is shutting down; this request had not started; retry later")

        def abort() -> None:
            for ticket in list(self.tickets):
                ticket.stop(f"the server is shutting down; generation did not finish within --graceful-timeout-s "
                            f"{grace_s:g} s")

        asyncio.get_running_loop().call_later(max(0.0, grace_s - min(0.5, grace_s / 2)), abort)

    # -- routes ----------------------------------------------------------------------------------------
    async def completions(self, request):
        return await self._generate(request, chat=False)

    async def chat_completions(self, request):
        return await self._generate(request, chat=True)

    async def _race(self, ticket: _Ticket, awaitable, what: str, disconnect=None):
        """The result of `awaitable`, unless shutdown, the client leaving or --timeout-s comes first."""
        future = asyncio.ensure_future(awaitable)
        waits = {future, ticket.abort} | ({disconnect} if disconnect is not None else set())
        done, _ = await asyncio.wait(waits, timeout=self.timeout_s, return_when=asyncio.FIRST_COMPLETED)
        if future in done:
            return future.result()
        future.cancel()
        if ticket.abort in done:
            raise HTTPError(503, ticket.abort.result())
        if disconnect is not None and disconnect in done:
            raise _ClientGone()
        raise HTTPError(504, f"{what} took longer than {self.timeout_s:g} s (--timeout-s)")

    def _parse(self, raw: bytes, chat: bool):
        """Body bytes -> (params, n, stream, include_usage, prompt): checked, no tokenizing (any thread)."""
        from pdx._safefile import load_json

        try:
            body = load_json(raw, what="request body", max_depth=self.max_json_depth, error=ValueError)
        except ValueError as e:
            raise _bad(None, f"the body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise _bad(None, "the body must be a JSON object")
        _walk_strings(body, "body")
        if body.get("model") is not None and body["model"] != self.name:
            raise _bad("model", f"the model {body['model']!r:.100} does not exist; this server serves "
                                f"{self.name!r} (GET /v1/models)", status=404)
        params, n, stream, include_usage = _options(
            body, chat, {"max_tokens": self.max_len - 1, "n": min(self.max_n, self.capacity), "vocab": self.vocab})
        if chat:
            messages, tools = _messages(body), _tools(body)
            size = _walk_strings(messages, "messages") + _walk_strings(tools, "tools")
            try:
                json_constraint(body.get("response_format"), lambda: None, 0)
            except ValueError as e:
                raise _bad("response_format", str(e)) from None
            prompt = ("chat", messages, tools, (body.get("response_format") or {}).get("type") == "json_object")
        else:
            text = body.get("prompt")
            if isinstance(text, str) and text:
                size, prompt = len(text.encode("utf-8")), ("text", text)
            elif (isinstance(text, list) and text and len(text) < self.max_len
                  and all(type(i) is int for i in text)):
                bad = next((i for i in text if not 0 <= i < self.vocab), None)
                if bad is not None:
                    raise _bad("prompt", f"prompt token id {bad} is outside the vocabulary [0, {self.vocab})")
                size, prompt = 0, ("ids", text)
            else:
                raise _bad("prompt", f"prompt must be a non-empty string or a list of fewer than {self.max_len} "
                                     "token ids (one prompt per request)")
        if size > self.max_prompt_bytes:
            raise _bad("messages" if chat else "prompt",
                       f"the prompt has {size} bytes, over the budget of {self.max_prompt_bytes} bytes per request: "
                       f"no text that long fits the context length {self.max_len}")
        return params, n, stream, include_usage, prompt

    def _tokenize(self, prompt) -> list[int]:
        """Token ids of a parsed prompt (runs on a pool thread: templates and tokenizers may be slow)."""
        kind = prompt[0]
        if kind == "ids":
            return list(prompt[1])
        if kind == "text":
            return self.tokenizer.encode(prompt[1])
        extra = {} if prompt[2] is None else {"tools": prompt[2]}
        return self.tokenizer.apply_chat_template(prompt[1], add_generation_prompt=True, **extra)

    def _reserve(self, ticket: _Ticket, n: int) -> None:
        if self.outstanding + n > self.capacity:
            raise HTTPError(503, f"the server is full ({self.outstanding} requests in {self.max_slots} slots or "
                                 f"waiting, --max-queue {self.max_queue}); retry later")
        self.outstanding += n
        ticket.reserved += n

    def _release(self, ticket: _Ticket, n: int = 1) -> None:
        n = min(n, ticket.reserved)
        ticket.reserved -= n
        self.outstanding -= n

    async def _generate(self, request, chat: bool):
        from starlette.responses import JSONResponse, StreamingResponse

        from pdx.models.llama import LLMEngine

        loop = asyncio.get_running_loop()
        ticket = _Ticket(loop)
        self.tickets.add(ticket)
        streaming = False
        disconnect = None
        try:
            if self.engine is None or self.draining:
                raise HTTPError(503, "the server is not ready (loading, failed to load, or shutting down)")
            try:
                raw = await asyncio.wait_for(read_body(request, self.max_body_bytes), self.timeout_s)
            except TimeoutError:
                raise HTTPError(408, f"request body not received within {self.timeout_s:g} s (--timeout-s)") from None
            if len(raw) <= _INLINE_PARSE_BYTES:
                params, n, stream, include_usage, prompt = self._parse(raw, chat)
            else:
                params, n, stream, include_usage, prompt = await self._race(
                    ticket, self.pool.run(self._parse, raw, chat), "reading the body")
            self._reserve(ticket, n)  # before any tokenizing: a full server answers 503 at once
            disconnect = asyncio.ensure_future(_disconnected(request))
            try:
                ids = await self._race(ticket, self.pool.run(self._tokenize, prompt),
                                       "rendering and tokenizing the prompt", disconnect)
            except (ValueError, TypeError) as e:  # TokenizerError / TemplateError: the client's input or template
                raise _bad("messages" if chat else "prompt", f"{'chat template' if chat else 'prompt'}: {e}") from None
            events: asyncio.Queue = asyncio.Queue()

            def on_event(index):
                def post(kind, payload):
                    with contextlib.suppress(RuntimeError):
                        loop.call_soon_threadsafe(self._on_event, ticket, events, index, kind, payload)
                return post

            for i in range(n):
                seeded = dataclasses.replace(params, seed=(params.seed + i) % (1 << 32))
                if chat and prompt[3]:
                    budget = min(params.max_tokens, self.max_len - len(ids))
                    seeded = dataclasses.replace(seeded, constraint=JSONObjectConstraint(self._json_vocab(), budget))
                try:
                    ticket.handles.append(self.engine.submit(ids, seeded, on_event(i)))
                except ValueError as e:
                    raise _bad("max_tokens", str(e)) from None
                except LLMEngine.QueueFull as e:
                    raise HTTPError(503, f"the server is full: {e}; retry later") from None
            self.metrics.prompt_tokens += len(ids)
            if stream:
                streaming = True
                return StreamingResponse(self._sse(ticket, events, ids, params, n, chat, include_usage),
                                         media_type="text/event-stream")
            done, logprobs = 0, [[] for _ in range(n)]
            while done < n:
                index, kind, payload = await self._race(ticket, events.get(), "generation", disconnect)
                done += kind == "done"
                if kind == "logprobs":
                    logprobs[index].append(payload)
            reasons = [h.finish_reason for h in ticket.handles]
            failed = next((r for r in reasons if r.startswith("error")), None)
            if failed is not None:
                raise HTTPError(500, f"generation failed: {failed}")
            self._finished(ticket)
            return JSONResponse({"id": _ident(chat), "object": "chat.completion" if chat else "text_completion",
                                 "created": int(time.time()), "model": self.name,
                                 "choices": [_choice(chat, i, h.text, h.finish_reason, False,
                                                     _logprobs_body(chat, logprobs[i], params.logprobs))
                                             for i, h in enumerate(ticket.handles)],
                                 "usage": _usage(ids, ticket.handles)})
        except HTTPError as e:
            ticket.stop(e.message)
            return _error(e.status, e.message, getattr(e, "param", None))
        except (ClientDisconnected, _ClientGone):
            ticket.stop("the client left")
            return _error(499, "the client closed the connection")
        except Exception as e:  # noqa: BLE001 - a server bug: an OpenAI-shaped 500, and the server keeps serving
            ticket.stop("internal error")
            _log.exception("pdx serve --llm: request failed")
            return _error(500, f"internal error: {type(e).__name__}: {e}")
        finally:
            if disconnect is not None:
                disconnect.cancel()
            if not streaming:
                self._forget(ticket)

    def _json_vocab(self):
        if getattr(self, "_json_vocab_cache", None) is None:
            self._json_vocab_cache = JSONVocab(self.tokenizer)  # once per tokenizer
        return self._json_vocab_cache

    def _on_event(self, ticket: _Ticket, events: asyncio.Queue, index: int, kind: str, payload) -> None:
        if kind == "done":
            self._release(ticket)
        events.put_nowait((index, kind, payload))

    def _forget(self, ticket: _Ticket) -> None:
        """The request is answered: cancel what still runs; places of unsubmitted requests are handed back."""
        self.tickets.discard(ticket)
        for h in ticket.handles:
            if h.finish_reason is None:
                h.cancelled = True  # its place comes back when the engine reports it done
        self._release(ticket, ticket.reserved - sum(h.finish_reason is None for h in ticket.handles))

    def _finished(self, ticket: _Ticket) -> None:
        for h in ticket.handles:
            self.metrics.completion_tokens += len(h.tokens)
            if h.first_token_s is not None:
                self.metrics.ttft = (self.metrics.ttft + [h.first_token_s])[-1000:]

    async def _sse(self, ticket, events, ids, params, n, chat, include_usage):
        ident, created = _ident(chat), int(time.time())
        kind = ("chat.completion" if chat else "text_completion") + ".chunk"
        acc, sent, left = [""] * n, [""] * n, n
        logprobs = [[] for _ in range(n)]

        def piece(i, text, finish=None):
            entries, logprobs[i] = logprobs[i], []
            return _choice(chat, i, text, finish, True, _logprobs_body(chat, entries, params.logprobs))

        def chunk(choices, usage=None):
            body = {"id": ident, "object": kind, "created": created, "model": self.name, "choices": choices}
            if usage is not None:
                body["usage"] = usage
            return f"data: {json.dumps(body)}\n\n"

        try:
            while left:
                try:
                    item = await self._race(ticket, events.get(), "generation (no token)")
                except HTTPError as e:
                    yield f"data: {json.dumps(_error_body(e.status, e.message))}\n\ndata: [DONE]\n\n"
                    return
                out = []
                while item is not None:
                    i, event, payload = item
                    if event == "logprobs":
                        logprobs[i].append(payload)
                    elif event == "token":
                        acc[i] += payload
                        keep = len(acc[i]) - _held(acc[i], params.stop)
                        if keep > len(sent[i]):
                            out.append(("text", i, acc[i][len(sent[i]):keep]))
                            sent[i] = acc[i][:keep]
                    else:  # done: the rest of the final text (stop strings cut), then the finish reason
                        final = ticket.handles[i].text
                        if final.startswith(sent[i]) and len(final) > len(sent[i]):
                            out.append(("text", i, final[len(sent[i]):]))
                            sent[i] = final
                        out.append(("done", i, payload))
                        left -= 1
                    item = events.get_nowait() if not events.empty() else None
                last = max((k for k, entry in enumerate(out) if entry[0] == "done"), default=-1) if not left else -1
                pieces, pending = [], {}
                for k, (what, i, value) in enumerate(out):
                    if what == "text":
                        pending[i] = pending.get(i, "") + value
                        continue
                    if i in pending:
                        pieces.append(chunk([piece(i, pending.pop(i))]))
                    if value.startswith("error"):
                        self._finished(ticket)
                        pieces.append(f"data: {json.dumps(_error_body(500, 'generation failed: ' + value))}\n\n"
                                      "data: [DONE]\n\n")
                        yield "".join(pieces)
                        return
                    pieces.append(chunk([piece(i, "", value)],
                                        _usage(ids, ticket.handles) if k == last else None))
                pieces += [chunk([piece(i, t)]) for i, t in pending.items()]
                if pieces:
                    yield "".join(pieces)
            self._finished(ticket)
            if include_usage:
                yield chunk([], _usage(ids, ticket.handles))
            yield "data: [DONE]\n\n"
        except BaseException:
            self.metrics.stream_disconnects += 1
            raise
        finally:
            ticket.stop("the stream ended")
            self._forget(ticket)

    async def models(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse({"object": "list", "data": [{"id": self.name, "object": "model", "owned_by": "pdx",
                                                          "max_len": self.max_len, "max_slots": self.max_slots}]})

    async def live(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "live"})

    async def ready(self, request):
        from starlette.responses import JSONResponse

        ok = self.engine is not None and not self.draining
        reason = ("ready" if ok else "shutting down" if self.draining else
                  f"failed to load: {self.load_error}" if self.load_error else "loading")
        return JSONResponse({"status": "ready" if ok else "not ready", "reason": reason},
                            status_code=200 if ok else 503)

    async def metrics_text(self, request):
        from starlette.responses import PlainTextResponse

        if self.engine is None:
            return PlainTextResponse("", status_code=503)
        return PlainTextResponse(self.metrics.text(self.engine, self.outstanding),
                                 media_type="text/plain; version=0.0.4")


async def _disconnected(request) -> None:
    """Returns when the client closes the connection (the body has been read; the next message says so)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _ident(chat: bool) -> str:
    return f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"


def _choice(chat: bool, index: int, text: str, finish, delta: bool, logprobs=None) -> dict:
    if chat:
        return {"index": index, "delta" if delta else "message": {"role": "assistant", "content": text},
                "finish_reason": finish, "logprobs": logprobs}
    return {"index": index, "text": text, "finish_reason": finish, "logprobs": logprobs}


def _by_text(top) -> dict:
    """Completions' {token text: logprob}: tokens that decode alike keep the most likely one's value."""
    out = {}
    for t in top:
        out.setdefault(t["token"], t["logprob"])
    return out


def _logprobs_body(chat: bool, entries, k):
    """OpenAI's logprobs object from the engine's logprobs events (None when the request did not ask)."""
    if k is None:
        return None
    if chat:
        return {"content": [{"token": e["token"], "logprob": e["logprob"], "bytes": e["bytes"],
                             "top_logprobs": [{"token": t["token"], "logprob": t["logprob"], "bytes": t["bytes"]}
                                              for t in e["top"]]} for e in entries]}
    return {"tokens": [e["token"] for e in entries], "token_logprobs": [e["logprob"] for e in entries],
            "top_logprobs": [_by_text(e["top"]) for e in entries],
            "text_offset": list(itertools.accumulate([0] + [len(e["token"]) for e in entries[:-1]]))
            if entries else []}


def _usage(ids, handles) -> dict:
    completion = sum(len(h.tokens) for h in handles)
    return {"prompt_tokens": len(ids), "completion_tokens": completion, "total_tokens": len(ids) + completion}


def create_llm_app(model, *, name: str | None = None, max_slots: int = DEFAULT_MAX_SLOTS,
                   max_len: int = DEFAULT_MAX_LEN, max_queue: int = 256, max_body_bytes: int = 1 << 20,
                   timeout_s: float = 120.0, max_json_depth: int = 32, max_n: int = DEFAULT_MAX_N,
                   max_prompt_bytes: int | None = None, on_load_error=None, speculative=None,
                   num_speculative_tokens: int = 4):
    """The ASGI app of `pdx serve --llm`.

    Args:
      model: a Hugging Face-layout model directory, or a (LlamaForCausalLM, Tokenizer) pair.
      name: the model name reported (default: the directory's name).
      max_slots: requests decoded together (KV-cache rows); max_len: positions per slot.
      max_queue: requests waiting for a slot; exactly max_slots + max_queue are admitted, more get 503.
      max_body_bytes, timeout_s, max_json_depth: request limits (413, 408/504, 400).
      max_n: the most choices (`n`) per request.
      max_prompt_bytes: the most UTF-8 bytes of prompt text per request, checked before tokenizing
        (default: max_len x the longest token's bytes, at most max_body_bytes).
      on_load_error: called with the reason if the model fails to load.
      speculative: None; "ngram" (prompt lookup); or a draft model (a directory like `model`, or a
        LlamaForCausalLM) with the same tokenizer: exact speculative decoding with
        `num_speculative_tokens` proposals per step.

    Raises:
      ValueError: a bad option, a directory without config.json, or a tokenizer with more ids than the
        model's vocabulary.

    Example:
      >>> app = create_llm_app("runs/llm_finetune/hf", max_slots=32)  # doctest: +SKIP
    """
    from starlette.applications import Starlette
    from starlette.routing import Route

    for arg, value in (("max_slots", max_slots), ("max_len", max_len), ("max_queue", max_queue),
                       ("max_body_bytes", max_body_bytes), ("max_json_depth", max_json_depth), ("max_n", max_n),
                       ("max_prompt_bytes", 1 if max_prompt_bytes is None else max_prompt_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"create_llm_app: {arg} must be a positive int; got {value!r}")
    if max_len < 2:
        raise ValueError(f"create_llm_app: max_len must be >= 2 (a prompt token and a generated one); got {max_len}")
    if (isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not math.isfinite(timeout_s)
            or timeout_s <= 0):
        raise ValueError(f"create_llm_app: timeout_s must be a finite number > 0; got {timeout_s!r}")
    if isinstance(num_speculative_tokens, bool) or not isinstance(num_speculative_tokens, int) \
            or not 1 <= num_speculative_tokens <= 16:
        raise ValueError(f"create_llm_app: num_speculative_tokens must be an int in [1, 16]; got "
                         f"{num_speculative_tokens!r}")
    if isinstance(speculative, str) and speculative != "ngram" and \
            not os.path.isfile(os.path.join(speculative, "config.json")):
        raise ValueError(f"pdx serve --llm: speculative={speculative!r} is neither 'ngram' nor a draft model "
                         "directory (no config.json); pass --speculative ngram or a directory like the model's")
    if speculative is not None and not isinstance(speculative, str) and not hasattr(speculative, "paged_forward"):
        raise ValueError(f"create_llm_app: speculative must be None, 'ngram', a draft model directory or a "
                         f"LlamaForCausalLM; got {type(speculative).__name__}")
    tokenizer = None
    if isinstance(model, str):
        if not os.path.isfile(os.path.join(model, "config.json")):
            raise ValueError(f"pdx serve --llm: {model!r} is not a model directory (no config.json); pass a "
                             "directory written by save_hf_pretrained or the LLM recipes")
        from pdx.models.llama import config_from_hf
        from pdx.text import Tokenizer

        try:  # cheap checks now, so that `pdx serve --llm` fails with a message before it binds
            vocab = config_from_hf(_read_config(model)).vocab_size
            tokenizer = Tokenizer.from_pretrained(model)
        except OSError as e:
            raise ValueError(f"pdx serve --llm: {model}: {e}") from None
        check_vocab(tokenizer, vocab, model)
    elif isinstance(model, tuple) and len(model) == 2:
        check_vocab(model[1], model[0].config.vocab_size, "create_llm_app")
    else:
        raise ValueError(f"create_llm_app: model must be a directory or a (LlamaForCausalLM, Tokenizer) pair; "
                         f"got {type(model).__name__}")
    service = _LLMService(model, name=name, max_slots=max_slots,
                          max_len=max_len, max_queue=max_queue, max_body_bytes=max_body_bytes, timeout_s=timeout_s,
                          max_json_depth=max_json_depth, max_n=max_n, max_prompt_bytes=max_prompt_bytes,
                          tokenizer=tokenizer, on_load_error=on_load_error, speculative=speculative,
                          num_speculative_tokens=num_speculative_tokens)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await service.start()
        try:
            yield
        finally:
            await service.stop()

    routes = [Route("/v1/completions", service.completions, methods=["POST"]),
              Route("/v1/chat/completions", service.chat_completions, methods=["POST"]),
              Route("/v1/models", service.models, methods=["GET"]),
              Route("/health/live", service.live, methods=["GET"]),
              Route("/health/ready", service.ready, methods=["GET"]),
              Route("/metrics", service.metrics_text, methods=["GET"])]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.service = service
    return _CountingApp(app, service.metrics)


def serve_llm(model, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info",
              ready_message: bool = True, header_timeout_s: float = 10.0, keep_alive_s: float = 5.0,
              graceful_timeout_s: float = 5.0, **options) -> None:
    """Serve `model` (see `create_llm_app`) until interrupted, with `pdx serve`'s connection limits.

    Raises RuntimeError when the model fails to load (the server stops at once).

    Example: `serve_llm("runs/llm_finetune/hf", port=8000, max_slots=32)`.
    """
    from pdx.export._server import run_app

    failure, server = [], []

    def on_load_error(reason: str) -> None:
        failure.append(reason)
        if server:
            server[0].should_exit = True

    app = create_llm_app(model, on_load_error=on_load_error, **options)
    run_app(app, host=host, port=port, log_level=log_level, ready_message=ready_message,
            header_timeout_s=header_timeout_s, keep_alive_s=keep_alive_s, graceful_timeout_s=graceful_timeout_s,
            on_server=server.append)
    if failure:
        raise RuntimeError(f"pdx serve --llm: cannot load the model: {failure[0]}")
