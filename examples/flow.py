"""A flow: a parent job that runs once its children are done, reading their results. The
children go to another queue ("pages") of the same backend; here in-memory queues of one
MemoryGroup, the same with local queues in one directory or Redis queues of one server.

    python examples/flow.py
"""

from __future__ import annotations

import asyncio

from lanemq import FlowJob, Job, JobWorker, MemoryGroup


async def render_page(job: Job) -> int:
    print(f"child pages:{job.id}: rendered page {job.data['page']}")
    return len(job.data["text"])


async def assemble(job: Job) -> dict[str, object]:
    sizes = await job.get_children_values()  # {"pages:<id>": return value, ...}
    print(f"parent books:{job.id}: children done, assembling {sorted(sizes)}")
    return {"pages": len(sizes), "characters": sum(sizes.values())}


async def main() -> None:
    group = MemoryGroup()
    books, pages = group.queue("books"), group.queue("pages")

    pages_text = ["Call me Ishmael.", "Some years ago...", "never mind how long"]
    root = await books.add_flow(
        FlowJob(
            "assemble",
            {"title": "Moby-Dick"},
            children=[
                FlowJob("render", {"page": n, "text": text}, queue="pages")
                for n, text in enumerate(pages_text, 1)
            ],
        )
    )
    children = [f"{c.job.queue.name}:{c.job.id}" for c in root.children]
    print(f"parent books:{root.job.id}: {root.job.state}, children {', '.join(children)}")

    # One worker per queue; the parent becomes waiting once its last child completes.
    async with JobWorker(pages, {"render": render_page}), JobWorker(books, {"assemble": assemble}):
        print("result:", await root.job.wait(timeout=10))
    print("dependencies:", await books.get_dependencies_count(root.job.id))


if __name__ == "__main__":
    asyncio.run(main())
