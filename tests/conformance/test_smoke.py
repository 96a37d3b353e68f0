"""The fixture works on every backend: add, claim, complete."""

from __future__ import annotations

from lanemq import JobQueue


async def test_add_claim_complete(queue: JobQueue) -> None:
    job = await queue.add("send", {"to": "ops"})
    [claimed] = await queue.claim("w1", lease=5.0)
    assert claimed.id == job.id and claimed.lock_token
    await queue.complete(claimed.id, claimed.lock_token, {"ok": True})
    assert (await queue.finished_result(job.id)).value == {"ok": True}
