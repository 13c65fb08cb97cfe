"""pdx's XLA:CPU defaults: added at import, yours win, PDX_XLA_DEFAULTS=0 turns them off."""

import os
import subprocess
import sys

import pytest

from pdx import _xla_defaults

_PROBE = ("import os, pdx, jax; jax.numpy.ones(2).block_until_ready(); "
          "print(os.environ.get('XLA_FLAGS', ''))")


def _flags_after_import(**env) -> str:
    full = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PDX_XLA_DEFAULTS")}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=full, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def test_import_adds_the_cpu_flags_and_jax_accepts_them():
    flags = _flags_after_import().split()
    for name, value in _xla_defaults.CPU_FLAGS.items():
        assert f"{name}={value}" in flags  # XLA aborts at backend start on an unknown flag: the probe ran


@pytest.mark.parametrize("env,expect", [
    ({"XLA_FLAGS": "--xla_cpu_experimental_ynn_fusion_type=+individual_convolution"}, "yours"),
    ({"PDX_XLA_DEFAULTS": "0"}, "none"),
])
def test_user_flags_win_and_the_defaults_can_be_turned_off(env, expect):
    flags = _flags_after_import(**env).split()
    if expect == "yours":
        assert flags == ["--xla_cpu_experimental_ynn_fusion_type=+individual_convolution"]
    else:
        assert not any(f.split("=")[0] in _xla_defaults.CPU_FLAGS for f in flags)


def test_apply_leaves_started_backends_alone():
    import jax

    jax.numpy.ones(1).block_until_ready()  # this test process: backends are up
    env = {"XLA_FLAGS": "--foo=1"}
    assert _xla_defaults.apply(env) == [] and env == {"XLA_FLAGS": "--foo=1"}
