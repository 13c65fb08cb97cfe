"""pdx's glibc malloc settings: a freed large block is reused without faulting its pages in again."""

import os
import subprocess
import sys

from pdx import _malloc_defaults

# Like XLA's per-step temporary buffer: 200 MB malloc'd, written and freed by a worker
# thread, twice; prints the page faults of the second round.
_PROBE = """
import ctypes, resource, threading
import pdx
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
size, out = 200 << 20, {}

def step():
    p = libc.malloc(size)
    ctypes.memset(p, 1, size)
    libc.free(p)

def worker():
    step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step()
    out["faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

t = threading.Thread(target=worker)
t.start()
t.join()
print(out["faults"])
"""


def _faults(**env) -> int:
    full = {k: v for k, v in os.environ.items() if k != "PDX_MALLOC_DEFAULTS"}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=full, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stdout.strip().splitlines()[-1])


def test_a_freed_step_buffer_comes_back_without_page_faults():
    pages = (200 << 20) // 4096
    assert _faults() < pages // 50  # reused: (almost) nothing faulted in again
    assert _faults(PDX_MALLOC_DEFAULTS="0") > pages // 2  # glibc's default: mmap'd afresh every time


def test_settings_are_accepted_by_this_glibc():
    assert _malloc_defaults.apply() == list(_malloc_defaults.SETTINGS)
    assert _malloc_defaults.apply({"PDX_MALLOC_DEFAULTS": "0"}) == []
