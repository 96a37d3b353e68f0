"""A web dashboard for lanemq queues: their counts, jobs, schedulers and workers, and the
actions an operator takes (retry, remove, promote, clean, pause, resume).

`app` is an ASGI application (Starlette): serve it with ``lanemq dashboard URL`` or mount it
in a FastAPI or Starlette app. It needs the ``dashboard`` extra: ``pip install
'lanemq[dashboard]'``."""

from __future__ import annotations

from ._app import app

__all__ = ["app"]
