"""Process info and collectives: Paddle's `dist.all_reduce` & co. in two settings.

Eager, across the processes of a `jax.distributed` job (`pdx launch`,
`python -m pdx.distributed.launch`, `dist.spawn`): a rank is a process (one
controller per host drives all of its devices, JAX's model), and each
collective is one small compiled program over a mesh made of the first
device of every process in the group: each process puts its tensor in as
its row of a (group size, ...) global array, the program reduces / selects
rows, and each process reads its own piece back. The program is compiled
once per (op, group, shape, dtype). On CPU the transport is gloo.

Traced, inside `dist.local_map` (or your own `jax.shard_map` with a group
that names mesh axes, `dist.new_group(axis_name=...)`): a rank is a device
along the group's mesh axes and the ops are `lax.psum`, `all_gather`,
`psum_scatter`, `all_to_all`.

Paddle's collectives overwrite their tensor argument; pdx's arrays are
immutable, so ops whose result is one tensor return it
(`x = dist.all_reduce(x)`); ops that fill a list (`all_gather`,
`alltoall`, `*_object_list`) fill it as Paddle does. A Parameter
(`nnx.Variable`) passed in is updated in place. `sync_op=False` is accepted:
results are ready when read.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import pickle
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = [
    "Group", "ParallelEnv", "ReduceOp", "all_gather", "all_gather_object", "all_reduce", "alltoall",
    "alltoall_single", "barrier", "broadcast", "broadcast_object_list", "destroy_process_group", "gather",
    "get_backend", "get_group", "get_rank", "get_world_size", "gloo_barrier", "gloo_init_parallel_env",
    "gloo_release", "init_parallel_env", "irecv", "is_available", "is_initialized", "isend", "new_group", "recv",
    "recv_object_list", "reduce", "reduce_scatter", "scatter", "scatter_object_list", "send", "send_object_list",
    "shutdown_process_group", "wait",
]


class ReduceOp:
    """Reductions for `all_reduce`, `reduce`, `reduce_scatter` (Paddle's values)."""

    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


_OP_NAMES = {ReduceOp.SUM: "SUM", ReduceOp.MAX: "MAX", ReduceOp.MIN: "MIN", ReduceOp.PROD: "PROD", ReduceOp.AVG: "AVG"}


class Group:
    """A communication group: processes (eager) and, optionally, the mesh axes it spans inside `local_map`.

    Attributes follow Paddle's: `ranks` (global ranks), `nranks` /
    `world_size`, `rank` (this process's index in the group, -1 if not a
    member), `id`, `name`; `axis_name` is pdx's: the mesh axis (or tuple of
    axes) the group means inside a traced `local_map` / `shard_map`.
    """

    def __init__(self, ranks: Sequence[int], id: int, name: str | None = None, axis_name=None):  # noqa: A002
        self.ranks = list(ranks)
        self.id = id
        self.name = name or f"_default_pg{id}"
        self.axis_name = axis_name

    @property
    def nranks(self) -> int:
        return len(self.ranks)

    world_size = nranks

    @property
    def rank(self) -> int:
        return self.get_group_rank(jax.process_index())

    @property
    def backend(self) -> str:
        return get_backend()

    @property
    def process_group(self):
        return self

    def is_member(self) -> bool:
        return jax.process_index() in self.ranks

    def get_group_rank(self, rank: int) -> int:
        return self.ranks.index(rank) if rank in self.ranks else -1

    def __repr__(self) -> str:
        axis = f", axis_name={self.axis_name!r}" if self.axis_name is not None else ""
        return f"Group(id={self.id}, ranks={self.ranks}, nranks={self.nranks}{axis})"


_GROUPS: dict[int, Group] = {}
_STATE = {"initialized": False}
_LOCAL_AXES: list[tuple[str, ...]] = []  # mesh axes of the local_map being traced (innermost last)


def _global_group() -> Group:
    if 0 not in _GROUPS or _GROUPS[0].nranks != jax.process_count():
        _GROUPS[0] = Group(range(jax.process_count()), 0)
    return _GROUPS[0]


@contextlib.contextmanager
def local_axes(names):
    """Inside: collectives on traced values reduce over these mesh axes (set by `local_map`)."""
    _LOCAL_AXES.append(tuple(names))
    try:
        yield
    finally:
        _LOCAL_AXES.pop()


# -- process info ----------------------------------------------------------------------------------


def init_parallel_env(nccl_config=None) -> Group:
    """Join the job this process was started in (`pdx.parallel.init`) and return the global group.

    Alone (no launcher environment) it is a one-process job.

    Example:
      >>> import pdx.distributed as dist
      >>> dist.init_parallel_env().nranks, dist.get_rank(), dist.get_world_size()
      (1, 0, 1)
    """
    from pdx.parallel import init

    init()
    _STATE["initialized"] = True
    return _global_group()


def is_initialized() -> bool:
    """Whether `init_parallel_env` ran in this process."""
    return _STATE["initialized"]


def is_available() -> bool:
    """Collectives are always available (gloo on CPU, the accelerator's otherwise)."""
    return True


def get_backend(group: Group | None = None) -> str:
    """"GLOO" on CPU, "NCCL" on GPUs, the platform name in capitals otherwise."""
    platform = jax.default_backend()
    return {"cpu": "GLOO", "gpu": "NCCL", "cuda": "NCCL", "rocm": "RCCL"}.get(platform, platform.upper())


def get_rank(group: Group | None = None) -> int:
    """This process's rank (in `group`, -1 if not a member; default: the job).

    Example:
      >>> import pdx.distributed as dist
      >>> dist.get_rank()
      0
    """
    return jax.process_index() if group is None else group.rank


def get_world_size(group: Group | None = None) -> int:
    """Processes in the job (or in `group`)."""
    return jax.process_count() if group is None else group.nranks


class ParallelEnv:
    """Paddle's `ParallelEnv`: this process's place in the job, read from JAX and the launcher."""

    @property
    def rank(self) -> int:
        return jax.process_index()

    @property
    def world_size(self) -> int:
        return jax.process_count()

    nranks = world_size

    @property
    def local_rank(self) -> int:
        return int(os.environ.get("PDX_LOCAL_RANK", os.environ.get("PADDLE_LOCAL_RANK", "0")))

    @property
    def device_id(self) -> int:
        return jax.local_devices()[0].id

    dev_id = device_id

    @property
    def device_type(self) -> str:
        return jax.default_backend()

    @property
    def current_endpoint(self) -> str:
        return os.environ.get("PADDLE_CURRENT_ENDPOINT", f"127.0.0.1:{6170 + self.rank}")

    @property
    def trainer_endpoints(self) -> list[str]:
        found = os.environ.get("PADDLE_TRAINER_ENDPOINTS")
        return found.split(",") if found else [f"127.0.0.1:{6170 + r}" for r in range(self.world_size)]

    nrings = 1
    pg_timeout = 1800000


def new_group(ranks: Sequence[int] | None = None, backend=None, timeout=datetime.timedelta(seconds=1800),
              nccl_comm_init_option: int = 0, nccl_config=None, *, axis_name=None) -> Group:
    """A group of processes (`ranks`; default all), or of mesh axes inside local_map (`axis_name=`).

    Example:
      >>> import pdx.distributed as dist
      >>> dist.new_group([0]).nranks
      1
    """
    n = jax.process_count()
    ranks = list(range(n)) if ranks is None else [int(r) for r in ranks]
    bad = [r for r in ranks if not 0 <= r < n]
    if bad or len(set(ranks)) != len(ranks) or not ranks:
        raise ValueError(f"new_group: ranks must be distinct process ranks in [0, {n}); got {ranks}")
    group = Group(ranks, max([0, *_GROUPS]) + 1, axis_name=axis_name)
    _GROUPS[group.id] = group
    return group


def get_group(id: int = 0) -> Group:  # noqa: A002
    """The group with this id (0: the global group)."""
    if id == 0:
        return _global_group()
    if id not in _GROUPS:
        raise ValueError(f"get_group: no group with id {id}; existing ids: {sorted(_GROUPS)}")
    return _GROUPS[id]


def destroy_process_group(group: Group | None = None) -> None:
    """Forget `group` (default: every group and fleet's active mesh; the job itself stays joined)."""
    if group is None:
        from pdx.distributed.fleet._fleet import _FLEET

        _GROUPS.clear()
        _STATE["initialized"] = False
        _FLEET.release()
    else:
        _GROUPS.pop(group.id, None)


shutdown_process_group = destroy_process_group


def gloo_init_parallel_env(rank_id: int, rank_num: int, server_endpoint: str) -> None:
    """Paddle's CPU-only gloo setup: here `init_parallel_env` (gloo is the CPU transport already)."""
    init_parallel_env()


def gloo_barrier() -> None:
    """`barrier()` over the job."""
    barrier()


def gloo_release() -> None:
    """Nothing to release: the job's transport lives as long as the process."""


# -- the two execution paths -------------------------------------------------------------------------


def _value(tensor):
    return tensor.get_value() if isinstance(tensor, nnx.Variable) else jnp.asarray(tensor)


def _give_back(tensor, result):
    """Paddle overwrites its argument: do that for Variables, return the new array either way."""
    if isinstance(tensor, nnx.Variable):
        tensor.set_value(result)
        return tensor
    return result


def _traced_axes(group: Group | None, fn: str, *values):
    """Mesh axes to communicate over when `values` are traced inside local_map / shard_map, else None."""
    if not any(isinstance(v, jax.core.Tracer) for v in values):
        return None
    if group is not None and group.axis_name is not None:
        return group.axis_name
    if _LOCAL_AXES:
        return _LOCAL_AXES[-1]
    raise RuntimeError(f"dist.{fn}: called on a traced value outside dist.local_map. Inside pdx.jit the "
                       "compiler does the communication: place values with dist.shard_tensor / dist.reshard; "
                       "for per-device code use dist.local_map (or jax.shard_map with "
                       "dist.new_group(axis_name=...))")


def _group(group: Group | None) -> Group:
    return _global_group() if group is None else group


def _first_devices() -> dict[int, jax.Device]:
    out: dict[int, jax.Device] = {}
    for d in sorted(jax.devices(), key=lambda d: d.id):
        out.setdefault(d.process_index, d)
    return out


_PROGRAMS: dict = {}


def _exchange(kind: str, group: Group, value, program, out_rows: bool):
    """Run `program` on the (group size, ...) stack of every member's `value`; return this process's result.

    out_rows=False: the program's result is the same for all (replicated).
    out_rows=True: it returns one row per member and each gets its own.
    """
    first = _first_devices()
    me = first[jax.process_index()]
    mesh = Mesh(np.array([first[r] for r in group.ranks], dtype=object), ("ranks",))
    key = (kind, tuple(group.ranks), value.shape, str(value.dtype), out_rows)
    if key not in _PROGRAMS:
        out = NamedSharding(mesh, PartitionSpec("ranks") if out_rows else PartitionSpec())
        _PROGRAMS[key] = jax.jit(program, out_shardings=out)
    stacked = jax.make_array_from_single_device_arrays(
        (group.nranks,) + tuple(value.shape), NamedSharding(mesh, PartitionSpec("ranks")),
        [jax.device_put(value[None], me)])
    result = _PROGRAMS[key](stacked).addressable_data(0)
    return result[0] if out_rows else result


def _reduce_rows(a, op: int):
    if op == ReduceOp.SUM:
        return a.sum(0, dtype=a.dtype)
    if op == ReduceOp.MAX:
        return a.max(0)
    if op == ReduceOp.MIN:
        return a.min(0)
    if op == ReduceOp.PROD:
        return a.prod(0, dtype=a.dtype)
    mean = a.mean(0)
    return mean.astype(a.dtype) if jnp.issubdtype(a.dtype, jnp.floating) else (a.sum(0) // a.shape[0]).astype(a.dtype)


def _check_op(op, fn: str) -> int:
    op = int(op)
    if op not in _OP_NAMES:
        raise ValueError(f"dist.{fn}: op must be a dist.ReduceOp (SUM, MAX, MIN, PROD, AVG); got {op!r}")
    return op


def _check_rank(rank, group: Group, fn: str, what: str) -> int:
    if rank not in group.ranks:
        raise ValueError(f"dist.{fn}: {what}={rank!r} is not a rank of the group {group.ranks}")
    return group.ranks.index(rank)


def _traced_reduce(x, axes, op: int):
    if op == ReduceOp.SUM:
        return jax.lax.psum(x, axes)
    if op == ReduceOp.MAX:
        return jax.lax.pmax(x, axes)
    if op == ReduceOp.MIN:
        return jax.lax.pmin(x, axes)
    if op == ReduceOp.AVG:
        return jax.lax.pmean(x, axes)
    return jax.lax.all_gather(x, axes).prod(0)


def _traced_rank(axes):
    return jax.lax.axis_index(axes)


# -- collectives on one tensor -------------------------------------------------------------------------


def all_reduce(tensor, op=ReduceOp.SUM, group: Group | None = None, sync_op: bool = True):
    """Reduce `tensor` over the group; every member gets the result (returned).

    Example:
      >>> import jax.numpy as jnp, pdx.distributed as dist
      >>> dist.all_reduce(jnp.array([1.0, 2.0])).tolist()   # one process: unchanged
      [1.0, 2.0]
    """
    op, x = _check_op(op, "all_reduce"), _value(tensor)
    axes = _traced_axes(group, "all_reduce", x)
    if axes is not None:
        return _traced_reduce(x, axes, op)
    group = _group(group)
    if not group.is_member():
        return tensor
    return _give_back(tensor, _exchange(f"all_reduce{op}", group, x, lambda a: _reduce_rows(a, op), False))


def broadcast(tensor, src: int, group: Group | None = None, sync_op: bool = True):
    """Every member gets rank `src`'s tensor (returned)."""
    x = _value(tensor)
    axes = _traced_axes(group, "broadcast", x)
    if axes is not None:
        return jax.lax.all_gather(x, axes)[src]
    group = _group(group)
    if not group.is_member():
        return tensor
    i = _check_rank(src, group, "broadcast", "src")
    return _give_back(tensor, _exchange(f"broadcast{i}", group, x, lambda a: a[i], False))


def reduce(tensor, dst: int, op=ReduceOp.SUM, group: Group | None = None, sync_op: bool = True):
    """Rank `dst` gets the reduction over the group; the others get their tensor back unchanged."""
    op, x = _check_op(op, "reduce"), _value(tensor)
    axes = _traced_axes(group, "reduce", x)
    if axes is not None:
        return jnp.where(_traced_rank(axes) == dst, _traced_reduce(x, axes, op), x)
    group = _group(group)
    if not group.is_member():
        return tensor
    _check_rank(dst, group, "reduce", "dst")
    out = _exchange(f"all_reduce{op}", group, x, lambda a: _reduce_rows(a, op), False)
    return _give_back(tensor, out) if jax.process_index() == dst else tensor


def _stack(tensors, group_size: int, fn: str, what: str):
    tensors = [jnp.asarray(_value(t)) for t in tensors]
    if len(tensors) != group_size:
        raise ValueError(f"dist.{fn}: {what} must hold one tensor per rank of the group ({group_size}); "
                         f"got {len(tensors)}")
    shapes = {(t.shape, str(t.dtype)) for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"dist.{fn}: the tensors of {what} must share one shape and dtype; got {sorted(shapes)}")
    return jnp.stack(tensors)


def _axes_size(axes) -> int:
    return jax.lax.psum(1, axes)


def reduce_scatter(tensor, tensor_list, op=ReduceOp.SUM, group: Group | None = None, sync_op: bool = True):
    """Rank i gets the reduction over all ranks of their `tensor_list[i]` (returned)."""
    op = _check_op(op, "reduce_scatter")
    values = [_value(t) for t in tensor_list]
    axes = _traced_axes(group, "reduce_scatter", *values)
    if axes is not None:
        stacked = _stack(values, _axes_size(axes), "reduce_scatter", "tensor_list")
        if op == ReduceOp.SUM:
            return jax.lax.psum_scatter(stacked, axes, scatter_dimension=0, tiled=False)
        return _traced_reduce(stacked, axes, op)[_traced_rank(axes)]
    group = _group(group)
    if not group.is_member():
        return tensor
    stacked = _stack(values, group.nranks, "reduce_scatter", "tensor_list")
    out = _exchange(f"reduce_scatter{op}", group, stacked, lambda a: _reduce_rows(a, op), True)
    return _give_back(tensor, out)


def scatter(tensor, tensor_list=None, src: int = 0, group: Group | None = None, sync_op: bool = True):
    """Rank i gets `tensor_list[i]` of rank `src` (returned); only `src` needs to pass `tensor_list`."""
    x = _value(tensor)
    values = [_value(t) for t in tensor_list] if tensor_list is not None else None
    axes = _traced_axes(group, "scatter", x, *(values or []))
    if axes is not None:
        stacked = _stack(values, _axes_size(axes), "scatter", "tensor_list")
        return jax.lax.all_gather(stacked, axes)[src][_traced_rank(axes)]
    group = _group(group)
    if not group.is_member():
        return tensor
    i = _check_rank(src, group, "scatter", "src")
    if jax.process_index() == src:
        if values is None:
            raise ValueError(f"dist.scatter: rank {src} (src) must pass tensor_list")
        stacked = _stack(values, group.nranks, "scatter", "tensor_list")
    else:
        stacked = jnp.zeros((group.nranks,) + tuple(x.shape), x.dtype)
    return _give_back(tensor, _exchange(f"scatter{i}", group, stacked, lambda a: a[i], True))


def all_gather(tensor_list: list, tensor, group: Group | None = None, sync_op: bool = True):
    """Append every rank's `tensor` to `tensor_list` (rank order); also returns the list.

    Example:
      >>> import jax.numpy as jnp, pdx.distributed as dist
      >>> parts = []
      >>> len(dist.all_gather(parts, jnp.ones(2)))
      1
    """
    x = _value(tensor)
    axes = _traced_axes(group, "all_gather", x)
    if axes is not None:
        gathered = jax.lax.all_gather(x, axes)
    else:
        group = _group(group)
        if not group.is_member():
            return tensor_list
        gathered = _exchange("all_gather", group, x, lambda a: a, False)
    tensor_list.extend(gathered[i] for i in range(gathered.shape[0]))
    return tensor_list


def gather(tensor, gather_list: list | None = None, dst: int = 0, group: Group | None = None, sync_op: bool = True):
    """Rank `dst` appends every rank's `tensor` to `gather_list` (eager only)."""
    group = _group(group)
    if _traced_axes(group, "gather", _value(tensor)) is not None:
        raise RuntimeError("dist.gather: inside local_map every device holds the result; use dist.all_gather")
    _check_rank(dst, group, "gather", "dst")
    if not group.is_member():
        return gather_list
    parts: list = []
    all_gather(parts, tensor, group)
    if jax.process_index() == dst:
        if gather_list is None:
            raise ValueError(f"dist.gather: rank {dst} (dst) must pass gather_list")
        gather_list.extend(parts)
    return gather_list


def alltoall(out_tensor_list: list, in_tensor_list, group: Group | None = None, sync_op: bool = True):
    """Rank i sends `in_tensor_list[j]` to rank j; `out_tensor_list` gets one tensor from each rank."""
    values = [_value(t) for t in in_tensor_list]
    axes = _traced_axes(group, "alltoall", *values)
    if axes is not None:
        stacked = _stack(values, _axes_size(axes), "alltoall", "in_tensor_list")
        received = jax.lax.all_to_all(stacked, axes, 0, 0, tiled=False)
    else:
        group = _group(group)
        if not group.is_member():
            return out_tensor_list
        stacked = _stack(values, group.nranks, "alltoall", "in_tensor_list")
        # row i of the program's input is rank i's list; rank j's output is column j
        received = _exchange("alltoall", group, stacked, lambda a: jnp.swapaxes(a, 0, 1), True)
    out_tensor_list.extend(received[i] for i in range(received.shape[0]))
    return out_tensor_list


def alltoall_single(out_tensor, in_tensor, in_split_sizes=None, out_split_sizes=None, group: Group | None = None,
                    sync_op: bool = True):
    """`in_tensor` split evenly along dim 0, piece j to rank j; returns the pieces received, concatenated."""
    if in_split_sizes or out_split_sizes:
        sizes = set(in_split_sizes or []) | set(out_split_sizes or [])
        if len(sizes) != 1:
            raise ValueError("dist.alltoall_single: only equal splits are supported; got in_split_sizes="
                             f"{in_split_sizes}, out_split_sizes={out_split_sizes}. Pad the pieces to one size")
    x = _value(in_tensor)
    n = _axes_size(_traced_axes(group, "alltoall_single", x)) if isinstance(x, jax.core.Tracer) else _group(group).nranks
    if x.shape[0] % n:
        raise ValueError(f"dist.alltoall_single: dim 0 of in_tensor ({x.shape[0]}) is not divisible by the group size {n}")
    received: list = []
    alltoall(received, list(jnp.split(x, n)), group)
    return _give_back(out_tensor, jnp.concatenate(received)) if received else out_tensor


def send(tensor, dst: int = 0, group: Group | None = None, sync_op: bool = True):
    """Send `tensor` to rank `dst`, which calls `recv(tensor_like, src=<this rank>)` (eager only)."""
    _p2p("send", _value(tensor), jax.process_index(), dst, group)
    return None


def recv(tensor, src: int = 0, group: Group | None = None, sync_op: bool = True):
    """Receive from rank `src` a tensor shaped like `tensor` (returned; eager only)."""
    return _give_back(tensor, _p2p("recv", _value(tensor), src, jax.process_index(), group))


def _p2p(fn: str, x, src: int, dst: int, group: Group | None):
    if isinstance(x, jax.core.Tracer):
        raise RuntimeError(f"dist.{fn}: point-to-point calls are eager only; inside local_map / shard_map pass "
                           "values round the devices with jax.lax.ppermute")
    group = _group(group)
    for what, r in (("src", src), ("dst", dst)):
        _check_rank(r, group, fn, what)
    if src == dst:
        raise ValueError(f"dist.{fn}: src and dst are both rank {src}")
    pair = Group(sorted((src, dst)), -1)
    i = pair.ranks.index(src)
    return _exchange(f"p2p{i}", pair, x, lambda a: a[i], False)


def send_object_list(object_list: list, dst: int = 0, group: Group | None = None) -> None:
    """Send a list of picklable objects to rank `dst` (which calls `recv_object_list`)."""
    payload = np.frombuffer(pickle.dumps(list(object_list)), np.uint8)
    send(jnp.asarray(payload.size, jnp.int32), dst, group)
    send(jnp.asarray(payload), dst, group)


def recv_object_list(object_list: list, src: int = 0, group: Group | None = None) -> None:
    """Replace `object_list`'s items with the list rank `src` sent."""
    size = int(recv(jnp.zeros((), jnp.int32), src, group))
    data = recv(jnp.zeros((size,), jnp.uint8), src, group)
    object_list[:] = pickle.loads(np.asarray(data).tobytes())


def isend(tensor, dst: int, group: Group | None = None):
    """`send`, done when it returns (pdx has no pending tasks)."""
    return send(tensor, dst, group)


def irecv(tensor, src: int | None = None, group: Group | None = None):
    """`recv`, done when it returns; returns the received tensor."""
    return recv(tensor, 0 if src is None else src, group)


def wait(tensor, group: Group | None = None, use_calc_stream: bool = True) -> None:
    """Block until `tensor` is computed."""
    jax.block_until_ready(_value(tensor))


def barrier(group: Group | None = None) -> None:
    """Return once every member of the group has called barrier.

    Example:
      >>> import pdx.distributed as dist
      >>> dist.barrier()
    """
    group = _group(group)
    if group.is_member():
        jax.block_until_ready(_exchange("barrier", group, jnp.zeros((), jnp.int32), lambda a: a.sum(), False))


# -- objects (pickled, as Paddle does: exchange them only within your own job) ------------------------


def _gather_bytes(payload: bytes, group: Group) -> list[bytes]:
    data = np.frombuffer(payload, np.uint8)
    sizes = [int(s) for s in all_gather([], jnp.asarray(len(data), jnp.int32), group)]
    padded = np.zeros(max(sizes), np.uint8)
    padded[: len(data)] = data
    rows = all_gather([], jnp.asarray(padded), group)
    return [np.asarray(r)[:s].tobytes() for r, s in zip(rows, sizes)]


def all_gather_object(object_list: list, obj, group: Group | None = None) -> None:
    """Append every rank's picklable `obj` to `object_list` (rank order)."""
    group = _group(group)
    if group.is_member():
        object_list.extend(pickle.loads(b) for b in _gather_bytes(pickle.dumps(obj), group))


def broadcast_object_list(object_list: list, src: int, group: Group | None = None) -> None:
    """Replace `object_list`'s items with rank `src`'s."""
    group = _group(group)
    i = _check_rank(src, group, "broadcast_object_list", "src")
    if group.is_member():
        sent = _gather_bytes(pickle.dumps(list(object_list)) if jax.process_index() == src else b"", group)[i]
        object_list[:] = pickle.loads(sent)


def scatter_object_list(out_object_list: list, in_object_list: list | None = None, src: int = 0,
                        group: Group | None = None) -> None:
    """Rank i's `out_object_list` becomes `[in_object_list[i]]` of rank `src`."""
    group = _group(group)
    i = _check_rank(src, group, "scatter_object_list", "src")
    if not group.is_member():
        return
    if jax.process_index() == src and (in_object_list is None or len(in_object_list) != group.nranks):
        raise ValueError(f"dist.scatter_object_list: rank {src} (src) must pass in_object_list with one object "
                         f"per rank ({group.nranks})")
    sent = _gather_bytes(pickle.dumps(list(in_object_list)) if jax.process_index() == src else b"", group)[i]
    out_object_list[:] = [pickle.loads(sent)[group.rank]]
