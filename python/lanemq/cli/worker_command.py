"""``lanemq worker``: runs the workers that targets name, all on one event loop, until SIGTERM
or SIGINT. The first signal stops claiming and gives running jobs ``--grace`` seconds, then
releases the rest back to waiting at once; a second one releases them at once; a third exits
without waiting for anything (what is still running is left to stalled recovery)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Sequence
from pathlib import Path

import click

from ..queue import JobQueue
from ..worker import JobWorker
from .logs import configure_logging, log_level_option
from .metrics import MetricsEndpoint, prometheus_module
from .reload import run_supervisor
from .targets import Target, importable_cwd, read_config, resolve

log = logging.getLogger("lanemq.cli")

#: Below Docker's and systemd's 10 s between SIGTERM and SIGKILL, with time to release.
DEFAULT_GRACE = 8.0


@click.command("worker")
@click.argument("targets", metavar="TARGET...", nargs=-1)
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A TOML file listing targets ([[workers]] tables with target and concurrency).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="Jobs each worker runs at once (default: the worker's own; a config entry's "
    "concurrency wins for that entry).",
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=DEFAULT_GRACE,
    show_default=True,
    help="Seconds running jobs get to finish after SIGTERM/SIGINT before they are released "
    "back to waiting.",
)
@log_level_option("Level of the lanemq logger (to stderr).")
@click.option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    help="Serve Prometheus metrics of the workers and their queues on this port "
    "(needs the lanemq[prometheus] extra).",
)
@click.option(
    "--metrics-addr",
    default="127.0.0.1",
    show_default=True,
    help="Address the metrics endpoint listens on (0.0.0.0: every interface).",
)
@click.option(
    "--reload",
    is_flag=True,
    help="For development: run the workers in a child process and restart it (gracefully, "
    "as SIGTERM stops it) when a *.py file under the --reload-dir directories or the --config "
    "file changes (needs the lanemq[reload] extra).",
)
@click.option(
    "--reload-dir",
    "reload_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A directory --reload watches (repeatable; default: the current directory).",
)
def worker_command(
    targets: Sequence[str],
    config_file: Path | None,
    concurrency: int | None,
    grace: float,
    log_level: str,
    metrics_port: int | None,
    metrics_addr: str,
    reload: bool,
    reload_dirs: Sequence[Path],
) -> None:
    """Run the job workers that TARGETs name until SIGTERM or SIGINT.

    A TARGET is module.path:attr, where attr is a JobWorker, a list of them, or a function
    without arguments (def or async def) returning either. The current directory is
    importable. All workers run in this process, on one event loop. Examples:

    \b
        lanemq worker app.jobs:email_worker --concurrency 20
        lanemq worker --config workers.toml

    On SIGTERM or SIGINT the workers stop claiming, running jobs get --grace seconds to
    finish, the rest go back to waiting at once (no attempt used), and the command exits 0.
    A second signal releases running jobs at once; a third exits at once (code 1).

    With --metrics-port, every worker is instrumented and http://ADDR:PORT/metrics serves
    their job counters and histograms, their queues' counts and the process's metrics.

    With --reload (for development), this process watches the source files and runs the
    workers in a child process, which it restarts when a *.py file under a --reload-dir (the
    current directory by default) or the --config file changes: the old child stops as on
    SIGTERM (jobs get --grace, then go back to waiting) before the new one starts.

    A bad TARGET exits with code 2 before anything runs."""
    configure_logging(log_level)
    if reload:
        args = _child_args(targets, config_file, concurrency, grace, log_level, metrics_port)
        watched = list(reload_dirs) or [Path.cwd()]
        raise SystemExit(
            run_supervisor([*args, "--metrics-addr", metrics_addr], watched, config_file)
        )
    if reload_dirs:
        raise click.UsageError("--reload-dir goes with --reload")
    importable_cwd()
    named = [Target(spec) for spec in targets]
    if config_file is not None:
        named += read_config(config_file)
    if not named:
        raise click.UsageError("name at least one TARGET (module.path:attr) or a --config file")
    metrics = None
    if metrics_port is not None:
        prometheus_module()  # missing: a usage error now, before any target is imported
        metrics = (metrics_port, metrics_addr)
    code = asyncio.run(_serve(named, concurrency, grace, metrics))
    raise SystemExit(code)


def _child_args(
    targets: Sequence[str],
    config_file: Path | None,
    concurrency: int | None,
    grace: float,
    log_level: str,
    metrics_port: int | None,
) -> list[str]:
    """This command's options for the child --reload runs, without --reload."""
    args = [*targets, "--grace", str(grace), "--log-level", log_level]
    if config_file is not None:
        args += ["--config", str(config_file)]
    if concurrency is not None:
        args += ["--concurrency", str(concurrency)]
    if metrics_port is not None:
        args += ["--metrics-port", str(metrics_port)]
    return args


