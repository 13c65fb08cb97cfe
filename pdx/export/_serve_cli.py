"""`pdx serve ARTIFACT`: serve an exported artifact over HTTP (see pdx/export/README.md)."""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import logging
import os
import sys
import threading

from pdx.export import _server

__all__ = ["configure"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add `pdx serve`'s arguments to `parser` and set `func`."""
    parser.add_argument("artifact", help="artifact directory written by pdx export / pdx.export.export "
                                         "(a local path; URLs are refused)")
    parser.add_argument("--host", default=_server.DEFAULT_HOST,
                        help="interface to bind (default %(default)s; 0.0.0.0 exposes the unauthenticated "
                             "server to the network)")
    parser.add_argument("--port", type=int, default=_server.DEFAULT_PORT,
                        help="TCP port (default %(default)s; 0 picks a free one and prints it)")
    parser.add_argument("--name", default=None, help="model name in the URL (default: the artifact's name)")
    parser.add_argument("--runtime", choices=("xla", "iree"), default="xla", help="runtime (default %(default)s)")
    parser.add_argument("--llm", action="store_true",
                        help="ARTIFACT is a language model directory (Hugging Face layout: config.json, safetensors, "
                             "tokenizer): serve OpenAI-compatible /v1/completions and /v1/chat/completions with "
                             "continuous batching")
    parser.add_argument("--max-slots", type=int, default=16,
                        help="--llm: requests decoded together, the KV cache's rows (default %(default)s)")
    parser.add_argument("--max-len", type=int, default=256,
                        help="--llm: context length per request, prompt + generated tokens (default %(default)s)")
    parser.add_argument("--speculative", default=None, metavar="ngram|DIR",
                        help="--llm: exact speculative decoding: 'ngram' (prompt lookup) or a draft model "
                             "directory sharing the model's tokenizer (default: off)")
    parser.add_argument("--num-speculative-tokens", type=int, default=4,
                        help="--llm: tokens proposed per step with --speculative (default %(default)s)")
    parser.add_argument("--max-n", type=int, default=8,
                        help="--llm: the most choices (n) one request may ask for (default %(default)s)")
    parser.add_argument("--tokenizer", default=None, metavar="DIR",
                        help="tokenize on the server: DIR holds a tokenizer.json that pads to a fixed length; "
                             "the artifact's one input (token ids) then also accepts strings: "
                             "{\"inputs\": [[\"text\", ...]]}")
    parser.add_argument("--max-request-rows", type=int, default=_server.DEFAULT_MAX_REQUEST_ROWS,
                        help="most rows (texts) per request; more get HTTP 413 (default %(default)s)")
    parser.add_argument("--max-text-bytes", type=int, default=64 * 1024,
                        help="--tokenizer: most UTF-8 bytes per text, checked before tokenizing; longer texts get "
                             "HTTP 413 (default %(default)s)")
    parser.add_argument("--max-batch-size", type=int, default=_server.DEFAULT_MAX_BATCH_SIZE,
                        help="most rows per batch; 1 turns dynamic batching off (default %(default)s)")
    parser.add_argument("--batch-timeout-ms", type=float, default=_server.DEFAULT_BATCH_TIMEOUT_MS,
                        help="how long a batch waits for more requests once the first arrived; 0 batches "
                             "what queued while the previous batch ran, adding no latency (default %(default)s)")
    parser.add_argument("--max-queue", type=int, default=_server.DEFAULT_MAX_QUEUE,
                        help="most requests waiting; more get HTTP 503 (default %(default)s)")
    parser.add_argument("--max-body-bytes", type=int, default=_server.DEFAULT_MAX_BODY_BYTES,
                        help="largest request body; larger get HTTP 413 (default %(default)s)")
    parser.add_argument("--timeout-s", type=float, default=_server.DEFAULT_TIMEOUT_S,
                        help="per-request limit from arrival to answer: 408 if the body is not in by then, "
                             "504 if the result is not (default %(default)s)")
    parser.add_argument("--max-json-depth", type=int, default=_server.DEFAULT_MAX_JSON_DEPTH,
                        help="deepest JSON nesting accepted; deeper bodies get HTTP 400 (default %(default)s)")
    parser.add_argument("--header-timeout-s", type=float, default=_server.DEFAULT_HEADER_TIMEOUT_S,
                        help="a connection that sends no complete request head within this many seconds of "
                             "opening (after a response: --keep-alive-s more) is closed (default %(default)s)")
    parser.add_argument("--keep-alive-s", type=float, default=_server.DEFAULT_KEEP_ALIVE_S,
                        help="an idle kept-alive connection is closed after this many seconds (default %(default)s)")
    parser.add_argument("--graceful-timeout-s", type=float, default=_server.DEFAULT_GRACEFUL_TIMEOUT_S,
                        help="on SIGTERM/Ctrl-C, the most time requests in flight get to finish before the "
                             "server exits (default %(default)s)")
    parser.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"),
                        help="server log level (default %(default)s)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the server until interrupted; 0 on a clean stop, 1 if the model fails to load, 2 on bad usage."""
    try:
        _server.reject_url(args.artifact)
    except ValueError as e:
        return _fail(str(e), 2)
    if not os.path.isdir(args.artifact):
        what = "is a file, not an artifact directory" if os.path.exists(args.artifact) else "does not exist"
        return _fail(f"pdx serve: {args.artifact!r} {what}; pass the directory pdx export wrote", 2)
    if not _is_loopback(args.host):
        print(f"pdx serve: warning: binding {args.host} makes the server reachable from other machines; "
              "it has no authentication", file=sys.stderr)
    if args.llm:
        from pdx.export._llm_server import serve_llm

        try:
            serve_llm(args.artifact, host=args.host, port=args.port, log_level=args.log_level, name=args.name,
                      max_slots=args.max_slots, max_len=args.max_len, max_queue=args.max_queue, max_n=args.max_n,
                      speculative=args.speculative, num_speculative_tokens=args.num_speculative_tokens,
                      max_body_bytes=args.max_body_bytes, timeout_s=args.timeout_s,
                      max_json_depth=args.max_json_depth, header_timeout_s=args.header_timeout_s,
                      keep_alive_s=args.keep_alive_s, graceful_timeout_s=args.graceful_timeout_s)
        except ValueError as e:
            return _fail(str(e), 2)
        except RuntimeError as e:
            return _fail(str(e), 1)
        return _stopped()
    options = dict(name=args.name, runtime=args.runtime, max_batch_size=args.max_batch_size,
                   batch_timeout_ms=args.batch_timeout_ms, max_queue=args.max_queue,
                   max_body_bytes=args.max_body_bytes, timeout_s=args.timeout_s, max_json_depth=args.max_json_depth,
                   header_timeout_s=args.header_timeout_s, keep_alive_s=args.keep_alive_s,
                   graceful_timeout_s=args.graceful_timeout_s, max_request_rows=args.max_request_rows)
    model = args.artifact
    if args.tokenizer is not None:
        from pdx.export import load
        from pdx.export._text import TextPredictor
        from pdx.text import Tokenizer

        try:
            model = TextPredictor(load(args.artifact, runtime=args.runtime), Tokenizer.from_pretrained(args.tokenizer),
                                  max_texts=args.max_request_rows, max_text_bytes=args.max_text_bytes)
        except (ValueError, OSError) as e:
            return _fail(f"pdx serve: {e}", 2)
    try:
        _server.serve(model, host=args.host, port=args.port, log_level=args.log_level, **options)
    except ValueError as e:
        return _fail(str(e), 2)
    except RuntimeError as e:
        return _fail(str(e), 1)
    return _stopped()


def _stopped() -> int:
    """The server stopped cleanly and every request was answered: the command ends its process now.

    The interpreter's own teardown of the runtime (freeing compiled executables,
    device buffers) takes seconds and would push the exit past
    --graceful-timeout-s; nothing is left to clean up, so it is skipped.
    """
    if threading.current_thread() is not threading.main_thread():
        return 0
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _fail(message: str, code: int) -> int:
    print(message.splitlines()[0] if message else "pdx serve: failed", file=sys.stderr)
    return code
