"""`lanemq.wiring` beyond the conformance cases: configs read from dicts, TOML and JSON; the
fallbacks of connections and options (queue, then service, then the default); a service of two
queues on a local directory; what a producer-only process holds on Redis (no worker, no
blocking connection: CLIENT LIST of a server the test starts); and bad input, refused naming
the bad value before anything is opened."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lanemq import ConfigError, InMemoryJobQueue, Job, LocalJobQueue, RedisJobQueue
from lanemq.wiring import DEFAULT_URL, Entrypoint, QueueConfig, ServiceConfig, build_service
from redis_support import MakeServer, Resp
from support import eventually, redis_prefix

LIMIT = 5.0  # upper bound for anything awaited; a healthy run needs a small fraction of it

MAILER = {
    "name": "mailer",
    "url": "memory://",
    "options": {"max_events": 500},
    "worker": {"concurrency": 4, "lease": 20.0},
    "consume": ["emails"],
    "queues": {
        "emails": {"worker": {"concurrency": 16}},
        "reports": {"url": "local:./reports-data", "options": {"max_events": 50}},
        "audit": {},
    },
}


# ------------------------------------------------------------------- reading


def test_a_config_reads_from_a_dict_toml_and_json_alike(tmp_path: Path) -> None:
    toml = tmp_path / "mailer.toml"
    toml.write_text(
        """
        name = "mailer"
        url = "memory://"
        consume = ["emails"]
        options = { max_events = 500 }
        worker = { concurrency = 4, lease = 20.0 }

        [queues.emails]
        worker = { concurrency = 16 }

        [queues.reports]
        url = "local:./reports-data"
        options = { max_events = 50 }

        [queues.audit]
        """
    )
    (tmp_path / "mailer.json").write_text(json.dumps(MAILER))
    from_dict = ServiceConfig.from_dict(MAILER)
    assert ServiceConfig.load(toml) == from_dict
    assert ServiceConfig.load(tmp_path / "mailer.json") == from_dict
    assert from_dict == ServiceConfig(
        "mailer",
        (
            QueueConfig("emails", worker={"concurrency": 16}),
            QueueConfig("reports", url="local:./reports-data", options={"max_events": 50}),
            "audit",  # a bare name is a queue with nothing of its own
        ),
        url="memory://",
        consume=("emails",),
        options={"max_events": 500},
        worker={"concurrency": 4, "lease": 20.0},
    )
    # A list of names is a table of queues with nothing of their own.
    listed = ServiceConfig.from_dict({"name": "s", "queues": ["a", "b"]})
    assert listed.queue_names == ("a", "b")
    assert listed.consume == ()


def test_options_fall_back_from_the_queue_to_the_service_to_the_default() -> None:
    config = ServiceConfig.from_dict(MAILER)
    # Connections: the queue's own, else the service's; a service without one uses the default.
    assert config.url_of("reports") == "local:./reports-data"
    assert config.url_of("emails") == "memory://"
    bare = ServiceConfig("bare", ("emails",))
    assert bare.url_of("emails") == DEFAULT_URL == "local:./lanemq-data"
    assert bare.url_of("emails", default_url="memory://") == "memory://"
    # Options and worker options, key by key.
    assert config.options_of("reports") == {"max_events": 50}
    assert config.options_of("audit") == {"max_events": 500}
    assert config.worker_options_of("emails") == {"concurrency": 16, "lease": 20.0}
    assert config.worker_options_of("audit") == {"concurrency": 4, "lease": 20.0}


async def test_a_built_service_applies_the_fallbacks(tmp_path: Path) -> None:
    config = ServiceConfig.from_dict(
        {**MAILER, "consume": ["emails", "audit"]}
        | {"queues": {**MAILER["queues"], "reports": {"url": f"local:{tmp_path}"}}}  # type: ignore[dict-item]
    )
    service = build_service(config, default_url="memory://")
    async with service:
        emails, audit = service.workers["emails"], service.workers["audit"]
        assert (emails.concurrency, emails.lease) == (16, 20.0)
        assert (audit.concurrency, audit.lease) == (4, 20.0)
        assert isinstance(service.producer("emails"), InMemoryJobQueue)
        reports = service.producer("reports")
        assert isinstance(reports, LocalJobQueue)
        assert reports.path == tmp_path / "reports.sqlite3"
        # Queues of one connection and options are siblings: flows may span them.
        assert service.producer("emails").sibling("audit") is service.producer("audit")


# ------------------------------------------------------------------- local


async def test_a_service_of_two_queues_on_a_local_directory(tmp_path: Path) -> None:
    config = ServiceConfig(
        "shop", ("orders", "invoices"), url=f"local:{tmp_path}", consume=("orders", "invoices")
    )
    invoiced = asyncio.Event()

    async def place(job: Job) -> str:
        invoice = await service.producer("invoices").add("issue", {"order": job.id})
        return invoice.id

    async def issue(job: Job) -> str:
        invoiced.set()
        return f"invoice for order {job.data['order']}"

    service = build_service(config)
    service.serve("orders", Entrypoint({"place": place}))
    service.serve("invoices", Entrypoint({"issue": issue}))
    async with service:
        order = await service.producer("orders").add("place", {"sku": "A-1"})
        invoice_id = await order.wait(timeout=LIMIT)
        await asyncio.wait_for(invoiced.wait(), LIMIT)
        invoice = await service.producer("invoices").get_job(invoice_id)
        assert invoice is not None
        assert await invoice.wait(timeout=LIMIT) == f"invoice for order {order.id}"
    assert sorted(path.name for path in tmp_path.glob("*.sqlite3")) == [  # noqa: ASYNC240
        "invoices.sqlite3",
        "orders.sqlite3",
    ]
    # Another process (a producer only) reads what this one left.
    reader = build_service(config, consume=[])
    async with reader:
        counts = await reader.producer("invoices").get_job_counts("completed")
        assert counts["completed"] == 1


async def test_run_serves_until_closed_or_cancelled() -> None:
    config = ServiceConfig("s", ("a",), url="memory://", consume=("a",))

    async def echo(job: Job) -> object:
        return job.data

    for ending in ("close", "cancel"):
        service = build_service(config, entrypoints={"a": Entrypoint({"echo": echo})})
        running = asyncio.create_task(service.run())
        job = await service.producer("a").add("echo", {"n": 1})
        assert await job.wait(timeout=LIMIT) == {"n": 1}
        if ending == "close":
            await service.close()
            await asyncio.wait_for(running, LIMIT)
        else:
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(running, LIMIT)
        with pytest.raises(RuntimeError, match="service 's' is closed"):
            await service.start()


# ------------------------------------------------------------------- Redis


def _clients(port: int) -> list[dict[str, str]]:
    """The clients of the server on ``port`` but the one asking (CLIENT LIST)."""
    with Resp("127.0.0.1", port) as raw:
        listing = raw.command("CLIENT", "LIST")
    clients = [dict(f.split("=", 1) for f in line.split()) for line in listing.splitlines()]
    return [c for c in clients if c["cmd"] != "client|list"]


def _blocked(port: int) -> list[str]:
    """The commands of the clients blocked in one (a worker's BZPOPMIN, XREAD BLOCK)."""
    return [c["cmd"] for c in _clients(port) if "b" in c["flags"]]


async def test_a_producer_only_process_holds_no_blocking_connection_on_redis(
    own_redis: MakeServer,
) -> None:
    server = own_redis()
    server.start()
    config = ServiceConfig(
        "mailer",
        ("emails", "reports"),
        url=server.url,
        options={"prefix": redis_prefix()},
        consume=("emails",),
    )

    async def send(job: Job) -> str:
        return "sent"

    producer = build_service(config, consume=[])
    async with producer:
        assert producer.workers == {}
        for name in ("emails", "reports"):
            await producer.producer(name).add("send", {})
        # At most the commands connection and the wire that every queue of the process
        # shares; none blocked in a claim.
        assert 1 <= len(_clients(server.port)) <= 2
        assert _blocked(server.port) == []

        # A process that consumes a queue waits for its jobs on blocking connections.
        consumer = build_service(config, entrypoints={"emails": Entrypoint({"send": send})})
        assert list(consumer.workers) == ["emails"]
        async with consumer:
            job = await consumer.producer("emails").add("send", {})
            assert await job.wait(timeout=LIMIT) == "sent"
            await eventually(lambda: _any_blocked(server.port), "the worker to idle", LIMIT)
        assert isinstance(consumer.producer("emails"), RedisJobQueue)


async def _any_blocked(port: int) -> bool:
    return bool(_blocked(port))


# ------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "s", "queues": ["a", "a"]}, "queue 'a' is declared twice"),
        ({"name": "s", "queues": ["a"], "consume": ["b"]}, "no queue 'b' \\(its queues: a\\)"),
        ({"name": "s", "queues": ["a"], "consume": "a"}, "consume must be a list, got 'a'"),
        ({"name": "s", "queues": "a"}, "queues must be a list, got 'a'"),
        ({"name": "s", "queues": ["a"], "worker": {"concurency": 2}}, "'concurency'"),
        ({"name": "s", "queues": {"a": {"worker": {"leese": 1}}}}, "queue 'a': unknown worker"),
        ({"name": "s", "queues": {"a": {"urls": "memory://"}}}, "unknown key 'urls'"),
        ({"name": "s", "queues": ["a"], "consumes": ["a"]}, "unknown key 'consumes'"),
        ({"name": "", "queues": ["a"]}, "invalid service name ''"),
        ({"name": "s", "queues": [""]}, "invalid queue name ''"),
        ({"name": "s", "queues": ["a"], "url": 5}, "url must be a str, got int"),
        ({"queues": ["a"]}, "needs 'name' and 'queues'"),
    ],
)
def test_a_bad_config_is_refused_naming_the_bad_value(
    data: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ServiceConfig.from_dict(data)


def test_a_bad_connection_or_option_opens_nothing(tmp_path: Path) -> None:
    good = {"url": f"local:{tmp_path}"}
    for queues, message in [
        ({"a": good, "b": {"url": "postgres://db/x"}}, "unknown queue URL scheme 'postgres'"),
        ({"a": good, "b": {"url": "redis://:s3cret@h:1/0", "options": {"prefx": "p"}}}, "'prefx'"),
        ({"a": good, "b": {"options": {"sync": "normal"}, "url": "memory://"}}, "'sync'"),
        ({"a": good, "b": {"url": "redis://:s3cret@h:notaport/0"}}, "malformed host or port"),
    ]:
        config = ServiceConfig.from_dict({"name": "s", "queues": queues, "consume": ["a"]})
        with pytest.raises(ConfigError, match=message) as raised:
            build_service(config)
        assert "s3cret" not in str(raised.value)
        assert list(tmp_path.iterdir()) == [], "no queue file is made"
    config = ServiceConfig("s", ("a",), url=f"local:{tmp_path}", worker={"concurrency": 0})
    with pytest.raises(ConfigError, match="invalid concurrency: 0"):
        build_service(config, consume=["a"])
    assert list(tmp_path.iterdir()) == []


def test_no_password_in_a_config_repr_or_error() -> None:
    config = ServiceConfig(
        "s", [QueueConfig("a", url="redis://:s3cret@h:1/0")], url="redis://u:s3cret@h:2/0"
    )
    assert "s3cret" not in repr(config)
    assert "redis://u:***@h:2/0" in repr(config)
    assert "s3cret" not in repr(config.queue("a"))
    with pytest.raises(ConfigError) as raised:
        ServiceConfig.from_dict({"name": "s", "queues": {"a": "redis://:s3cret@h/0"}})
    assert "s3cret" not in str(raised.value)


def test_a_bad_entrypoint_or_consume_is_refused() -> None:
    config = ServiceConfig("s", ("a",), url="memory://")

    async def send(job: Job) -> None:
        return None

    with pytest.raises(ConfigError, match="no queue 'b'"):
        build_service(config, consume=["b"])
    with pytest.raises(ConfigError, match="invalid close_grace: -1"):
        build_service(config, close_grace=-1)
    with pytest.raises(ConfigError, match="no queue 'b'"):
        build_service(config, entrypoints={"b": Entrypoint({"send": send})})
    with pytest.raises(TypeError, match="not an Entrypoint"):
        build_service(config, entrypoints={"a": send})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="at least one handler"):
        Entrypoint({})
    with pytest.raises(ConfigError, match="invalid job name of a handler: ''"):
        Entrypoint({"": send})
    with pytest.raises(TypeError, match="the handler of job name 'send' is not callable"):
        Entrypoint({"send": "send"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="on_dead must be callable"):
        Entrypoint({"send": send}, on_dead="bury")  # type: ignore[arg-type]
    service = build_service(config, consume=[])
    with pytest.raises(ConfigError, match="does not consume queue 'a'"):
        service.worker("a")
    with pytest.raises(ConfigError, match="no queue 'b'"):
        service.producer("b")
