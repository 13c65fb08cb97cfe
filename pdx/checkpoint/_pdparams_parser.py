"""The pickle opcode machine behind `load_pdparams`: it builds data and never calls anything.

Each accepted opcode is a function `op_<pickletools name>(parser)` found by
its byte in `_TABLE`; any other byte is refused. Globals become tokens
(`_Global`), and the only "calls", REDUCE and BUILD, are matched against the
fixed argument shapes `paddle.save` writes (the grammar is in
`_pdparams.py`). Sizes are counted while the data is built: every value
pushed, every byte copied out of the file, and for each container its size
with shared references counted again, so a reference bomb is refused on the
opcode that would make it big.
"""

from __future__ import annotations

import collections
import math
import pickletools
import struct

import numpy as np

from pdx.checkpoint._errors import PickleRefusedError

__all__ = ["parse"]

# A shared reference counts its target again. Counted that way, all arrays and
# strings of the result may add up to this many times the file's size (an
# honest file stores every tensor's bytes once; tied weights share a few).
_SHARING = 4
_SHARING_SLACK = 1 << 16
_MAX_NDIM = 32
_MAX_DIM = 1 << 48
_MAX_ARRAY_BYTES = 1 << 62
_MAX_GLOBAL_LINE = 256

_DTYPE_CODES = frozenset({"b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16"})

_GLOBALS = {("numpy", "ndarray"): "ndarray", ("numpy", "dtype"): "dtype",
            ("collections", "OrderedDict"): "OrderedDict", ("_codecs", "encode"): "encode"}
for _mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
    _GLOBALS[(_mod, "_reconstruct")] = "reconstruct"
    _GLOBALS[(_mod, "scalar")] = "scalar"
for _mod in ("numpy.core.numeric", "numpy._core.numeric"):
    _GLOBALS[(_mod, "_frombuffer")] = "frombuffer"
for _mod in ("builtins", "__builtin__"):  # protocol 2 writes Python 2 module names
    for _name in ("tuple", "bytes", "eval"):
        _GLOBALS[(_mod, _name)] = _name

_FIX = ("pdx reads only what paddle.save writes (dicts, lists, tuples, strings, numbers and numeric "
        "arrays). If you trust this file, load it with Paddle, save it with safetensors.paddle.save_file "
        "and read that with pdx.load.")


class _Global:
    """A global name resolved to a token; it is matched, never called."""
    __slots__ = ("kind", "name")

    def __init__(self, kind, name):
        self.kind, self.name = kind, name


class _Pending:
    """An array or dtype between its constructor (REDUCE) and its BUILD."""
    __slots__ = ("kind", "code", "value")

    def __init__(self, kind, code=None):
        self.kind, self.code, self.value = kind, code, None


class _Dtype:
    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


class _Raw:
    """Bytes from the file (not copied): only ever the data of an array."""
    __slots__ = ("view",)

    def __init__(self, view):
        self.view = view


class _Args:
    """A tuple holding tokens (globals, dtypes): only REDUCE and BUILD take it."""
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items


_SCALARS = frozenset({type(None), bool, int, float})
_TOKENS = frozenset({_Global, _Pending, _Dtype, _Args, _Raw})
_KEYS = frozenset({str, int, float, bool, type(None)})
_NEW = (1, 0, 1)  # an empty container: one value, no bytes, one level
_NONE_3 = (None, None, None)
_STOP = object()


def _eq(v, want) -> bool:
    """Equality of plain constants that never compares arrays (an array's == is elementwise)."""
    if type(want) is tuple:
        return type(v) is tuple and len(v) == len(want) and all(_eq(a, b) for a, b in zip(v, want))
    return type(v) is type(want) and v == want


def _kind(v) -> str:
    if isinstance(v, _Global):
        return f"the global {v.name}"
    if isinstance(v, _Pending):
        return f"an unfinished numpy {v.kind}"
    if isinstance(v, _Dtype):
        return f"numpy dtype {v.dtype}"
    if isinstance(v, _Args):
        return "a tuple of constructor arguments"
    if isinstance(v, _Raw):
        return "bytes (paddle.save stores bytes only as array data)"
    return type(v).__name__


