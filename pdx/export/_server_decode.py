"""Request bodies of `pdx serve`: read with a size cap, decoded without trusting a byte.

    read_body (413 past the limit)  ->  decode_body(body, content_type, specs, check)
        JSON       explicit charset (UTF-8 unless declared), depth checked on the decoded
                   text (pdx._safefile.load_json), then {"inputs": ...} by name or position
        .npy       header parsed and checked (numeric dtype, int dims, size == data), no pickle
        .npz       stored or deflated members only, sizes known before inflating
    -> check(*arrays) (the predictor's check_inputs)  ->  arrays for the batcher

Every failure of a client's bytes is an `HTTPError` with status 400 (413 for sizes,
415 for media types): nothing a client sends can make the decoder answer 500.
"""

from __future__ import annotations

import ast
import codecs
import contextlib
import io
import json
import math
import re
import struct
import warnings
import zipfile
import zlib
from typing import Callable, Sequence

import numpy as np

from pdx._safefile import load_json

__all__ = ["HTTPError", "ClientDisconnected", "read_body", "decode_body", "decode_npy", "encode",
           "JSON_TYPE", "NPY_TYPE", "NPZ_TYPE"]

NPY_TYPE = "application/x-npy"
NPZ_TYPE = "application/x-npz"
JSON_TYPE = "application/json"

# JSON is UTF-8 (RFC 8259); these declared charsets are honoured too. Anything else is 415.
_JSON_CHARSETS = {"utf-8": "utf-8", "utf8": "utf-8", "utf-16": "utf-16", "utf-16le": "utf-16-le",
                  "utf-16be": "utf-16-be", "utf-32": "utf-32", "utf-32le": "utf-32-le", "utf-32be": "utf-32-be"}
_MAX_NPY_DIMS = 32
_MAX_NPY_HEADER = 64 * 1024
_NPY_MAGIC = b"\x93NUMPY"
# numeric dtypes as np.save writes them: byte order, kind, item size ('<f4', '|b1', '>i8')
_NPY_DESCR_RE = re.compile(r"[<>|=]?[biuf][0-9]{1,2}")
# np.savez writes one central-directory record per array; a body with far more is not a .npz of inputs.
_ZIP_RECORD = b"PK\x01\x02"
_ZIP_EXTRA_RECORDS = 16
_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
# What a damaged archive can raise from zipfile/zlib; all of it is the client's bytes.
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, RuntimeError,
               NotImplementedError, ValueError, struct.error, UnicodeDecodeError)


