"""Dedup keys: reading and deleting them."""

from __future__ import annotations

from ._base import QueueBase


class QueueDedup(QueueBase):
    """The part of `JobQueue` for dedup keys."""

    async def get_deduplication_job_id(
        self, dedup_id: str, *, now: int | None = None
    ) -> str | None:
        """The id of the job holding the dedup key ``dedup_id``, or None when the key is not
        held (absent, its ttl ran out, or, without a ttl, its job finished)."""
        return await self._core.get_deduplication_job_id(dedup_id, now)

    async def get_deduplication_ttl(self, dedup_id: str, *, now: int | None = None) -> float | None:
        """The seconds the dedup key ``dedup_id`` is still held (BullMQ users read the key's
        ``pttl``): None when it is not held (as `get_deduplication_job_id`), ``math.inf`` when
        it has no ttl (held until its job finishes)."""
        return await self._core.get_deduplication_ttl(dedup_id, now)

    async def remove_deduplication_key(self, dedup_id: str, *, now: int | None = None) -> bool:
        """Deletes the dedup key ``dedup_id`` (and a keep_last job waiting on it), so the next
        add with that id is added. True if a held key was deleted."""
        return await self._core.remove_deduplication_key(dedup_id, now)
