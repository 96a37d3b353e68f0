"""Rules from BullMQ's own tests that lanemq follows on every backend: an empty custom job id
is ignored, a state named twice lists its jobs once, and `Job.to_dict` (BullMQ's
``toJSON``/``asJSON``)."""

from __future__ import annotations

import json

from lanemq import JobOptions, JobQueue
from support import EPOCH_MS as T

from .helpers import claim_one, lock_token


async def test_an_empty_job_id_takes_the_next_automatic_id(queue: JobQueue) -> None:
    first = await queue.add("a", 1)
    assert first.id == "1"
    empty = await queue.add("b", 2, job_id="")
    assert empty.id == "2"
    [bulk] = await queue.add_bulk([("c", 3, {"job_id": ""})])
    assert bulk.id == "3"
    assert (await queue.add("d", 4, JobOptions(job_id=""))).id == "4"
    assert JobOptions(job_id="").job_id is None


async def test_a_state_named_twice_lists_and_counts_its_jobs_once(queue: JobQueue) -> None:
    for n in range(3):
        await queue.add("a", n)
    await queue.add("later", None, delay=60)
    twice = await queue.list_jobs(["waiting", "waiting"])
    assert [job.data for job in twice] == [0, 1, 2]
    mixed = await queue.list_jobs(["waiting", "delayed", "waiting"])
    assert len(mixed) == 4 and len({job.id for job in mixed}) == 4
    page, total = await queue.list_jobs_with_total(["delayed", "waiting", "delayed"])
    assert total == 4 and len(page) == 4
    assert await queue.get_job_count("waiting", "waiting") == 3


async def test_to_dict_is_a_json_safe_form_of_the_job(queue: JobQueue) -> None:
    added = await queue.add("send", {"to": "a@example.com"}, priority=3, group="tenant-1")
    await queue.update_progress(added.id, {"done": 50})
    claimed = await claim_one(queue, T)
    assert claimed.id == added.id
    await queue.complete(added.id, lock_token(claimed), {"sent": True}, now=T)
    job = await queue.get_job(added.id)
    assert job is not None
    shown = job.to_dict()
    assert json.loads(json.dumps(shown)) == shown  # JSON-safe as it is
    assert "queue" not in shown
    assert shown["queue_name"] == queue.name
    assert shown["id"] == added.id
    assert shown["name"] == "send"
    assert shown["data"] == {"to": "a@example.com"}
    assert shown["progress"] == {"done": 50}
    assert shown["return_value"] == {"sent": True}
    assert shown["state"] == "completed"
    assert shown["opts"]["priority"] == 3 and shown["opts"]["group"] == "tenant-1"
    assert shown["group"] == "tenant-1"
    assert shown["attempts_made"] == 1 and shown["failed_reason"] is None