def _leaf_bytes(v) -> int:
    return len(v) if type(v) is str else getattr(v, "nbytes", 0)


class _Parser:
    __slots__ = ("data", "view", "path", "end", "pos", "op_pos", "stack", "marks", "memo", "info", "sealed",
                 "pushed", "allocated", "max_depth", "max_elements", "max_expanded", "interned")

    def __init__(self, data: bytes, path: str, max_depth: int, max_elements: int):
        self.data, self.view, self.path, self.end = data, memoryview(data), path, len(data)
        self.max_depth, self.max_elements = max_depth, max_elements
        self.max_expanded = _SHARING * len(data) + _SHARING_SLACK
        self.pos = self.op_pos = self.pushed = 0
        self.allocated = 0  # bytes of arrays built and of protocol-2 text turned into bytes
        self.stack: list = []
        self.marks: list[int] = []
        self.memo: list = []
        # id -> (elements, bytes, depth) with shared references counted again, for containers that
        # hold something; a new container drops any stale entry of a dead object with the same id
        self.info: dict[int, tuple[int, int, int]] = {}
        self.sealed: set[int] = set()  # lists/dicts referenced from the memo: never changed again
        self.interned: dict = {}  # one copy of each distinct info tuple

    # -- errors and raw reading ------------------------------------------------------------
    def refuse(self, what: str, fix: str = _FIX):
        at = self.op_pos
        if at >= self.end:
            name = "(end of file)"
        else:
            op = pickletools.code2op.get(chr(self.data[at]))
            name = op.name if op else f"0x{self.data[at]:02x}"
        raise PickleRefusedError(f"{self.path}: {what} (byte {at}, opcode {name}). {fix}",
                                 path=self.path, offset=at, opcode=name)

    def take(self, n: int) -> int:
        start = self.pos
        if n > self.end - start:
            self.refuse(f"the file ends {n - (self.end - start)} bytes short of this opcode's "
                        f"{n}-byte argument (truncated?)", "Copy or save the file again.")
        self.pos = start + n
        return start

    def uint(self, n: int) -> int:
        start = self.take(n)
        return int.from_bytes(self.data[start:start + n], "little")

    def text(self, n: int) -> str:
        start = self.take(n)
        try:
            return str(self.view[start:self.pos], "utf-8", "surrogatepass")
        except UnicodeDecodeError as e:
            self.refuse(f"a string is not UTF-8 ({e.reason})")

    # -- the stack -------------------------------------------------------------------------
    def push(self, v):
        self.pushed += 1
        if self.pushed > self.max_elements:
            self.refuse(f"more than max_elements={self.max_elements} values", "Raise max_elements if the file "
                        "is trusted and this large.")
        self.stack.append(v)

    def pop(self):
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            self.refuse("the opcode needs a value and the stack is empty")
        return self.stack.pop()

    def top(self):
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            self.refuse("the opcode needs a value and the stack is empty")
        return self.stack[-1]

    def pop_mark(self) -> list:
        if not self.marks:
            self.refuse("the opcode needs a MARK and there is none")
        start = self.marks.pop()
        items = self.stack[start:]
        del self.stack[start:]
        return items

    # -- values: what may be stored, and how big it is counted with shared references --------
    def value(self, v):
        """`(v as stored, (elements, bytes, depth))`, or refuse a token stored as a value."""
        t = type(v)
        if t in _SCALARS:
            return v, (1, 0, 0)
        if t is str:
            return v, (1, len(v), 0)
        if t is np.ndarray:
            return v, (1, v.nbytes, 0)
        if t is list or t is dict or t is collections.OrderedDict:
            return v, self.info.get(id(v), _NEW)
        if t is tuple:
            info = self.info.get(id(v))
            if info is None:  # a short tuple of leaves: counted on the spot
                info = (1 + len(v), sum(_leaf_bytes(x) for x in v), 1)
            return v, info
        if isinstance(v, np.generic):
            return v, (1, v.nbytes, 0)
        self.refuse(f"{_kind(v)} cannot be stored as a value")

    def account(self, obj, info):
        elements, nbytes, depth = info
        if depth > self.max_depth:
            self.refuse(f"containers nest more than max_depth={self.max_depth} levels deep")
        if elements > self.max_elements:
            self.refuse(f"shared references expand the data to more than max_elements={self.max_elements} values")
        if nbytes > self.max_expanded:
            self.refuse(f"shared references expand the arrays and strings to {nbytes} bytes, more than "
                        f"{_SHARING}x the file's size")
        self.info[id(obj)] = self.interned.setdefault(info, info)

    def new_container(self, obj):
        self.info.pop(id(obj), None)
        self.push(obj)

    def grow(self, obj, items) -> list:
        """Count `items` into list or dict `obj`; returns them as stored."""
        oid = id(obj)
        if oid in self.sealed:
            self.refuse("items are added to a list or dict after it was referenced again (paddle.save "
                        "finishes a container before referencing it; this would build a cycle)")
        elements, nbytes, depth = self.info.get(oid, _NEW)
        out = []
        for item in items:
            v, (e, b, d) = self.value(item)
            elements, nbytes, depth = elements + e, nbytes + b, max(depth, d + 1)
            out.append(v)
        self.account(obj, (elements, nbytes, depth))
        return out

    def make_tuple(self, items):
        for v in items:
            if type(v) in _TOKENS:
                self.push(_Args(tuple(items)))
                return
        stored, elements, nbytes, depth = [], 1, 0, 1
        for item in items:
            v, (e, b, d) = self.value(item)
            elements, nbytes, depth = elements + e, nbytes + b, max(depth, d + 1)
            stored.append(v)
        obj = tuple(stored)
        if depth > 1 or len(obj) > 8:
            self.account(obj, (elements, nbytes, depth))
        else:
            self.info.pop(id(obj), None)
        self.push(obj)

    # -- arrays ----------------------------------------------------------------------------
    def dtype_of(self, v) -> np.dtype:
        if not isinstance(v, _Dtype):
            self.refuse(f"expected a numpy dtype, got {_kind(v)}")
        return v.dtype

    def shape_of(self, v) -> tuple:
        if (not isinstance(v, tuple) or len(v) > _MAX_NDIM
                or not all(type(d) is int and 0 <= d <= _MAX_DIM for d in v)):
            self.refuse(f"an array shape must be a tuple of at most {_MAX_NDIM} sizes in [0, 2**48], got "
                        f"{_kind(v)} {v!r:.80}")
        return v

    def allocate(self, nbytes: int):
        self.allocated += nbytes
        if self.allocated > self.max_expanded:
            self.refuse(f"the arrays and bytes built add up to more than {_SHARING}x the file's size "
                        "(the same bytes are used again and again)")

    def array(self, raw, dtype: np.dtype, shape: tuple, order: str) -> np.ndarray:
        if not isinstance(raw, _Raw):
            self.refuse(f"array data must be bytes, got {_kind(raw)}")
        want = math.prod(shape) * dtype.itemsize
        if math.prod(d for d in shape if d) * dtype.itemsize > _MAX_ARRAY_BYTES:
            self.refuse(f"array shape {shape} is larger than any array can be")
        if len(raw.view) != want:
            self.refuse(f"an array of shape {shape} and dtype {dtype} needs {want} bytes, the file gives "
                        f"{len(raw.view)}")
        self.allocate(want)
        return np.frombuffer(raw.view, dtype=dtype).reshape(shape, order=order).copy(order="A")

    # -- REDUCE and BUILD: the only "calls", each matched against one fixed shape ------------
    def reduce(self, func, args):
        if not isinstance(func, _Global):
            self.refuse(f"REDUCE calls {_kind(func)}; only a few numpy and container globals may appear")
        a = args.items if isinstance(args, _Args) else args
        if not isinstance(a, tuple):
            self.refuse(f"REDUCE arguments must be a tuple, got {_kind(args)}")
        k = func.kind
        if k == "reconstruct":
            if not (len(a) == 3 and isinstance(a[0], _Global) and a[0].kind == "ndarray" and _eq(a[1], (0,))
                    and isinstance(a[2], _Raw) and a[2].view == b"b"):
                self.refuse("numpy _reconstruct is only accepted as _reconstruct(numpy.ndarray, (0,), b'b')")
            return _Pending("array")
        if k == "dtype":
            if not (len(a) == 3 and isinstance(a[0], str) and _eq(a[1:], (False, True))):
                self.refuse(f"numpy.dtype is only accepted as dtype(CODE, False, True), got {a!r:.80}")
            if a[0] not in _DTYPE_CODES:
                self.refuse(f"dtype {a[0]!r:.40} is not a numeric or bool dtype; accepted: "
                            f"{', '.join(sorted(_DTYPE_CODES))}")
            return _Pending("dtype", a[0])
        if k == "scalar":
            if len(a) != 2:
                self.refuse("numpy scalar is only accepted as scalar(dtype, bytes)")
            dtype = self.dtype_of(a[0])
            return self.array(a[1], dtype, (), "C")[()]
        if k == "frombuffer":
            if not (len(a) == 4 and (_eq(a[3], "C") or _eq(a[3], "F"))):
                self.refuse("numpy _frombuffer is only accepted as _frombuffer(bytes, dtype, shape, 'C'|'F')")
            return self.array(a[0], self.dtype_of(a[1]), self.shape_of(a[2]), a[3])
        if k == "OrderedDict":
            if a:
                self.refuse("collections.OrderedDict is only accepted with no arguments")
            obj = collections.OrderedDict()
            self.info.pop(id(obj), None)
            return obj
        if k == "tuple":  # paddle.save writes a Tensor as tuple(((name, ndarray),))
            if not (len(a) == 1 and isinstance(a[0], tuple) and len(a[0]) == 2 and isinstance(a[0][0], str)
                    and isinstance(a[0][1], np.ndarray)):
                self.refuse("builtins.tuple is only accepted as paddle's tensor record tuple(((name, array),))")
            return a[0][1]
        if k == "eval":  # paddle.save writes a DenseTensor as eval('data', {'data': ndarray}); never evaluated
            if not (len(a) == 2 and _eq(a[0], "data") and type(a[1]) is dict and len(a[1]) == 1
                    and isinstance(a[1].get("data"), np.ndarray)):
                self.refuse("refusing to load global builtins.eval: it is only accepted as paddle's "
                            "DenseTensor record eval('data', {'data': array}), which is read, not evaluated")
            return a[1]["data"]
        if k == "encode":  # protocol 2 writes bytes as _codecs.encode(text, 'latin1')
            if not (len(a) == 2 and isinstance(a[0], str) and _eq(a[1], "latin1")):
                self.refuse("_codecs.encode is only accepted as encode(str, 'latin1')")
            self.allocate(len(a[0]))
            try:
                return _Raw(memoryview(a[0].encode("latin-1")))
            except UnicodeEncodeError:
                self.refuse("_codecs.encode text has characters outside latin-1")
        if k == "bytes":
            if a:
                self.refuse("builtins.bytes is only accepted with no arguments (the empty bytes)")
            return _Raw(memoryview(b""))
        self.refuse(f"{func.name} cannot be called directly")

    def build(self, target, state):
        s = state.items if isinstance(state, _Args) else state
        if not isinstance(target, _Pending) or target.value is not None:
            self.refuse(f"BUILD applies state to {_kind(target)}; only a new numpy array or dtype takes state")
        if not isinstance(s, tuple):
            self.refuse(f"BUILD state must be a tuple, got {_kind(state)}")
        if target.kind == "dtype":
            code = target.code
            endian = ("|",) if code in ("b1", "i1", "u1") else ("<", ">")
            if not (len(s) == 8 and _eq(s[0], 3) and type(s[1]) is str and s[1] in endian
                    and _eq(s[2:5], _NONE_3) and _eq(s[5:], (-1, -1, 0))):
                self.refuse(f"dtype {code} state must be (3, {'|'.join(endian)}, None, None, None, -1, -1, 0), "
                            f"got {s!r:.120}")
            target.value = _Dtype(np.dtype(s[1] + code))
        else:
            if not (len(s) == 5 and _eq(s[0], 1) and type(s[3]) is bool):
                self.refuse("array state must be (1, shape, dtype, is_fortran, bytes)")
            dtype = self.dtype_of(s[2])
            arr = self.array(s[4], dtype, self.shape_of(s[1]), "F" if s[3] else "C")
            # numpy's __setstate__ hands back non-native byte order swapped to native; so does this
            target.value = arr if dtype.isnative else arr.astype(dtype.newbyteorder("="), order="K")
        self.stack[-1] = target.value

    # -- memo ------------------------------------------------------------------------------
    def put(self, index: int):
        if index != len(self.memo):
            self.refuse(f"memo index {index} out of order (paddle.save numbers them 0, 1, 2, ...; "
                        f"next is {len(self.memo)})")
        if index >= self.max_elements:
            self.refuse(f"more than max_elements={self.max_elements} memo entries",
                        "Raise max_elements if the file is trusted and this large.")
        self.memo.append(self.top())

    def get(self, index: int):
        if index >= len(self.memo):
            self.refuse(f"memo index {index} was never stored ({len(self.memo)} stored)")
        v = self.memo[index]
        if isinstance(v, _Pending):
            if v.value is None:
                self.refuse(f"a numpy {v.kind} is referenced before it is built")
            v = v.value
        elif isinstance(v, (list, dict)):
            self.sealed.add(id(v))
        self.push(v)

    def run(self):
        data, end, table = self.data, self.end, _TABLE
        if data[:1] != b"\x80" or end < 2 or not 2 <= data[1] <= 5:
            self.refuse("not a pickle of protocol 2-5 (Paddle .pdparams start with bytes 0x80 0x02-0x05)",
                        "For safetensors files use pdx.load or pdx.checkpoint.load_safetensors.")
        self.pos = 2
        while True:
            self.op_pos = pos = self.pos
            if pos >= end:
                self.refuse("the file ends before the pickle's STOP opcode (truncated?)",
                            "Copy or save the file again.")
            handler = table[data[pos]]
            if handler is None:
                self.refuse("opcode not among those paddle.save writes")
            self.pos = pos + 1
            if handler(self) is _STOP:
                break
        if self.pos != end:
            self.refuse(f"{end - self.pos} bytes follow the pickle's STOP opcode")
        if self.marks or len(self.stack) != 1:
            self.refuse(f"the pickle stops with {len(self.stack)} values and {len(self.marks)} open MARKs "
                        "(a complete pickle leaves exactly one value)")
        return self.value(self.stack[0])[0]


