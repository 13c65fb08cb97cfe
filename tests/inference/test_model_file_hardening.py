"""Hostile Paddle model files: one typed error (ModelFormatError) naming the file and what was refused, fast."""

from __future__ import annotations

import json
import os
import shutil
import time

import numpy as np
import pytest

from pdx.inference import ModelFormatError, PaddleProgram


def _copy(src, dst):
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("model.json", "model.pdiparams"):
        shutil.copy(src / name, dst / name)
    return dst / "model.json", dst / "model.pdiparams"


def _load(model, params):
    start = time.perf_counter()
    try:
        return PaddleProgram(model, params)
    finally:
        assert time.perf_counter() - start < 10


def test_pdiparams_truncated_flipped_trailing_and_fuzzed(saved_models, tmp_path):
    model, params = _copy(saved_models["bilstm"], tmp_path / "m")
    data = params.read_bytes()
    good = _load(model, params)
    # truncated anywhere: in a header, in a TensorDesc, in the data
    for cut in (0, 3, 10, 21, 30, len(data) // 2, len(data) - 1):
        params.write_bytes(data[:cut])
        with pytest.raises(ModelFormatError, match=r"model\.pdiparams: byte \d+"):
            _load(model, params)
    # trailing bytes
    params.write_bytes(data + b"\0" * 8)
    with pytest.raises(ModelFormatError, match="follow the last"):
        _load(model, params)
    # lying lengths: the LoD level, the TensorDesc size, the dtype and a dim of the first tensor
    for offset, value, message in ((4, b"\xff" * 8, "LoD level"), (16, b"\xff\xff\x00\x00", "TensorDesc size"),
                                   (21, b"\x06", "the file holds float64"), (23, b"\x07", "program declares")):
        bad = bytearray(data)
        bad[offset:offset + len(value)] = value
        params.write_bytes(bytes(bad))
        with pytest.raises(ModelFormatError, match=message):
            _load(model, params)
    # random bit flips: the typed error, or (a flip inside raw tensor data, which the format has no checksum
    # for) parameters of exactly the declared shapes and dtypes
    rng = np.random.default_rng(0)
    header_errors = 0
    for _ in range(300):
        bad = bytearray(data)
        pos = int(rng.integers(0, len(bad)))
        bad[pos] ^= 1 << int(rng.integers(0, 8))
        params.write_bytes(bytes(bad))
        try:
            prog = _load(model, params)
        except ModelFormatError:
            header_errors += 1
            continue
        assert {k: (v.shape, v.dtype) for k, v in prog.values.items()} == \
            {k: (v.shape, v.dtype) for k, v in good.values.items()}
    assert header_errors > 0


def test_program_shapes_unknown_ops_and_malformed_json(saved_models, tmp_path):
    model, params = _copy(saved_models["bilstm"], tmp_path / "m")
    text = model.read_text()
    doc = json.loads(text)
    ops = doc["program"]["regions"][0]["blocks"][0]["ops"]
    # a parameter whose declared shape disagrees with the stored tensor
    first = next(o for o in ops if o["#"] == "p" and o["O"]["TT"]["D"][1] == [100, 16])  # the embedding table
    first["O"]["TT"]["D"][1] = [100, 17]
    model.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match=r"holds float32\[100, 16\] but the program declares float32\[100, 17\]"):
        _load(model, params)
    first["O"]["TT"]["D"][1] = [100, 16]
    # an op pdx does not know: named with its index and the supported list
    index = next(i for i, o in enumerate(ops) if o["#"] == "1.mean")
    ops[index]["#"] = "1.frobnicate"
    model.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match=rf"op #{index} is 'pd_op.frobnicate'.*Supported ops: .*pd_op.conv2d"):
        _load(model, params)
    ops[index]["#"] = "1.mean"
    # a value used before it is defined, a bad attribute, a missing program
    ops[index]["I"][0]["%"] = 10**6
    model.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="used before it is defined"):
        _load(model, params)
    for body, message in (('{"base_code": {"magic": "xyz"}}', "magic"), ("[" * 100_000 + "]" * 100_000, "nests"),
                          ('{"base_code": {"magic": "pir"}, "program": 3}', "regions"), ("\xff{", "not valid JSON"),
                          ('{"base_code": 1}', "base_code")):
        model.write_text(body)
        with pytest.raises(ModelFormatError, match=message):
            _load(model, params)
    # random byte flips of the JSON text: the typed error or a program that loads
    rng = np.random.default_rng(0)
    raw = text.encode()
    for _ in range(100):
        bad = bytearray(raw)
        for pos in rng.integers(0, len(bad), 3):
            bad[int(pos)] = int(rng.integers(32, 127))
        model.write_bytes(bytes(bad))
        try:
            _load(model, params)
        except ModelFormatError:
            pass


def test_fifo_device_link_and_huge_files(saved_models, tmp_path):
    model, params = _copy(saved_models["bilstm"], tmp_path / "m")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ModelFormatError, match="FIFO"):
        _load(fifo, params)
    link = tmp_path / "zero.pdiparams"
    link.symlink_to("/dev/zero")
    with pytest.raises(ModelFormatError, match="symlink"):
        _load(model, link)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(600 << 20)  # sparse: nothing is written, the size check refuses it before reading
    with pytest.raises(ModelFormatError, match="over the limit"):
        _load(huge, params)
