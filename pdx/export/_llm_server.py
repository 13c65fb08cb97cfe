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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import uuid

from pdx.export._server_decode import ClientDisconnected, HTTPError, read_body

__all__ = ["create_llm_app", "load_llm", "serve_llm"]

DEFAULT_MAX_SLOTS = 16
DEFAULT_MAX_LEN = 256


def load_llm(directory: str):
    """(model, tokenizer) from a Hugging Face-layout directory."""
    from pdx import _safefile
    from pdx.models.llama import LlamaForCausalLM, config_from_hf, load_hf_safetensors
    from pdx.text import Tokenizer

    path = os.path.join(directory, "config.json")
    raw = _safefile.read_file(path, max_bytes=1 << 20, what="config.json", root=directory, error=ValueError)
    config = _safefile.load_json(raw, what=path, error=ValueError)
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a JSON object")
    model = LlamaForCausalLM(config_from_hf(config))
    load_hf_safetensors(model, directory)
    return model, Tokenizer.from_pretrained(directory)


class _Metrics:
    def __init__(self):
        self.requests = {}          # (route, status) -> count
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.ttft = []              # seconds to first token, last 1000

    def count(self, route: str, status: int) -> None:
        self.requests[(route, status)] = self.requests.get((route, status), 0) + 1

    def text(self, engine) -> str:
        lines = ["# TYPE pdx_llm_requests_total counter"]
        lines += [f'pdx_llm_requests_total{{route="{r}",status="{s}"}} {n}' for (r, s), n in sorted(self.requests.items())]
        load = engine.load()
        lines += ["# TYPE pdx_llm_prompt_tokens_total counter", f"pdx_llm_prompt_tokens_total {self.prompt_tokens}",
                  "# TYPE pdx_llm_completion_tokens_total counter",
                  f"pdx_llm_completion_tokens_total {self.completion_tokens}",
                  "# TYPE pdx_llm_active_slots gauge", f"pdx_llm_active_slots {load['active']}",
                  "# TYPE pdx_llm_waiting_requests gauge", f"pdx_llm_waiting_requests {load['waiting']}",
                  "# TYPE pdx_llm_decode_steps_total counter", f"pdx_llm_decode_steps_total {engine.stats['decode_steps']}"]
        if self.ttft:
            ordered = sorted(self.ttft)
            lines += ["# TYPE pdx_llm_time_to_first_token_seconds summary"]
            for q in (0.5, 0.9, 0.99):
                lines.append(f'pdx_llm_time_to_first_token_seconds{{quantile="{q}"}} '
                             f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.6f}")
        return "\n".join(lines) + "\n"


def _number(body: dict, key: str, default, kind, low=None, high=None):
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise HTTPError(400, f"{key} must be {'a number' if kind is float else 'an integer'}; got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise HTTPError(400, f"{key}={value!r} is out of range [{low}, {high}]")
    return kind(value)


def _params(body: dict, max_tokens_limit: int):
    from pdx.models.llama import SamplingParams

    stop = body.get("stop") or []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop) or len(stop) > 8:
        raise HTTPError(400, "stop must be a non-empty string or a list of up to 8 of them")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise HTTPError(400, f"stream must be true or false; got {stream!r}")
    params = SamplingParams(max_tokens=_number(body, "max_tokens", 16, int, 1, max_tokens_limit),
                            temperature=_number(body, "temperature", 1.0, float, 0.0, 100.0),
                            top_p=_number(body, "top_p", 1.0, float, 1e-9, 1.0),
                            top_k=_number(body, "top_k", 0, int, 0, 1 << 20),
                            stop=tuple(stop), seed=_number(body, "seed", 0, int, 0, (1 << 32) - 1))
    return params, stream


