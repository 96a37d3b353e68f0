"""A FastAPI app that adds a job per request and awaits its result.

The app's lifespan opens the queue and runs a JobWorker on the app's event loop; workers in
other processes (or hosts, with RedisJobQueue) would do just as well: a request only waits for
its job to finish, without polling.

    uvicorn examples.fastapi_app:app   # serve it (pip install '.[test]' uvicorn)
    python examples/fastapi_app.py     # one request through FastAPI's TestClient, no server
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from lanemq import Job, JobFailedError, JobQueue, JobWorker, LocalJobQueue
from pydantic import BaseModel


async def count_words(job: Job) -> dict[str, int]:
    words = job.data["text"].split()
    if not words:
        raise ValueError("no words to count")
    return {"words": len(words), "longest": max(map(len, words))}


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Opened here, not at import: importing the module touches no file.
    queue = LocalJobQueue("word-counts", os.environ.get("LANEMQ_DATA", "./lanemq-data"))
    async with JobWorker(queue, {"count_words": count_words}, concurrency=8):
        app.state.queue = queue
        yield
    await queue.close()


app = FastAPI(lifespan=lifespan)


class Text(BaseModel):
    text: str


@app.post("/word-count")
async def word_count(body: Text, request: Request) -> dict[str, Any]:
    queue: JobQueue = request.app.state.queue
    job = await queue.add("count_words", {"text": body.text})
    try:
        result = await job.wait(timeout=10)
    except JobFailedError as error:
        raise HTTPException(status_code=422, detail=error.reason) from None
    except TimeoutError:
        raise HTTPException(status_code=504, detail=f"job {job.id} still running") from None
    return {"job_id": job.id, "result": result}


@app.get("/jobs/{job_id}")
async def job_state(job_id: str, request: Request) -> dict[str, Any]:
    queue: JobQueue = request.app.state.queue
    job = await queue.get_job(job_id)
    if job is None:
        raise HTTPException(status_code=404, detail=f"no job {job_id!r}")
    return {"job_id": job.id, "state": job.state, "result": job.return_value}


if __name__ == "__main__":
    from fastapi.testclient import TestClient

    with TestClient(app) as client:  # runs the lifespan, so the worker too
        reply = client.post("/word-count", json={"text": "lanemq runs jobs"})
        print("POST /word-count:", reply.status_code, reply.json())
        job_id = reply.json()["job_id"]
        print(f"GET /jobs/{job_id}:", client.get(f"/jobs/{job_id}").json())
        reply = client.post("/word-count", json={"text": "   "})
        print("POST /word-count (empty):", reply.status_code, reply.json())
