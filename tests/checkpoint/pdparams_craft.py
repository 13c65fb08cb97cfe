"""Files for the `.pdparams` reader's tests: real `paddle.save` output and hand-made hostile pickles.

`paddle_files` writes every kind of object `paddle.save` is used for (layer
state dicts in fp32/fp16/bf16, int and bool buffers, optimizer state with LR
scheduler and master weights, nested containers, scalars, a bare tensor) with
protocols 2, 3 and 4. `hostile_files` builds pickles opcode by opcode: each
one is something an attacker or a damaged disk could produce, paired with a
fragment of the error the reader must raise.
"""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import numpy as np

PROTOCOLS = (2, 3, 4)
_KEEP_ALIVE: list = []


def _train(paddle, model, opt, steps=2):
    for _ in range(steps):
        loss = (model(paddle.randn([2, 4])) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        if isinstance(opt._learning_rate, paddle.optimizer.lr.LRScheduler):
            opt._learning_rate.step()


def paddle_objects(paddle) -> dict:
    """name -> an object as users pass it to paddle.save."""
    paddle.seed(7)
    objs = {}
    net = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.BatchNorm1D(8), paddle.nn.Linear(8, 3))
    net(paddle.randn([5, 4]))  # move the batch-norm statistics
    objs["fp32"] = net.state_dict()
    for dtype in ("float16", "bfloat16"):
        layer = paddle.nn.Linear(4, 3)
        layer.to(dtype=dtype)
        objs[dtype] = layer.state_dict()
    objs["int_buffers"] = {"ids": paddle.arange(5, dtype="int64"), "mask": paddle.to_tensor([True, False]),
                           "i32": paddle.to_tensor([[1, -2]], dtype="int32"), "u8": paddle.to_tensor([255], dtype="uint8")}
    sched = paddle.optimizer.lr.StepDecay(0.1, step_size=1)
    adam_net = paddle.nn.Linear(4, 3)
    adam = paddle.optimizer.Adam(sched, parameters=adam_net.parameters())
    _train(paddle, adam_net, adam)
    objs["adam"] = adam.state_dict()
    adamw_net = paddle.nn.Linear(4, 3)
    adamw = paddle.optimizer.AdamW(paddle.optimizer.lr.CosineAnnealingDecay(0.1, 10),
                                   parameters=adamw_net.parameters(), weight_decay=0.01)
    _train(paddle, adamw_net, adamw)
    objs["adamw"] = adamw.state_dict()
    mom_net = paddle.nn.Linear(4, 3)
    mom = paddle.optimizer.Momentum(0.1, parameters=mom_net.parameters())
    _train(paddle, mom_net, mom)
    objs["momentum"] = mom.state_dict()
    # Paddle's CPU kernels have no multi-precision AdamW; this is the state dict it builds on GPU:
    # accumulators, master_weights {param name: fp32 tensor} and the scheduler's state
    master = dict(adamw.state_dict())
    master["master_weights"] = {p.name: p.astype("float32") for p in adamw_net.parameters()}
    objs["master_weights"] = master
    objs["training_checkpoint"] = {"model": net.state_dict(), "opt": adam.state_dict(), "epoch": 3, "best": 0.25}
    objs["numpy"] = {"f8": np.arange(6, dtype=np.float64).reshape(2, 3), "i1": np.asarray([1, -2], np.int8),
                     "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)), "empty": np.zeros((0, 3), np.float32),
                     "scalar0d": np.asarray(3.5, np.float32), "c8": np.asarray([1 + 2j], np.complex64),
                     "big_endian": np.arange(3, dtype=">i4"), "u4": np.asarray([7], np.uint32)}
    objs["nested"] = {"list": [paddle.ones([2]), (paddle.zeros([1]), 3)], "t": (1, 2.5, "s", None, True),
                      "d": {"x": {"y": [1, 2**40, -5, -(2**70)]}}, "one": [paddle.ones([1])], "single": {"k": 1},
                      "long": list(range(2500)), "wide": {f"k{i}": i for i in range(1200)},
                      "text": "ünïcødé " * 40}
    objs["scalars"] = {"lr": 0.5, "step": 7, "name": "x", "flag": False, "none": None,
                       "np_f4": np.float32(2.5), "np_i8": np.int64(-3), "np_b": np.bool_(True)}
    objs["tensor"] = paddle.to_tensor([[1.0, 2.0]])
    objs["tensor_list"] = [paddle.ones([2]), paddle.ones([1], dtype="int64")]
    objs["float"] = 3.25
    owner = paddle.to_tensor([1.0, 2.0])  # a DenseTensor does not keep its tensor alive
    _KEEP_ALIVE.append(owner)
    objs["dense_tensor"] = {"x": [owner.value().get_tensor()]}
    return objs


