"""Run the arm64 IREE modules of an artifact on an x86-64 Linux host, under qemu user-mode emulation.

The arm64 targets ("iree-arm64-android", "iree-arm64-linux") are compiled
for a phone or a board, so `pdx.export.load` does not run them here. To
check what such a module computes, the aarch64 build of IREE's
`iree-run-module` (from the aarch64 wheel of the installed
iree-base-runtime version: the runtime that reads the `.vmfb` must match
the compiler that wrote it) runs under `qemu-aarch64-static` with Debian's
arm64 C and C++ libraries as its root:

    qemu-aarch64-static -L /usr/aarch64-linux-gnu <cache>/iree-run-module \\
        --module=ARTIFACT/iree-arm64-android.vmfb --device=local-task --function=main_batch1 \\
        --input=@param0.npy ... --input=@x.npy --output=@out0.npy

    install_tools()   apt-get the emulator and libraries if missing (root), pip download the wheel,
                      extract iree-run-module into $PDX_CACHE_DIR/iree-aarch64/<version>/ (~/.cache/pdx)
    run_module(vmfb, function, inputs, num_outputs)   one call: inputs and outputs as .npy files
    run_artifact(path, *inputs, target)                an artifact's arm64 module, like Predictor

The compiled code runs instruction by instruction on emulated aarch64, so
its numerics are the phone's; only its speed is not.

Example:
  >>> Arm64Tools("/usr/bin/qemu-aarch64-static", SYSROOT, "/tmp/iree-run-module").command()[:3]
  ['/usr/bin/qemu-aarch64-static', '-L', '/usr/aarch64-linux-gnu']
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pdx.export._iree import IREE_TARGETS, function_name

__all__ = ["APT_PACKAGES", "ARM64_TARGETS", "SYSROOT", "WHEEL_PLATFORM", "Arm64Tools", "install_tools",
           "run_artifact", "run_module"]

ARM64_TARGETS = tuple(t for t in IREE_TARGETS if t.startswith("iree-arm64-"))
SYSROOT = "/usr/aarch64-linux-gnu"
WHEEL_PLATFORM = "manylinux_2_28_aarch64"
_TOOL = "iree-run-module"
_QEMU = "qemu-aarch64-static"
# Debian package -> the file it provides that the aarch64 iree-run-module needs (its NEEDED libraries).
APT_PACKAGES = {
    "qemu-user-static": f"/usr/bin/{_QEMU}",
    "libc6-arm64-cross": f"{SYSROOT}/lib/ld-linux-aarch64.so.1",
    "libstdc++6-arm64-cross": f"{SYSROOT}/lib/libstdc++.so.6",
    "libgcc-s1-arm64-cross": f"{SYSROOT}/lib/libgcc_s.so.1",
}


class Arm64Tools(NamedTuple):
    """Where the emulator, the arm64 libraries and the aarch64 `iree-run-module` are.

    `qemu` is None on an aarch64 host, where the tool runs natively.
    """

    qemu: str | None
    sysroot: str
    run_module: str

    def command(self) -> list[str]:
        """The command line prefix that starts `iree-run-module`."""
        prefix = [self.qemu, "-L", self.sysroot] if self.qemu else []
        return prefix + [self.run_module]


def _cache_dir(version: str) -> Path:
    root = os.environ.get("PDX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pdx")
    return Path(root) / "iree-aarch64" / version


def _runtime_version() -> str:
    try:
        return importlib.metadata.version("iree-base-runtime")
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError("arm64: iree-base-runtime is not installed; `pip install iree-base-runtime` (the "
                           "aarch64 tools are taken from the wheel of the same version)") from None


def _native() -> bool:
    return sys.platform.startswith("linux") and platform.machine() in ("aarch64", "arm64")


def _install_apt_packages() -> None:
    missing = [pkg for pkg, file in APT_PACKAGES.items() if not os.path.exists(file)]
    if not missing:
        return
    command = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise RuntimeError(f"arm64: running arm64 modules on this host needs the Debian packages {missing}; "
                           f"install them as root: apt-get update && {' '.join(command)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for step in (["apt-get", "update", "-q"], command):  # a fresh machine has no package lists
        done = subprocess.run(step, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"arm64: `{' '.join(step)}` failed (exit {done.returncode}): "
                               f"{done.stderr.strip()[-2000:]}")
    still = [pkg for pkg in missing if not os.path.exists(APT_PACKAGES[pkg])]
    if still:
        raise RuntimeError(f"arm64: apt-get installed {still} but {[APT_PACKAGES[p] for p in still]} "
                           "are still missing")


def _extract_tool(version: str, where: Path) -> Path:
    tool = where / _TOOL
    if tool.is_file():
        return tool
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        download = [sys.executable, "-m", "pip", "download", f"iree-base-runtime=={version}", "--platform",
                    WHEEL_PLATFORM, "--only-binary=:all:", "--no-deps", "--disable-pip-version-check",
                    "-d", tmp]
        done = subprocess.run(download, capture_output=True, text=True, check=False)
        wheels = list(Path(tmp).glob("iree_base_runtime-*.whl"))
        if done.returncode != 0 or not wheels:
            raise RuntimeError(f"arm64: could not download the aarch64 wheel of iree-base-runtime {version} "
                               f"(`{' '.join(download)}`, exit {done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()[-2000:]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            member = f"iree/_runtime_libs/{_TOOL}"
            if member not in wheel.namelist():
                raise RuntimeError(f"arm64: {wheels[0].name} has no {member}; pdx expects IREE's tools in "
                                   "the runtime wheel (iree-base-runtime >= 3)")
            staged = Path(tmp) / _TOOL
            staged.write_bytes(wheel.read(member))
        staged.chmod(0o755)
        os.replace(staged, tool)  # atomic: a concurrent install sees the whole file or none
    return tool


def install_tools(cache_dir: str | os.PathLike | None = None) -> Arm64Tools:
    """Find, or install, what runs arm64 IREE modules on this host.

    Installs the missing Debian packages (`APT_PACKAGES`: the qemu user-mode
    emulator and the arm64 C/C++ runtime libraries; needs root, else the
    error gives the command) and extracts `iree-run-module` from the
    aarch64 wheel of the installed iree-base-runtime version into
    `cache_dir` (default `$PDX_CACHE_DIR/iree-aarch64/<version>`, or
    `~/.cache/pdx/...`). A cached tool costs a few file checks.

    Raises:
      RuntimeError: naming what could not be installed and how to do it by hand.
    """
    version = _runtime_version()
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64", "aarch64", "arm64"):
        raise RuntimeError(f"arm64: running arm64 modules needs an x86-64 (emulated) or aarch64 Linux host; this "
                           f"is {sys.platform} {platform.machine()}")
    native = _native()
    where = Path(cache_dir) if cache_dir is not None else _cache_dir(version)
    where.mkdir(parents=True, exist_ok=True)
    # One installer at a time (pytest-xdist workers): apt-get holds dpkg's lock and fails a second one.
    with open(where / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not native:
            _install_apt_packages()
        tool = _extract_tool(version, where)
    return Arm64Tools(None if native else shutil.which(_QEMU) or APT_PACKAGES["qemu-user-static"], SYSROOT, str(tool))


def run_module(vmfb: str | os.PathLike, function: str, inputs: Sequence[np.ndarray], num_outputs: int, *,
               tools: Arm64Tools | None = None, device: str = "local-task", timeout_s: float = 600.0
               ) -> list[np.ndarray]:
    """Call one function of an arm64 `.vmfb` with numpy inputs; returns its outputs.

    Each input goes in as a `.npy` file (`--input=@file.npy`) and each output
    comes back as one (`--output=@file.npy`), so no values pass through text.

    Args:
      vmfb: path of the module.
      function: the function to call (`main_batch<N>` in a pdx artifact, see `_iree.function_name`).
      inputs: the function's arguments in order (for a pdx module with params="arguments", the
        parameters first).
      num_outputs: how many results the function returns.
      tools: from `install_tools()` (default: `install_tools()` with the default cache).
      device: the IREE HAL device ("local-task": a thread pool; "local-sync": the calling thread).
      timeout_s: the limit of one call, in seconds.

    Raises:
      RuntimeError: the module could not be loaded or the call failed (with the tool's message).
    """
    if not isinstance(num_outputs, int) or isinstance(num_outputs, bool) or num_outputs < 1:
        raise ValueError(f"run_module: num_outputs={num_outputs!r} must be an int >= 1")
    tools = install_tools() if tools is None else tools
    with tempfile.TemporaryDirectory(prefix="pdx-arm64-") as tmp:
        args = []
        for i, value in enumerate(inputs):
            np.save(f"{tmp}/input{i}.npy", np.ascontiguousarray(value))
            args.append(f"--input=@{tmp}/input{i}.npy")
        outs = [f"{tmp}/output{i}.npy" for i in range(num_outputs)]
        command = tools.command() + [f"--module={os.fspath(vmfb)}", f"--device={device}", f"--function={function}",
                                     *args, *(f"--output=@{o}" for o in outs)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"arm64: {function} in {vmfb} ran past timeout_s={timeout_s}") from None
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip()[-2000:]
            raise RuntimeError(f"arm64: iree-run-module failed on {function} in {vmfb} "
                               f"(exit {done.returncode}): {message}")
        return [np.load(o) for o in outs]


def run_artifact(path: str | os.PathLike, *inputs, target: str = "iree-arm64-android",
                 tools: Arm64Tools | None = None) -> list[np.ndarray]:
    """Run an artifact's arm64 module on one batch, as `pdx.export.load(path)` runs its XLA program.

    The artifact is read and verified like `pdx.export.load` does; the inputs
    are checked against the module's static shapes; the batch must be one of
    the module's buckets (one call, no splitting).

    Args:
      path: the artifact directory.
      *inputs: numpy arrays, one per input of the model.
      target: one of `ARM64_TARGETS`, exported in the artifact.
      tools: from `install_tools()` (default: `install_tools()`).

    Returns:
      The outputs, in the manifest's order.
    """
    from pdx.export._runtime import Artifact  # the loader's checks, not a second copy of them
    from pdx.export._validate import Signature, check_arrays

    if target not in ARM64_TARGETS:
        raise ValueError(f"run_artifact: target={target!r} must be one of {list(ARM64_TARGETS)}")
    artifact = Artifact(path)
    if target not in artifact.targets:
        raise ValueError(f"run_artifact: {path} has no {target!r} target (it has {sorted(artifact.targets)}); "
                         f"export it with targets=[..., {target!r}]")
    info = artifact.targets[target]
    buckets = {b["batch"]: b["input_shapes"] for b in info.get("buckets")
               or [{"batch": None, "input_shapes": info["input_shapes"]}]}
    batch = None
    if list(buckets) != [None]:
        batch = np.shape(inputs[0])[0] if inputs and np.ndim(inputs[0]) else None
        if batch not in buckets:
            raise ValueError(f"run_artifact: batch size {batch} is not one the {target} module was compiled "
                             f"for ({sorted(buckets)}); pass one of those")
    sig = Signature([dict(e, shape=s) for e, s in zip(artifact.inputs, buckets[batch])])
    arrays = check_arrays(sig, inputs, fn=f"{artifact.name} ({target})", convert=True)
    params = [] if info.get("params") == "inline" else list(artifact.params)
    with tempfile.TemporaryDirectory(prefix="pdx-arm64-") as tmp:
        vmfb = Path(tmp) / info["file"]
        vmfb.write_bytes(artifact.files[info["file"]])  # the verified bytes, not the file as it is now
        return run_module(vmfb, function_name(batch), params + arrays, len(artifact.outputs), tools=tools)