class _LLMService:
    def __init__(self, directory, *, name, max_slots, max_len, max_queue, max_body_bytes, timeout_s,
                 max_json_depth):
        self.directory, self.max_slots, self.max_len, self.max_queue = directory, max_slots, max_len, max_queue
        self.max_body_bytes, self.timeout_s, self.max_json_depth = max_body_bytes, timeout_s, max_json_depth
        self.name = name or (os.path.basename(os.path.normpath(directory)) if isinstance(directory, str) else "model")
        self.engine = None
        self.tokenizer = None
        self.metrics = _Metrics()
        self.draining = False

    async def start(self):
        from pdx.models.llama import LLMEngine, SamplingParams

        def load():
            if isinstance(self.directory, tuple):
                model, tok = self.directory
            else:
                model, tok = load_llm(self.directory)
            engine = LLMEngine(model, tok, max_slots=self.max_slots, max_len=self.max_len, max_queue=self.max_queue)
            engine.generate(tok.encode("warm up")[: self.max_len - 2], SamplingParams(max_tokens=2, temperature=0))
            return engine, tok

        self.engine, self.tokenizer = await asyncio.to_thread(load)

    async def stop(self):
        if self.engine is not None:
            await asyncio.to_thread(self.engine.close)

    # -- routes ----------------------------------------------------------------------------------------
    async def completions(self, request):
        return await self._generate(request, chat=False)

    async def chat_completions(self, request):
        return await self._generate(request, chat=True)

    async def _body(self, request) -> dict:
        from pdx._safefile import load_json

        body = await asyncio.wait_for(read_body(request, self.max_body_bytes), self.timeout_s)
        try:
            parsed = load_json(body, what="request body", max_depth=self.max_json_depth, error=ValueError)
        except ValueError as e:
            raise HTTPError(400, f"the body is not valid JSON: {e}") from None
        if not isinstance(parsed, dict):
            raise HTTPError(400, "the body must be a JSON object")
        return parsed

    def _prompt(self, body: dict, chat: bool) -> list[int]:
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages or not all(
                    isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                    for m in messages):
                raise HTTPError(400, "messages must be a non-empty list of {\"role\": str, \"content\": str}")
            try:
                return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True)
            except ValueError as e:
                raise HTTPError(400, str(e)) from None
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt:
            raise HTTPError(400, "prompt must be a non-empty string")
        return self.tokenizer.encode(prompt)

    async def _generate(self, request, chat: bool):
        from starlette.responses import JSONResponse, StreamingResponse

        from pdx.models.llama import LLMEngine

        route = "chat" if chat else "completions"
        try:
            if self.engine is None or self.draining:
                raise HTTPError(503, "the server is not ready (loading or shutting down)")
            body = await self._body(request)
            params, stream = _params(body, self.max_len)
            prompt = self._prompt(body, chat)
            loop = asyncio.get_running_loop()
            events: asyncio.Queue = asyncio.Queue()

            def on_event(kind, payload):
                loop.call_soon_threadsafe(events.put_nowait, (kind, payload))

            try:
                handle = self.engine.submit(prompt, params, on_event)
            except ValueError as e:
                raise HTTPError(400, str(e)) from None
            except LLMEngine.QueueFull as e:
                raise HTTPError(503, f"the server is full: {e}; retry later") from None
        except HTTPError as e:
            self.metrics.count(route, e.status)
            return JSONResponse({"error": {"message": e.message, "type": "invalid_request_error"
                                           if e.status < 500 else "server_error"}}, status_code=e.status)
        except (ClientDisconnected, asyncio.TimeoutError):
            self.metrics.count(route, 408)
            return JSONResponse({"error": {"message": "request body not received in time"}}, status_code=408)
        self.metrics.prompt_tokens += len(prompt)
        ident = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        kind = "chat.completion" if chat else "text_completion"

        def choice(text, finish, delta: bool):
            if chat:
                key = "delta" if delta else "message"
                return {"index": 0, key: {"role": "assistant", "content": text}, "finish_reason": finish}
            return {"index": 0, "text": text, "finish_reason": finish, "logprobs": None}

        def usage():
            return {"prompt_tokens": len(prompt), "completion_tokens": len(handle.tokens),
                    "total_tokens": len(prompt) + len(handle.tokens)}

        def finished(reason):
            self.metrics.completion_tokens += len(handle.tokens)
            if handle.first_token_s is not None:
                self.metrics.ttft = (self.metrics.ttft + [handle.first_token_s])[-1000:]

        if stream:
            async def sse():
                pending = None
                try:
                    while True:
                        event, payload = pending or await events.get()
                        pending = None
                        if event == "token":
                            # deltas that queued while this client was being written to go out as one chunk
                            while not events.empty():
                                more = events.get_nowait()
                                if more[0] != "token":
                                    pending = more
                                    break
                                payload += more[1]
                            chunk = {"id": ident, "object": f"{kind}.chunk", "created": created, "model": self.name,
                                     "choices": [choice(payload, None, True)]}
                            yield f"data: {json.dumps(chunk)}\n\n"
                        else:
                            finished(payload)
                            last = {"id": ident, "object": f"{kind}.chunk", "created": created, "model": self.name,
                                    "choices": [choice("", payload, True)], "usage": usage()}
                            yield f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n"
                            return
                finally:
                    handle.cancelled = True  # a client that goes away frees its slot at the next step

            self.metrics.count(route, 200)
            return StreamingResponse(sse(), media_type="text/event-stream")
        try:
            while True:
                event, payload = await asyncio.wait_for(events.get(), self.timeout_s)
                if event == "done":
                    break
        except asyncio.TimeoutError:
            handle.cancelled = True
            self.metrics.count(route, 504)
            return JSONResponse({"error": {"message": f"generation took longer than {self.timeout_s}s"}},
                                status_code=504)
        finished(payload)
        self.metrics.count(route, 200)
        return JSONResponse({"id": ident, "object": kind, "created": created, "model": self.name,
                             "choices": [choice(handle.text, handle.finish_reason, False)], "usage": usage()})

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
        return JSONResponse({"status": "ready" if ok else "not ready"}, status_code=200 if ok else 503)

    async def metrics_text(self, request):
        from starlette.responses import PlainTextResponse

        if self.engine is None:
            return PlainTextResponse("", status_code=503)
        return PlainTextResponse(self.metrics.text(self.engine), media_type="text/plain; version=0.0.4")

    def begin_drain(self, grace_s: float) -> None:
        self.draining = True