# -- one function per accepted opcode (named op_<pickletools name>) ------------------------------

def op_PROTO(p):
    p.refuse("PROTO appears twice")


def op_FRAME(p):
    if p.uint(8) > p.end - p.pos:
        p.refuse("a FRAME is longer than the rest of the file (truncated?)", "Copy or save the file again.")


def op_STOP(p):
    return _STOP


def op_MARK(p):
    if len(p.marks) >= p.max_depth + 4:
        p.refuse(f"more than max_depth={p.max_depth} open MARKs")
    p.marks.append(len(p.stack))


def op_EMPTY_DICT(p):
    p.new_container({})


def op_EMPTY_LIST(p):
    p.new_container([])


def op_EMPTY_TUPLE(p):
    p.make_tuple(())


def op_TUPLE(p):
    p.make_tuple(p.pop_mark())


def op_TUPLE1(p):
    p.make_tuple((p.pop(),))


def op_TUPLE2(p):
    b = p.pop()
    p.make_tuple((p.pop(), b))


def op_TUPLE3(p):
    c, b = p.pop(), p.pop()
    p.make_tuple((p.pop(), b, c))


def _extend(p, items):
    lst = p.top()
    if type(lst) is not list:
        p.refuse(f"items are appended to {_kind(lst)}, not a list")
    lst.extend(p.grow(lst, items))