async def _serve(
    targets: list[Target],
    concurrency: int | None,
    grace: float,
    metrics: tuple[int, str] | None = None,
) -> int:
    # Each worker logs its own start, jobs, failures, stalls and stop under lanemq.worker.
    workers = await resolve(targets, concurrency)
    endpoint = None
    if metrics is not None:
        try:
            endpoint = await MetricsEndpoint.open(workers, *metrics)
        except BaseException:
            await _close_queues(workers)
            raise
    try:
        code = await _run(workers, grace)
    finally:
        if endpoint is not None:  # (before the queues close: its refresh reads them)
            await endpoint.close()
    await _close_queues(workers)
    log.info("stopped")
    return code


async def _run(workers: list[JobWorker], grace: float) -> int:
    loop = asyncio.get_running_loop()
    runs = {loop.create_task(worker.run()): worker for worker in workers}
    stop = _Stop(workers, grace)
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.on_signal, signum)
    log.info("running %d worker(s); SIGTERM or SIGINT stops them", len(workers))
    failed = False
    try:
        done, _ = await asyncio.wait(runs, return_when=asyncio.FIRST_COMPLETED)
        if not stop.signals:
            # A worker stopped by itself: something is wrong; stop the others too.
            failed = True
            for task in done:
                error = None if task.cancelled() else task.exception()
                log.error("worker %s stopped by itself: %r", runs[task].id, error)
            stop.close_all(stop.grace)
        outcomes = await asyncio.gather(*runs, return_exceptions=True)
        await stop.closed()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
    for task, outcome in zip(runs, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            failed = True
            log.error("worker %s failed: %r", runs[task].id, outcome)
    return 1 if failed else 0


class _Stop:
    """What the signals do: the first closes the workers with the grace period, the second
    closes them at once, a third exits the process at once."""

    def __init__(self, workers: list[JobWorker], grace: float) -> None:
        self.workers = workers
        self.grace = grace
        self.signals = 0
        self._closing: list[asyncio.Task[None]] = []

    def on_signal(self, signum: int) -> None:
        self.signals += 1
        name = signal.Signals(signum).name
        if self.signals == 1:
            log.info(
                "%s: stopping; running jobs have %.1fs to finish, then go back to waiting "
                "(%s again releases them now)",
                name,
                self.grace,
                name,
            )
            self.close_all(self.grace)
        elif self.signals == 2:
            log.warning("%s again: releasing the running jobs now", name)
            # (not close(force=True): that leaves the jobs to stalled recovery, which waits
            # for their leases to run out and counts a stall against each)
            self.close_all(0.0)
        else:
            log.error("%s a third time: exiting without waiting", name)
            logging.shutdown()
            os._exit(1)

    def close_all(self, grace: float) -> None:
        loop = asyncio.get_running_loop()
        for worker in self.workers:
            self._closing.append(loop.create_task(worker.close(grace=grace)))

    async def closed(self) -> None:
        """Waits for the close calls (their errors are logged: the workers have stopped)."""
        for outcome in await asyncio.gather(*self._closing, return_exceptions=True):
            if isinstance(outcome, BaseException):
                log.error("closing a worker failed: %r", outcome)


def _text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


async def _close_queues(workers: list[JobWorker]) -> None:
    """Closes each workers' queue once, so a local queue's file is left tidy."""
    queues: dict[int, JobQueue] = {id(worker.queue): worker.queue for worker in workers}
    for queue in queues.values():
        try:
            await queue.close()
        except Exception as error:
            log.warning("closing queue %r failed: %s", queue.name, _text(error))
