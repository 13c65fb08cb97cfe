"""Paged KV-cache bookkeeping: a pool of fixed-size blocks, per-sequence block tables, a prefix cache.

The device side is one page pool per layer, `[num_blocks, block_size,
kv_heads, head_dim]` for keys and for values; this module only decides which
block ids each sequence uses. A sequence holds `ceil(tokens / block_size)`
blocks, allocated as it grows. A full block is keyed by
`hash(parent block's key, its tokens)`, so two prompts that start alike share
their first blocks (reference-counted). A block whose last holder lets go
stays cached, and is reused by a later request with the same prefix, until
the pool needs room: then the least recently released cached block is
evicted.

Example:
  >>> from pdx.models.llama._paged import BlockPool, BlockTable
  >>> pool = BlockPool(num_blocks=8, block_size=4)
  >>> a = BlockTable(pool)
  >>> a.match_prefix([1, 2, 3, 4, 5, 6])        # nothing cached yet
  0
  >>> a.reserve(6)
  True
  >>> a.block_ids, a.commit([1, 2, 3, 4, 5, 6], 6)
  ([0, 1], None)
  >>> b = BlockTable(pool)
  >>> b.match_prefix([1, 2, 3, 4, 9])            # the first block is shared
  4
  >>> b.block_ids
  [0]
"""

from __future__ import annotations

import collections
import hashlib

__all__ = ["BlockPool", "BlockTable", "block_key"]


def block_key(parent: bytes | None, tokens) -> bytes:
    """The prefix-cache key of a full block: a digest of its parent's key and its token ids."""
    h = hashlib.blake2b(parent or b"", digest_size=16)
    h.update(b"|".join(str(int(t)).encode() for t in tokens))
    return h.digest()


class BlockPool:
    """`num_blocks` KV blocks of `block_size` tokens: reference counts, a free list and the prefix cache.

    Free blocks are of two kinds: never filled (handed out first) and cached
    (a full block with a key, kept for reuse and evicted least recently
    released first).

    Args:
      num_blocks: blocks in the pool (the device pages' first dimension).
      block_size: tokens per block.
      enable_prefix_caching: keep full blocks keyed by their prefix for reuse.
    """

    def __init__(self, num_blocks: int, block_size: int, *, enable_prefix_caching: bool = True):
        for name, value in (("num_blocks", num_blocks), ("block_size", block_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"BlockPool: {name} must be a positive int; got {value!r}")
        self.num_blocks, self.block_size = num_blocks, block_size
        self.enable_prefix_caching = bool(enable_prefix_caching)
        self.ref = [0] * num_blocks
        self.key: list[bytes | None] = [None] * num_blocks
        self.cached: dict[bytes, int] = {}                   # key -> block id
        self._plain = collections.deque(range(num_blocks))   # free, holding nothing reusable
        self._lru: collections.OrderedDict[int, None] = collections.OrderedDict()  # free and cached, oldest first
        self.stats = {"prefix_queries": 0, "prefix_hits": 0, "evictions": 0}

    def num_free(self) -> int:
        return len(self._plain) + len(self._lru)

    def num_used(self) -> int:
        return self.num_blocks - self.num_free()

    def num_cached_free(self) -> int:
        return len(self._lru)

    def allocate(self) -> int:
        """A fresh block (reference count 1); evicts the least recently released cached block if needed."""
        if self._plain:
            block = self._plain.popleft()
        elif self._lru:
            block, _ = self._lru.popitem(last=False)
            del self.cached[self.key[block]]
            self.key[block] = None
            self.stats["evictions"] += 1
        else:
            raise RuntimeError("BlockPool.allocate: no free block; check num_free() first")
        self.ref[block] = 1
        return block

    def lookup(self, key: bytes) -> int | None:
        """The cached block holding `key`, taken (reference count + 1), or None."""
        self.stats["prefix_queries"] += 1
        block = self.cached.get(key)
        if block is None:
            return None
        self.stats["prefix_hits"] += 1
        if self.ref[block] == 0:
            del self._lru[block]
        self.ref[block] += 1
        return block

    def register(self, block: int, key: bytes) -> None:
        """Record that the full `block` holds the tokens keyed `key` (a block already holding it wins)."""
        if self.enable_prefix_caching and self.key[block] is None and key not in self.cached:
            self.key[block] = key
            self.cached[key] = block

    def release(self, block: int) -> None:
        """Drop one reference; at zero the block is free (and stays cached if it has a key)."""
        if self.ref[block] <= 0:
            raise RuntimeError(f"BlockPool.release: block {block} is not held")
        self.ref[block] -= 1
        if self.ref[block] == 0:
            if self.key[block] is None:
                self._plain.append(block)
            else:
                self._lru[block] = None


class BlockTable:
    """The blocks of one sequence, in order, and the keys of its full blocks.

    `num_computed` tokens have their keys/values written; `reserve(n)` makes
    room for `n` tokens in all; `commit(tokens, n)` records that the first `n`
    of `tokens` are written and keys the blocks that became full.
    """

    def __init__(self, pool: BlockPool):
        self.pool = pool
        self.block_ids: list[int] = []
        self.keys: list[bytes] = []      # keys of the first len(keys) (full, committed) blocks
        self.num_computed = 0

    def match_prefix(self, tokens) -> int:
        """Take the cached blocks that start `tokens` (leaving at least one token to compute); tokens covered."""
        if self.block_ids:
            raise RuntimeError("BlockTable.match_prefix: the table already holds blocks")
        if not self.pool.enable_prefix_caching:
            return 0
        bs = self.pool.block_size
        parent = None
        for i in range((len(tokens) - 1) // bs):
            key = block_key(parent, tokens[i * bs:(i + 1) * bs])
            block = self.pool.lookup(key)
            if block is None:
                break
            self.block_ids.append(block)
            self.keys.append(key)
            parent = key
        self.num_computed = len(self.block_ids) * bs
        return self.num_computed

    def blocks_needed(self, num_tokens: int) -> int:
        return max(0, -(-num_tokens // self.pool.block_size) - len(self.block_ids))

    def reserve(self, num_tokens: int) -> bool:
        """Allocate blocks so the table holds `num_tokens`; False (nothing taken) when the pool is short."""
        need = self.blocks_needed(num_tokens)
        if need > self.pool.num_free():
            return False
        self.block_ids.extend(self.pool.allocate() for _ in range(need))
        return True

    def commit(self, tokens, num_computed: int) -> None:
        """The first `num_computed` of `tokens` are written: key the blocks that are now full."""
        self.num_computed = num_computed
        bs = self.pool.block_size
        while len(self.keys) < num_computed // bs:
            i = len(self.keys)
            key = block_key(self.keys[-1] if self.keys else None, tokens[i * bs:(i + 1) * bs])
            self.pool.register(self.block_ids[i], key)
            self.keys.append(key)

    def free(self) -> None:
        """Give every block back, the last first (so a prefix's tail is evicted before its head)."""
        for block in reversed(self.block_ids):
            self.pool.release(block)
        self.block_ids, self.keys, self.num_computed = [], [], 0
