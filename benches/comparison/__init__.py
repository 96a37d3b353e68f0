"""The parts of ``benches/compare.py``, which is the command line and runs the rounds.

- ``specs``: what the orchestrator and the runners agree on: the systems, the table's rows,
  a workload's spec.
- ``install``: finding or installing each system (the scratch npm prefix and virtualenv).
- ``runner``: runner mode (``compare.py --runner SYSTEM --spec JSON``): warm-up, the
  workloads (add, bulk, process, latency, memory, backlog, the floors' measurements, the smoke
  test), the result line.
- ``adapter`` and one ``*_adapter`` module per Python system (lanemq, BullMQ Python, saq,
  streaq, taskiq, ChasquiMQ); BullMQ (Node) runs ``benches/bullmq_bench.mjs`` instead.
- ``floors``: the awaited loop-socket PING (also used by ``benches/round_trip.py``).
- ``targets``: the floors' arithmetic and the target rules (pure; tests/test_compare_targets.py).
- ``server_stats``: Redis's INFO and SLOWLOG around a process run, and their parsing.
- ``report``: the table, the ratios, the notes, the target checks, the medians of rounds.

Runner mode runs on the scratch virtualenvs' Pythons (each with its peers, no lanemq) and on
lanemq's (no peers), so every module imports only the standard library at module
level; a system's own package is imported where it is used.
"""