def paddle_files(paddle, directory: Path) -> dict[str, Path]:
    """`paddle.save` every object of `paddle_objects` with protocols 2, 3 and 4: name -> path."""
    files = {}
    for name, obj in paddle_objects(paddle).items():
        for proto in PROTOCOLS:
            path = Path(directory) / f"{name}.p{proto}.pdparams"
            paddle.save(obj, str(path), protocol=proto)
            files[path.stem] = path
    return files


# ---- hand-made pickles ---------------------------------------------------------------------------

def s(text: str) -> bytes:
    b = text.encode()
    return (b"\x8c" + bytes([len(b)]) if len(b) < 256 else b"X" + struct.pack("<I", len(b))) + b


def raw(data: bytes) -> bytes:
    return (b"C" + bytes([len(data)]) if len(data) < 256 else b"B" + struct.pack("<I", len(data))) + data


def glob(module: str, name: str) -> bytes:
    return s(module) + s(name) + b"\x93"


def i(n: int) -> bytes:
    return b"J" + struct.pack("<i", n) if n < 0 or n > 255 else b"K" + bytes([n])


def get(n: int) -> bytes:
    return b"h" + bytes([n]) if n < 256 else b"j" + struct.pack("<I", n)


def tup(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


MEMO = b"\x94"
HEAD = b"\x80\x04"
N = b"N"
FALSE, TRUE = b"\x89", b"\x88"


def dtype(code: str, state: bytes | None = None) -> bytes:
    state = state if state is not None else tup(i(3), s("<" if code not in ("b1", "i1", "u1") else "|"),
                                                N, N, N, i(-1), i(-1), i(0))
    return glob("numpy", "dtype") + s(code) + FALSE + TRUE + b"\x87R" + state + b"b"


def ndarray(shape: bytes, dt: bytes, data: bytes) -> bytes:
    """numpy's protocol-4 form: _reconstruct(ndarray, (0,), b'b') BUILD (1, shape, dtype, False, data)."""
    return (glob("numpy._core.multiarray", "_reconstruct") + glob("numpy", "ndarray") + i(0) + b"\x85"
            + raw(b"b") + b"\x87R" + tup(i(1), shape, dt, FALSE, data) + b"b")


def one(value: bytes) -> bytes:
    """A complete pickle of `{'w': value}`."""
    return HEAD + b"}" + s("w") + value + b"s."


def _reference_bomb(depth: int, leaf: object, keyed: bool) -> bytes:
    # each level references the one below three times: 3**40 values if expanded
    a = leaf
    for _ in range(depth):
        a = [a, a, {"v": a} if keyed else [a]]
    return pickle.dumps(a, protocol=4)


def _frombuffer_copies(copies: int, size: int) -> bytes:
    # one buffer, many protocol-5 arrays made from it: each would be a fresh copy
    body = (HEAD[:1] + b"\x05" + b"]" + MEMO + glob("numpy._core.numeric", "_frombuffer") + MEMO
            + b"\x96" + struct.pack("<Q", size) + b"\0" * size + MEMO + dtype("u1") + MEMO + i(size) + b"\x85" + MEMO
            + s("C") + MEMO + b"(")
    one_array = get(1) + tup(get(2), get(3), get(4), get(5)) + b"R"
    return body + one_array * copies + b"e."


def _shared_array(copies: int, size: int) -> bytes:
    # one real array referenced many times: no copies here, but every consumer would expand it
    arr = ndarray(i(size) + b"\x85", dtype("u1"), raw(b"\1" * size))
    return HEAD + b"]" + MEMO + b"(" + arr + MEMO + get(1) * (copies - 1) + b"e."


def hostile_files() -> dict[str, tuple[bytes, str]]:
    """name -> (file bytes, regex the error message must match)."""
    f4 = dtype("f4")
    cases = {
        # a dtype whose BUILD state claims a 64 KiB item: an unpickler would read past the buffer
        "dtype_build_itemsize": (one(ndarray(i(1) + b"\x85", dtype("V8", tup(i(3), s("|"), N, N, N, i(65536), i(1), i(0))),
                                             raw(b"\0" * 8))), r"dtype 'V8' is not a numeric"),
        "dtype_build_on_f4": (one(ndarray(i(1) + b"\x85", dtype("f4", tup(i(3), s("<"), N, N, N, i(65536), i(1), i(0))),
                                          raw(b"\0" * 4))), r"dtype f4 state must be"),
        "dtype_built_twice": (one(dtype("f4") + tup(i(3), s("<"), N, N, N, i(-1), i(-1), i(0)) + b"b"),
                              r"BUILD applies state to numpy dtype"),
        "object_array_reconstruct": (one(glob("numpy._core.multiarray", "_reconstruct") + glob("numpy", "ndarray")
                                         + i(3) + b"\x85" + s("O") + b"\x87R"), r"_reconstruct\(numpy.ndarray, \(0,\)"),
        "object_array_new_setitem": (one(glob("numpy", "ndarray") + i(2) + b"\x85" + s("O") + b"\x86R"
                                         + i(0) + s("x") + b"s"), r"numpy.ndarray cannot be called"),
        "object_dtype": (one(ndarray(i(1) + b"\x85", dtype("O8", tup(i(3), s("|"), N, N, N, i(-1), i(-1), i(63))),
                                     b"]" + s("x") + b"a")), r"dtype 'O8' is not a numeric"),
        "reference_bomb_40": (_reference_bomb(40, [1], keyed=False), r"expand the data to more than max_elements"),
        "reference_bomb_strings": (_reference_bomb(40, {"k": "x" * 200}, keyed=True), r"expand the arrays and strings"),
        "frombuffer_copies_8000": (_frombuffer_copies(8000, 160_000), r"add up to more than 4x the file's size"),
        "shared_array_8000": (_shared_array(8000, 160_000), r"expand the arrays and strings"),
        "pop_opcode": (HEAD + b"](" + raw(b"\1" * 4096) + MEMO + b"0" + b"e.", r"opcode not among"),
        "deep_marks_100k": (HEAD + b"(" * 100_000 + b".", r"open MARKs"),
        "deep_lists_100k": (HEAD + b"](" * 100_000 + b"e" * 100_000 + b".", r"open MARKs"),
        "deep_append_100k": (HEAD + b"]" * 100_000 + b"a" * 99_999 + b".", r"nest more than max_depth"),
        "deep_tuples": (HEAD + b")" + b"\x85" * 1000 + b".", r"nest more than max_depth"),
        "os_system": (HEAD + glob("posix", "system") + s("touch /tmp/x") + b"\x85R.", r"refusing to load global posix\.system"),
        "os_system_protocol2": (b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R.", r"refusing to load global os\.system"),
        "eval_code": (HEAD + glob("builtins", "eval") + s("__import__('os').system('ls')") + b"\x85R.",
                      r"builtins.eval: it is only accepted as paddle's DenseTensor"),
        "eval_data_string": (HEAD + glob("builtins", "eval") + s("data") + b"}" + s("data") + s("1+1") + b"s\x86R.",
                             r"builtins.eval: it is only accepted"),
        "builtins_getattr": (HEAD + glob("builtins", "getattr") + b".", r"refusing to load global builtins\.getattr"),
        "builtins_import": (HEAD + glob("builtins", "__import__") + b".", r"refusing to load global builtins\.__import__"),
        "copyreg_reconstructor": (HEAD + glob("copyreg", "_reconstructor") + b".", r"refusing to load global copyreg"),
        "tuple_call_other": (HEAD + glob("builtins", "tuple") + b"]" + b"\x85R.", r"builtins.tuple is only accepted"),
        "numpy_load": (HEAD + glob("numpy", "load") + b".", r"refusing to load global numpy\.load"),
        "stack_global_not_str": (HEAD + i(1) + i(2) + b"\x93.", r"STACK_GLOBAL needs two strings"),
        "persistent_id": (HEAD + s("x") + b"Q.", r"opcode not among"),
        "newobj": (HEAD + glob("numpy", "ndarray") + b")\x81.", r"opcode not among"),
        "inst": (b"\x80\x02(ios\nsystem\nS'ls'\n.", r"opcode not among"),
        "ext_registry": (HEAD + b"\x82\x01.", r"opcode not among"),
        "dup_cycle": (HEAD + b"]2a.", r"opcode not among"),
        "memo_cycle": (HEAD + b"]" + MEMO + get(0) + b"a.", r"after it was referenced again"),
        "get_unbuilt_array": (one(glob("numpy._core.multiarray", "_reconstruct") + glob("numpy", "ndarray") + i(0)
                                  + b"\x85" + raw(b"b") + b"\x87R" + MEMO + get(0)), r"memo index 0 was never stored|referenced before"),
        "memo_out_of_order": (HEAD + s("x") + b"q\x05.", r"memo index 5 out of order"),
        "memo_missing": (HEAD + get(3) + b".", r"memo index 3 was never stored"),
        "unbuilt_array_value": (one(glob("numpy._core.multiarray", "_reconstruct") + glob("numpy", "ndarray") + i(0)
                                    + b"\x85" + raw(b"b") + b"\x87R"), r"unfinished numpy array cannot be stored"),
        "global_as_value": (one(glob("numpy", "ndarray")), r"the global numpy.ndarray cannot be stored"),
        "bytes_value": (one(raw(b"abc")), r"bytes \(paddle.save stores bytes only as array data\) cannot be"),
        "bytes_in_tuple": (one(raw(b"abc") + b"\x85"), r"a tuple of constructor arguments cannot be"),
        "list_key": (HEAD + b"}]" + i(1) + b"s.", r"a dict key must be"),
        "odd_setitems": (HEAD + b"}(" + s("a") + b"u.", r"odd number"),
        "append_to_dict": (HEAD + b"}" + i(1) + b"a.", r"items are appended to dict, not a list"),
        "pop_below_mark": (HEAD + b"](" + b"a.", r"stack is empty"),
        "setitems_no_mark": (HEAD + b"}u.", r"needs a MARK"),
        "empty_stack_stop": (HEAD + b".", r"stops with 0 values"),
        "two_values_stop": (HEAD + N + N + b".", r"stops with 2 values"),
        "open_mark_stop": (HEAD + N + b"(.", r"open MARKs"),
        "trailing_bytes": (HEAD + N + b"." + b"\x80\x04N.", r"bytes follow the pickle's STOP"),
        "no_stop": (HEAD + N, r"ends before the pickle's STOP"),
        "truncated_string": (HEAD + b"X\xff\xff\x00\x00abc", r"the file ends .* bytes short"),
        "truncated_binbytes8": (HEAD + b"\x8e" + struct.pack("<Q", 2**62) + b".", r"bytes short"),
        "frame_too_long": (HEAD + b"\x95" + struct.pack("<Q", 10**9) + N + b".", r"FRAME is longer"),
        "bad_utf8": (HEAD + b"\x8c\x02\xff\xfe.", r"not UTF-8"),
        "global_no_newline": (b"\x80\x02c" + b"a" * 1000, r"not a line of at most"),
        "protocol_0": (b"(dp0\n.", r"not a pickle of protocol 2-5"),
        "protocol_6": (b"\x80\x06N.", r"not a pickle of protocol 2-5"),
        "second_proto": (HEAD + b"\x80\x04N.", r"PROTO appears twice"),
        "empty_file": (b"", r"not a pickle"),
        "safetensors_like": (b"\x10\x00\x00\x00\x00\x00\x00\x00{}", r"not a pickle"),
        "dtype_unicode": (one(ndarray(i(1) + b"\x85", dtype("U5"), raw(b"\0" * 20))), r"dtype 'U5' is not"),
        "dtype_datetime": (one(ndarray(i(1) + b"\x85", dtype("M8"), raw(b"\0" * 8))), r"dtype 'M8' is not"),
        "dtype_void": (one(ndarray(i(1) + b"\x85", dtype("V4"), raw(b"\0" * 4))), r"dtype 'V4' is not"),
        "dtype_with_endian": (one(ndarray(i(1) + b"\x85", dtype("<f4"), raw(b"\0" * 4))), r"dtype '<f4' is not"),
        "dtype_longdouble": (one(ndarray(i(1) + b"\x85", dtype("f16"), raw(b"\0" * 16))), r"dtype 'f16' is not"),
        "dtype_wrong_args": (one(glob("numpy", "dtype") + s("f4") + TRUE + TRUE + b"\x87R"), r"dtype\(CODE, False, True\)"),
        "dtype_bad_endian": (one(ndarray(i(1) + b"\x85", dtype("f4", tup(i(3), s("|"), N, N, N, i(-1), i(-1), i(0))),
                                         raw(b"\0" * 4))), r"dtype f4 state must be"),
        "shape_bytes_mismatch": (one(ndarray(i(3) + b"\x85", f4, raw(b"\0" * 8))), r"needs 12 bytes, the file gives 8"),
        "shape_negative": (one(ndarray(i(-1) + b"\x85", f4, raw(b"\0" * 4))), r"array shape must be a tuple"),
        "shape_huge": (one(ndarray(b"\x8a\x08" + struct.pack("<q", 2**62) + i(4) + b"\x86", f4, raw(b"\0" * 4))),
                       r"array shape must be a tuple"),
        "shape_huge_zero_size": (one(ndarray(i(0) + b"\x8a\x07" + (2**48).to_bytes(7, "little") * 1
                                             + b"\x8a\x07" + (2**48).to_bytes(7, "little") + b"\x87", f4, raw(b""))),
                                 r"larger than any array can be"),
        "shape_bool": (one(ndarray(TRUE + i(16) + b"\x86", f4, raw(b"\0" * 64))), r"array shape must be a tuple"),
        "shape_float": (one(ndarray(b"G" + struct.pack(">d", 2.0) + b"\x85", f4, raw(b"\0" * 8))), r"array shape must be"),
        "shape_not_tuple": (one(ndarray(b"]" + i(2) + b"a", f4, raw(b"\0" * 8))), r"array shape must be"),
        "shape_too_many_dims": (one(ndarray(tup(*[i(1)] * 40), f4, raw(b"\0" * 4))), r"array shape must be"),
        "array_data_not_bytes": (one(ndarray(i(1) + b"\x85", f4, s("abcd"))), r"array data must be bytes"),
        "array_state_wrong": (one(glob("numpy._core.multiarray", "_reconstruct") + glob("numpy", "ndarray") + i(0)
                                  + b"\x85" + raw(b"b") + b"\x87R" + tup(i(2), i(1)) + b"b"), r"array state must be"),
        "scalar_wrong_size": (one(glob("numpy._core.multiarray", "scalar") + f4 + raw(b"\0\0") + b"\x86R"),
                              r"needs 4 bytes, the file gives 2"),
        "encode_not_latin1": (one(glob("_codecs", "encode") + s("x") + s("utf-8") + b"\x86R"), r"encode\(str, 'latin1'\)"),
        "frombuffer_bad_order": (one(glob("numpy._core.numeric", "_frombuffer") + tup(raw(b"\0" * 4), f4, i(1) + b"\x85",
                                                                                      s("X")) + b"R"), r"'C'\|'F'"),
        "big_params_bad": (HEAD + b"}(" + s("UnpackBigParamInfor@@") + b"}" + s("w") + b"}(" + s("OriginShape") + i(5)
                           + b"\x85" + s("slices") + b"]" + s("nope") + b"au" + b"su.", r"UnpackBigParamInfor@@"),
    }
    return cases