def op_APPEND(p):
    _extend(p, [p.pop()])


def op_APPENDS(p):
    _extend(p, p.pop_mark())


def _setitems(p, items):
    d = p.top()
    if not isinstance(d, dict):
        p.refuse(f"items are set in {_kind(d)}, not a dict")
    if len(items) % 2:
        p.refuse(f"an odd number ({len(items)}) of keys and values")
    for k in items[::2]:
        if type(k) not in _KEYS:
            p.refuse(f"a dict key must be a str, int, float, bool or None, got {_kind(k)}")
    stored = p.grow(d, items)
    for i in range(0, len(stored), 2):
        d[stored[i]] = stored[i + 1]


def op_SETITEM(p):
    v = p.pop()
    _setitems(p, [p.pop(), v])


def op_SETITEMS(p):
    _setitems(p, p.pop_mark())


def op_NONE(p):
    p.push(None)


def op_NEWTRUE(p):
    p.push(True)


def op_NEWFALSE(p):
    p.push(False)


def op_BININT(p):
    p.push(struct.unpack_from("<i", p.data, p.take(4))[0])


def op_BININT1(p):
    p.push(p.data[p.take(1)])


def op_BININT2(p):
    p.push(p.uint(2))


def op_LONG1(p):
    n = p.uint(1)
    start = p.take(n)
    p.push(int.from_bytes(p.data[start:start + n], "little", signed=True))


