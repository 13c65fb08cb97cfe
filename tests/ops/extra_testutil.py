"""Batch runners for the further-ops tests: one test walks a table of cases and reports every failure.

Forward cases run through one `jax.jit` per case (one XLA compile instead of one per
primitive, and proof the op traces); cases named in `eager` run op by op instead
(data-dependent output sizes).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from ops_testutil import assert_matches, grads_match

import pdx


def check_forward(paddle, rng, cases, *, eager=(), loose=(), tol=1e-5, loose_tol=1e-4):
    failures = []
    for case_id, fn, makers in cases:
        arrays = [make(rng) for make in makers]
        t = loose_tol if case_id in loose else tol
        try:
            jarrs = [jnp.asarray(a) for a in arrays]
            if case_id in eager:
                ours = fn(pdx, *jarrs)
            else:
                ours = jax.jit(lambda *a, fn=fn: fn(pdx, *a))(*jarrs)
            theirs = fn(paddle, *[paddle.to_tensor(a) for a in arrays])
            assert_matches(ours, theirs, t, t)
        except Exception as e:  # noqa: BLE001 (report every failing case at once)
            failures.append(f"{case_id}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)


def check_grads(paddle, rng, cases, *, tol=1e-4):
    failures = []
    for case_id, fn, makers, wrt in cases:
        try:
            grads_match(paddle, fn, [make(rng) for make in makers], wrt, rng, rtol=tol, atol=tol)
        except Exception as e:  # noqa: BLE001
            failures.append(f"{case_id}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)