def create_llm_app(model, *, name: str | None = None, max_slots: int = DEFAULT_MAX_SLOTS,
                   max_len: int = DEFAULT_MAX_LEN, max_queue: int = 256, max_body_bytes: int = 1 << 20,
                   timeout_s: float = 120.0, max_json_depth: int = 32):
    """The starlette app of `pdx serve --llm`.

    Args:
      model: a Hugging Face-layout model directory, or a (LlamaForCausalLM, Tokenizer) pair.
      name: the model name reported (default: the directory's name).
      max_slots: requests decoded together (KV-cache rows); max_len: positions per slot.
      max_queue: requests waiting for a slot before 503.
      max_body_bytes, timeout_s, max_json_depth: request limits (413, 408/504, 400).

    Example:
      >>> app = create_llm_app("runs/llm_finetune/hf", max_slots=32)  # doctest: +SKIP
    """
    from starlette.applications import Starlette
    from starlette.routing import Route

    for arg, value in (("max_slots", max_slots), ("max_len", max_len), ("max_queue", max_queue),
                       ("max_body_bytes", max_body_bytes), ("max_json_depth", max_json_depth)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"create_llm_app: {arg} must be a positive int; got {value!r}")
    if isinstance(model, str) and not os.path.isfile(os.path.join(model, "config.json")):
        raise ValueError(f"pdx serve --llm: {model!r} is not a model directory (no config.json); pass a directory "
                         "written by save_hf_pretrained or the LLM recipes")
    service = _LLMService(model, name=name, max_slots=max_slots,
                          max_len=max_len, max_queue=max_queue, max_body_bytes=max_body_bytes, timeout_s=timeout_s,
                          max_json_depth=max_json_depth)

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
    return app


def serve_llm(model, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info",
              ready_message: bool = True, header_timeout_s: float = 10.0, keep_alive_s: float = 5.0,
              graceful_timeout_s: float = 5.0, **options) -> None:
    """Serve `model` (see `create_llm_app`) until interrupted, with `pdx serve`'s connection limits.

    Example: `serve_llm("runs/llm_finetune/hf", port=8000, max_slots=32)`.
    """
    from pdx.export._server import run_app

    app = create_llm_app(model, **options)
    run_app(app, host=host, port=port, log_level=log_level, ready_message=ready_message,
            header_timeout_s=header_timeout_s, keep_alive_s=keep_alive_s, graceful_timeout_s=graceful_timeout_s)
