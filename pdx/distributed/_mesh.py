"""ProcessMesh: Paddle's Cartesian topology of processes, owning a `jax.sharding.Mesh`.

Process ids index `jax.devices()`, the devices of every process of the job
in JAX's global order (one "process" in Paddle's sense is one device here),
and the dimension names become the mesh's axis names, so a placement on
mesh dimension "mp" is a PartitionSpec entry "mp".

The global mesh (`set_mesh`, `with mesh:`) is a trace-context setting
("pdx.distributed.mesh", `pdx/_trace_context.py`): code that places tensors
on it by default traces once more when it changes.
"""

from __future__ import annotations

import copy
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

from pdx import _trace_context

__all__ = ["ProcessMesh", "get_mesh", "set_mesh"]

_GLOBAL_MESH = _trace_context.DISTRIBUTED_MESH


class ProcessMesh:
    """An n-dimensional array of process (device) ids with a name per dimension.

    Args:
      mesh: a nested list or numpy array of distinct non-negative ints, each
        an index into `jax.devices()`.
      dim_names: one name per mesh dimension (default "d0", "d1", ...).
      shape, process_ids: an alternative to `mesh` (Paddle's compatibility form).

    Example:
      >>> import pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "mp"])
      >>> mesh.shape, mesh.get_dim_size("mp")
      ([2, 4], 4)
      >>> mesh[1].process_ids
      [4, 5, 6, 7]
      >>> dict(mesh.jax_mesh.shape)
      {'dp': 2, 'mp': 4}
    """

    def __init__(self, mesh=None, dim_names: list[str] | None = None, shape=None, process_ids=None) -> None:
        if mesh is None:
            if shape is None or process_ids is None:
                raise ValueError("ProcessMesh: give mesh=, or both shape= and process_ids=")
            ids = list(process_ids)
            if int(np.prod(shape)) != len(ids):
                raise ValueError(f"ProcessMesh: shape {list(shape)} holds {int(np.prod(shape))} processes but "
                                 f"process_ids has {len(ids)}")
            mesh = np.array(ids).reshape(shape)
        if isinstance(mesh, ProcessMesh):
            mesh = mesh.mesh
        arr = np.array(mesh)
        if arr.ndim == 0 or arr.size == 0:
            raise ValueError(f"ProcessMesh: mesh must be a non-empty nested list of ints; got {mesh!r}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"ProcessMesh: every element of the mesh must be an int; got {mesh!r}")
        ids = [int(i) for i in arr.flatten()]
        if min(ids) < 0:
            raise ValueError(f"ProcessMesh: process ids must be >= 0; got {min(ids)} in {ids}")
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"ProcessMesh: process ids must be unique; {dup} appear more than once in {ids}")
        n = jax.device_count()
        if max(ids) >= n:
            raise ValueError(f"ProcessMesh: the mesh has {len(ids)} processes with ids up to {max(ids)}, but there are "
                             f"only {n} devices (ids 0..{n - 1}); a process id indexes jax.devices() "
                             "(on CPU, XLA_FLAGS=--xla_force_host_platform_device_count=N gives N devices)")
        if dim_names is None:
            dim_names = [f"d{i}" for i in range(arr.ndim)]
        if isinstance(dim_names, str) or not all(isinstance(d, str) for d in dim_names):
            raise ValueError(f"ProcessMesh: dim_names must be a list of str; got {dim_names!r}")
        dim_names = list(dim_names)
        if len(dim_names) != arr.ndim:
            raise ValueError(f"ProcessMesh: dim_names {dim_names} has {len(dim_names)} names but the mesh has "
                             f"{arr.ndim} dimensions (shape {list(arr.shape)})")
        if len(set(dim_names)) != len(dim_names):
            raise ValueError(f"ProcessMesh: dim_names {dim_names} must be unique")
        self._mesh = arr.astype(np.int64)
        self._dim_names = dim_names
        self._jax_mesh: Mesh | None = None

    # -- Paddle's attributes ------------------------------------------------------------------
    @property
    def mesh(self) -> np.ndarray:
        return self._mesh

    @property
    def shape(self) -> list[int]:
        return list(self._mesh.shape)

    @property
    def ndim(self) -> int:
        return self._mesh.ndim

    @property
    def dim_names(self) -> list[str]:
        return list(self._dim_names)

    @property
    def process_ids(self) -> list[int]:
        return [int(i) for i in self._mesh.flatten()]

    @property
    def unique_id(self) -> int:
        return hash((tuple(self.shape), tuple(self.process_ids)))

    def get_dim_size(self, dim: str | int) -> int:
        return self.shape[self._dim_index(dim)]

    def _dim_index(self, dim: str | int) -> int:
        if isinstance(dim, int) and not isinstance(dim, bool):
            if not -self.ndim <= dim < self.ndim:
                raise ValueError(f"ProcessMesh: dim {dim} is out of range for a {self.ndim}-d mesh {self._dim_names}")
            return dim % self.ndim
        if dim not in self._dim_names:
            raise ValueError(f"ProcessMesh: {dim!r} is not a dimension of this mesh; its dim_names are {self._dim_names}")
        return self._dim_names.index(dim)

    def get_mesh_with_dim(self, dim_name: str, index=None) -> "ProcessMesh":
        """This mesh with `dim_name` moved first; with `index`, the sub-mesh at that position of it.

        Example: `mesh.get_mesh_with_dim("pp", 0)` is pipeline stage 0's mesh.
        """
        axis = self._dim_index(dim_name)
        order = [axis] + [i for i in range(self.ndim) if i != axis]
        names = [self._dim_names[i] for i in order]
        arr = self._mesh.transpose(order)
        if index is None:
            return ProcessMesh(arr, names)
        if len(names) > 1:
            return ProcessMesh(arr[index], names[1:])
        return ProcessMesh(np.atleast_1d(arr[index]), names)

    def get_submesh_with_dim(self, dim_name: str) -> "ProcessMesh":
        """The 1-d mesh along `dim_name` through this process's first device."""
        axis = self._dim_index(dim_name)
        reordered = self.get_mesh_with_dim(dim_name).mesh.reshape(self.shape[axis], -1)
        mine = jax.local_devices()[0]
        rank = next(i for i, d in enumerate(jax.devices()) if d == mine)
        cols = np.argwhere(reordered == rank)
        col = int(cols[0][1]) if len(cols) else 0
        return ProcessMesh(reordered[:, col], [dim_name])

    def __getitem__(self, index) -> "ProcessMesh":
        if isinstance(index, str):
            return self.get_submesh_with_dim(index)
        if isinstance(index, tuple):
            names = [self._dim_names[i] for i, item in enumerate(index) if isinstance(item, slice)]
            names += self._dim_names[len(index):]
            sub = self._mesh[index]
            return ProcessMesh(sub, names) if sub.shape else ProcessMesh([int(sub)])
        if isinstance(index, slice):
            return ProcessMesh(self._mesh[index], self._dim_names)
        sub = self._mesh[index]
        return ProcessMesh(sub, self._dim_names[1:]) if sub.shape else ProcessMesh([int(sub)])

    def __contains__(self, process_id) -> bool:
        return int(process_id) in self.process_ids

    def __eq__(self, other) -> bool:
        return (isinstance(other, ProcessMesh) and self.shape == other.shape
                and self.process_ids == other.process_ids and self._dim_names == other._dim_names)

    def __hash__(self) -> int:
        return hash((tuple(self.shape), tuple(self.process_ids), tuple(self._dim_names)))

    def __repr__(self) -> str:
        return f"shape {self.shape}, process_ids {self.process_ids}, dim_names {self._dim_names}"

    __str__ = __repr__

    def __deepcopy__(self, memo: dict[int, Any]) -> "ProcessMesh":
        return ProcessMesh(copy.deepcopy(self._mesh, memo), list(self._dim_names))

    def __enter__(self) -> "ProcessMesh":
        scope = _GLOBAL_MESH.set(self)
        scope.__enter__()
        self._scopes = getattr(self, "_scopes", []) + [scope]
        return self

    def __exit__(self, *exc) -> bool:
        self._scopes.pop().__exit__(*exc)
        return False

    # -- JAX -------------------------------------------------------------------------------------
    @property
    def jax_mesh(self) -> Mesh:
        """The `jax.sharding.Mesh`: devices `jax.devices()[id]` laid out like `mesh`, axes named by `dim_names`."""
        if self._jax_mesh is None:
            devices = np.array(jax.devices(), dtype=object)
            self._jax_mesh = Mesh(devices[self._mesh], tuple(self._dim_names))
        return self._jax_mesh

    @classmethod
    def from_jax_mesh(cls, mesh: Mesh) -> "ProcessMesh":
        """The ProcessMesh of a `jax.sharding.Mesh` (ids: positions in `jax.devices()`)."""
        position = {d: i for i, d in enumerate(jax.devices())}
        ids = np.vectorize(lambda d: position[d], otypes=[np.int64])(mesh.devices)
        out = cls(ids, list(mesh.axis_names))
        out._jax_mesh = mesh
        return out


def set_mesh(mesh: ProcessMesh) -> None:
    """Set the global mesh `parallelize`, `to_static` and `local_map` use by default.

    The global mesh spans the whole job: its size must equal the device count.

    Example:
      >>> import pdx.distributed as dist
      >>> dist.set_mesh(dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "mp"]))
      >>> dist.get_mesh().dim_names
      ['dp', 'mp']
    """
    if not isinstance(mesh, ProcessMesh):
        raise TypeError(f"set_mesh: expected a dist.ProcessMesh; got {type(mesh).__name__}")
    n = jax.device_count()
    if len(mesh.process_ids) != n:
        raise ValueError(f"set_mesh: the global mesh has {len(mesh.process_ids)} processes (shape {mesh.shape}) but "
                         f"there are {n} devices; the global mesh must cover every device")
    _GLOBAL_MESH.set_global(mesh)


def get_mesh() -> ProcessMesh | None:
    """The global mesh from `set_mesh` (or the innermost `with mesh:` on this thread), or None.

    Example:
      >>> import pdx.distributed as dist
      >>> with dist.ProcessMesh([0, 1], dim_names=["dp"]) as mesh:
      ...     dist.get_mesh() == mesh
      True
    """
    return _GLOBAL_MESH.get()