def op_BINFLOAT(p):
    p.push(struct.unpack_from(">d", p.data, p.take(8))[0])


def op_SHORT_BINUNICODE(p):
    p.push(p.text(p.data[p.take(1)]))


def op_BINUNICODE(p):
    p.push(p.text(p.uint(4)))


def op_BINUNICODE8(p):
    p.push(p.text(p.uint(8)))


def _raw(p, n):
    start = p.take(n)
    p.push(_Raw(p.view[start:start + n]))


def op_SHORT_BINBYTES(p):
    _raw(p, p.data[p.take(1)])


def op_BINBYTES(p):
    _raw(p, p.uint(4))


def op_BINBYTES8(p):
    _raw(p, p.uint(8))


def op_BYTEARRAY8(p):  # protocol 5: numpy's in-band array buffer
    _raw(p, p.uint(8))


def op_MEMOIZE(p):
    p.put(len(p.memo))


def op_BINPUT(p):
    p.put(p.data[p.take(1)])


def op_LONG_BINPUT(p):
    p.put(p.uint(4))


def op_BINGET(p):
    p.get(p.data[p.take(1)])


def op_LONG_BINGET(p):
    p.get(p.uint(4))


def _global(p, module, name):
    kind = _GLOBALS.get((module, name))
    if kind is None:
        p.refuse(f"refusing to load global {module}.{name}: it is not one paddle.save writes, and "
                 "loading it could run code")
    p.push(_Global(kind, f"{module}.{name}"))


