"""Rematerialization (activation recomputation) policies by name.

`remat_policy("dots")` gives the `jax.checkpoint_policies` function that
`pdx.nn.recompute`, `pdx.nn.LayerStack` and the pipeline schedule of
`pdx.parallel` pass to `jax.checkpoint`. Part of the framework core, shared by
those packages.
"""

from __future__ import annotations

import jax

__all__ = ["REMAT_POLICIES", "remat_policy"]

# Paddle's recompute keeps nothing; the others trade memory for compute like MaxText's remat policies.
REMAT_POLICIES = {
    "full": jax.checkpoint_policies.nothing_saveable,
    "dots": jax.checkpoint_policies.dots_saveable,
    "dots_with_no_batch_dims": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
    "none": jax.checkpoint_policies.everything_saveable,
}


def remat_policy(policy):
    """The `jax.checkpoint` policy for a name in REMAT_POLICIES, a policy function, or None ("full")."""
    if policy is None or callable(policy):
        return policy if policy is not None else REMAT_POLICIES["full"]
    if policy not in REMAT_POLICIES:
        raise ValueError(f"recompute: unknown policy {policy!r}; use one of {sorted(REMAT_POLICIES)} or a "
                         "jax.checkpoint_policies function")
    return REMAT_POLICIES[policy]
