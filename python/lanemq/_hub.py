"""One `Hub` per event loop: the channel through which results of Rust futures that did not
finish at once reach asyncio (see crates/lanemq-py/src/hub.rs). The loop watches the hub's
socket and drains it on its own thread, so no runtime thread ever calls into Python."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from ._core import Hub

_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub_for() -> tuple[asyncio.Future[Any], Hub]:
    """A new future of the running loop, and the loop's hub (created and watched on first use)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = Hub()
        loop.add_reader(hub.fileno(), hub.drain)
    return loop.create_future(), hub