class HTTPError(Exception):
    """An error answered with `status` and a JSON body {"error": message}."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class _BadRequest(HTTPError):
    """400: what `pdx._safefile.load_json` raises (it takes an error class of one argument)."""

    def __init__(self, message: str):
        super().__init__(400, message)


class ClientDisconnected(Exception):
    """The client closed the connection before its request body arrived (no answer is sent)."""


async def read_body(request, limit: int) -> bytes:
    """The request body, refusing (413) as soon as more than `limit` bytes are declared or arrive."""
    from starlette.requests import ClientDisconnect

    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise HTTPError(400, f"bad Content-Length header {declared!r}")
        if int(declared) > limit:
            raise HTTPError(413, f"request body of {int(declared)} bytes exceeds the limit of {limit} bytes "
                                 "(--max-body-bytes); send fewer rows per request")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HTTPError(413, f"request body exceeds the limit of {limit} bytes (--max-body-bytes); "
                                     "send fewer rows per request")
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientDisconnected(f"client disconnected after {size} body bytes") from None
    return b"".join(chunks)


def decode_body(body: bytes, content_type: str, specs: Sequence, check: Callable, *,
                max_body_bytes: int, max_json_depth: int) -> list[np.ndarray]:
    """Decode a predict body into checked input arrays, or raise HTTPError (400/413/415).

    Args:
      body: the raw request body.
      content_type: the Content-Type header as sent (parameters such as charset included).
      specs: the model's input specs (`.name` of each, in order).
      check: `predictor.check_inputs`: converts and validates, raising ValueError.
      max_body_bytes: the cap on what a compressed `.npz` may expand to.
      max_json_depth: deepest JSON nesting accepted.

    Example:
      >>> from pdx.jit import InputSpec
      >>> decode_body(b'{"inputs": [[1.0, 2.0]]}', "application/json", [InputSpec([None, 2], "float32", "x")],
      ...             lambda *a: [np.asarray(v, np.float32) for v in a], max_body_bytes=1 << 20, max_json_depth=64)
      [array([1., 2.], dtype=float32)]
    """
    media, _, params = content_type.partition(";")
    media = media.strip().lower()
    if media in ("", JSON_TYPE):
        values = _decode_json(body, _charset(params), specs, max_json_depth)
    elif media == NPY_TYPE:
        if len(specs) != 1:
            raise HTTPError(400, f"a .npy body carries one array but the model takes {len(specs)} inputs "
                                 f"{[s.name for s in specs]}; send {NPZ_TYPE} (np.savez with one array per input)")
        values = [decode_npy(body)]
    elif media == NPZ_TYPE:
        values = _decode_npz(body, specs, max_body_bytes)
    else:
        raise HTTPError(415, f"unsupported Content-Type {media!r}; use {JSON_TYPE}, {NPY_TYPE} or {NPZ_TYPE}")
    try:
        return list(check(*values))
    except (ValueError, TypeError, OverflowError) as e:  # the predictor's message names input and fix
        raise HTTPError(getattr(e, "status", 400), str(e)) from None


def _charset(params: str) -> str | None:
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def _decode_json(body: bytes, charset: str | None, specs, max_depth: int) -> list:
    if charset is None or charset in ("utf-8", "utf8"):
        # UTF-8, strictly: json.loads(bytes) would guess UTF-16/32 and parse what the depth check never saw
        data = body[len(codecs.BOM_UTF8):] if body.startswith(codecs.BOM_UTF8) else body
        if b"\x00" in data:  # valid UTF-8, never valid JSON: UTF-16/32 text of ASCII characters
            raise HTTPError(400, "malformed JSON body: it holds NUL bytes, as UTF-16/32 text does; send UTF-8 "
                                 "or declare the charset (Content-Type: application/json; charset=utf-16)")
    elif charset in _JSON_CHARSETS:
        try:
            data = body.decode(_JSON_CHARSETS[charset])
        except UnicodeDecodeError as e:
            raise HTTPError(400, f"malformed JSON body: not {charset} text ({e.reason} at byte {e.start})") from None
    else:
        raise HTTPError(415, f"unsupported JSON charset {charset!r}; send UTF-8 (RFC 8259)")
    try:
        payload = load_json(data, what="JSON body", max_depth=max_depth, error=_BadRequest)
    except _BadRequest as e:
        raise HTTPError(400, f"malformed JSON body: {e.message}" if "levels deep" not in e.message else
                        f"{e.message} (--max-json-depth); inputs are nested lists as deep as their rank") from None
    if not isinstance(payload, dict) or "inputs" not in payload:
        raise HTTPError(400, 'JSON body must be an object {"inputs": {name: nested list, ...}} '
                             'or {"inputs": [value for each input, in order]}')
    inputs = payload["inputs"]
    names = [s.name for s in specs]
    if isinstance(inputs, dict):
        unknown = sorted(set(inputs) - set(names))
        missing = [n for n in names if n not in inputs]
        if unknown or missing:
            raise HTTPError(400, f"inputs {sorted(inputs)} do not match the model's inputs {names} "
                                 f"(missing {missing}, unknown {unknown})")
        return [inputs[n] for n in names]
    if isinstance(inputs, list):
        if len(inputs) != len(specs):
            raise HTTPError(400, f'"inputs" is a list of {len(inputs)} values but the model takes '
                                 f"{len(specs)} inputs {names}; a list holds one value per input, in order "
                                 f'(for one input: {{"inputs": [x]}}), or use {{"inputs": {{name: x}}}}')
        return inputs  # nested lists: check_inputs converts them to the declared dtypes
    raise HTTPError(400, f'"inputs" must be an object or a list, got {type(inputs).__name__}')


def decode_npy(data: bytes, label: str = "body") -> np.ndarray:
    """A `.npy` payload as a numeric array; any bad header or size is HTTPError 400 (never a pickle).

    The header is parsed here (a literal dict of descr, fortran_order and shape,
    all checked), not by numpy's reader, whose fallbacks raise a zoo of exception types.

    Example:
      >>> buf = io.BytesIO(); np.save(buf, np.arange(3, dtype=np.int32))
      >>> decode_npy(buf.getvalue())
      array([0, 1, 2], dtype=int32)
    """
    shape, fortran, dtype, offset = _npy_header(data, label)
    count = math.prod(shape)
    have = len(data) - offset
    if have != count * dtype.itemsize:
        raise HTTPError(400, f"{label}: .npy header declares shape {shape} of {dtype} "
                             f"({count * dtype.itemsize} bytes) but {have} data bytes follow")
    if count == 0:
        return np.zeros(shape, dtype.newbyteorder("="))
    arr = np.frombuffer(data, dtype, count, offset=offset).reshape(shape, order="F" if fortran else "C")
    # big-endian data: convert, so a float32 model does not refuse '>f4' as another dtype
    return arr if dtype.isnative else arr.astype(dtype.newbyteorder("="))


def _npy_header(data: bytes, label: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran_order, dtype, data offset) of a .npy payload, each checked."""
    def bad(why: str) -> HTTPError:
        return HTTPError(400, f"{label}: not a valid .npy payload ({why}); send np.save output")

    if not data.startswith(_NPY_MAGIC) or len(data) < 10:
        raise bad("it does not start with the .npy magic \\x93NUMPY")
    version = (data[6], data[7])
    if version == (1, 0):
        size, start = struct.unpack_from("<H", data, 8)[0], 10
    elif version == (2, 0) and len(data) >= 12:
        size, start = struct.unpack_from("<I", data, 8)[0], 12
    else:
        raise bad(f"format version {version[0]}.{version[1]}; np.save writes 1.0 for numeric arrays")
    if size > _MAX_NPY_HEADER or start + size > len(data):
        raise bad(f"header of {size} bytes (at most {_MAX_NPY_HEADER}, and within the body)")
    try:
        with warnings.catch_warnings():  # a malformed literal may warn (SyntaxWarning) before it fails
            warnings.simplefilter("ignore")
            header = ast.literal_eval(data[start:start + size].decode("latin-1"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        raise bad(f"header is not a Python literal: {type(e).__name__}") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise bad("header must be a dict of 'descr', 'fortran_order' and 'shape'")
    shape, fortran, descr = header["shape"], header["fortran_order"], header["descr"]
    if not isinstance(shape, tuple) or len(shape) > _MAX_NPY_DIMS or not all(
            type(d) is int and d >= 0 for d in shape):
        raise HTTPError(400, f"{label}: .npy header has shape {shape!r}; it must be a tuple of at most "
                             f"{_MAX_NPY_DIMS} non-negative ints")
    if type(fortran) is not bool:
        raise bad(f"fortran_order is {fortran!r}, not True or False")
    dtype = None
    if isinstance(descr, str) and _NPY_DESCR_RE.fullmatch(descr):
        with contextlib.suppress(TypeError):
            dtype = np.dtype(descr)
    if dtype is None or dtype.kind not in "biuf":
        raise HTTPError(400, f"{label}: .npy dtype {descr!r} is not a numeric dtype (bool, int, uint or float, "
                             "e.g. '<f4')")
    return shape, fortran, dtype, start + size


def _decode_npz(data: bytes, specs, limit: int) -> list:
    names = [s.name for s in specs]
    if data.count(_ZIP_RECORD) > len(specs) + _ZIP_EXTRA_RECORDS:
        raise HTTPError(400, f"the .npz body holds far more members than the model's {len(specs)} inputs {names}")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = zf.infolist()
            for m in members:
                if m.flag_bits & 0x1:
                    raise HTTPError(400, f".npz member {m.filename!r} is encrypted; send np.savez output")
                if m.compress_type not in _ZIP_METHODS:
                    raise HTTPError(400, f".npz member {m.filename!r} uses zip compression method "
                                         f"{m.compress_type}; np.savez / np.savez_compressed write stored "
                                         "or deflated members")
            expanded = sum(m.file_size for m in members)
            if expanded > limit:  # a small compressed body must not expand without bound
                raise HTTPError(413, f".npz expands to {expanded} bytes, over the limit of {limit} bytes "
                                     "(--max-body-bytes)")
            keys = [m.filename[:-4] if m.filename.endswith(".npy") else m.filename for m in members]
            if sorted(keys) == sorted(names):
                order = [keys.index(n) for n in names]
            elif sorted(keys) == [f"arr_{i}" for i in range(len(specs))]:
                order = [keys.index(f"arr_{i}") for i in range(len(specs))]
            else:
                raise HTTPError(400, f".npz holds {sorted(keys)} but the model's inputs are {names}; "
                                     "name the arrays after the inputs (np.savez(f, **{name: array}))")
            # zipfile stops inflating at the member's declared size, so `limit` bounds memory
            raw = [zf.read(members[i]) for i in order]
    except _ZIP_ERRORS as e:
        raise HTTPError(400, f"not a valid .npz payload ({type(e).__name__}: {e})") from None
    return [decode_npy(r, label=keys[i]) for r, i in zip(raw, order)]


def encode(outputs: Sequence[np.ndarray], names: Sequence[str], model: str, accept: str):
    """The response for `outputs`: `.npz`/`.npy` when `accept` asks, JSON otherwise."""
    from starlette.responses import Response

    if NPZ_TYPE in accept:
        buf = io.BytesIO()
        np.savez(buf, **dict(zip(names, outputs)))
        return Response(buf.getvalue(), media_type=NPZ_TYPE)
    if NPY_TYPE in accept:
        if len(outputs) != 1:
            raise HTTPError(406, f"the model has {len(outputs)} outputs {list(names)}; ask for {NPZ_TYPE}")
        buf = io.BytesIO()
        np.save(buf, outputs[0], allow_pickle=False)
        return Response(buf.getvalue(), media_type=NPY_TYPE)
    # allow_nan: a model may legitimately output inf/nan; they are written as Python's json
    # writes them (Infinity, NaN). Clients that need strict JSON ask for .npy/.npz.
    body = json.dumps({"model_name": model, "outputs": {n: o.tolist() for n, o in zip(names, outputs)}},
                      allow_nan=True, separators=(",", ":"))
    return Response(body, media_type=JSON_TYPE)