def op_GLOBAL(p):
    lines = []
    for _ in range(2):
        end = p.data.find(b"\n", p.pos, p.pos + _MAX_GLOBAL_LINE)
        if end < 0:
            p.refuse(f"a GLOBAL name is not a line of at most {_MAX_GLOBAL_LINE} bytes (truncated?)")
        try:
            lines.append(p.data[p.pos:end].decode("ascii"))
        except UnicodeDecodeError:
            p.refuse("a GLOBAL name is not ASCII")
        p.pos = end + 1
    _global(p, *lines)


def op_STACK_GLOBAL(p):
    name, module = p.pop(), p.pop()
    if not (isinstance(module, str) and isinstance(name, str)):
        p.refuse(f"STACK_GLOBAL needs two strings, got {_kind(module)} and {_kind(name)}")
    _global(p, module, name)


def op_REDUCE(p):
    args = p.pop()
    func = p.pop()
    p.push(p.reduce(func, args))


def op_BUILD(p):
    state = p.pop()
    p.build(p.top(), state)


_TABLE = [None] * 256
for _op in pickletools.opcodes:
    _TABLE[ord(_op.code)] = globals().get("op_" + _op.name)


def parse(data: bytes, path: str, *, max_depth: int, max_elements: int):
    """The object the pickle `data` describes, built as data; `PickleRefusedError` otherwise."""
    return _Parser(data, path, max_depth, max_elements).run()
