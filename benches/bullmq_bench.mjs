// BullMQ (Node) side of benches/compare.py: runs ONE workload and prints one line
// `RESULT {json}` on stdout. compare.py starts it once per workload, after a FLUSHALL:
//
//   node benches/bullmq_bench.mjs <node prefix dir> '<spec json>'
//
// <node prefix dir> is where `npm install --prefix <dir> bullmq ioredis` put node_modules
// (compare.py's scratch directory, never the repo); bullmq and ioredis are loaded from there.
// The spec (see compare.py, `workload_spec`):
//   {workload: add_single|add_bulk|process|latency|memory|backlog, host, port, n, batch,
//    concurrency, gap_ms, timeout_s, stats, slowlog, fill}
// The result: {system, version, workload, value, unit, seconds, problems, note,
//              p50, p99, mean, max (latency),
//              stats: {cpu_before, cpu_after, commandstats, slowlog_entries, per_command}}.
// The workloads are the same as compare.py's Python runners (`run_workload` there): same job
// name ("noop"), same data ({i}), default queue/worker options, completion observed by the
// worker's "completed" event, the clock read with performance.now().

import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const [prefixDir, specText] = process.argv.slice(2);
if (!prefixDir || !specText) {
  console.error('usage: node bullmq_bench.mjs <node prefix dir> <spec json>');
  process.exit(2);
}
const spec = JSON.parse(specText);
const requireFromPrefix = createRequire(path.join(path.resolve(prefixDir), 'package.json'));
const { Queue, Worker } = requireFromPrefix('bullmq');
const ioredisModule = requireFromPrefix('ioredis');
const IORedis = ioredisModule.default ?? ioredisModule.Redis ?? ioredisModule;
const version = requireFromPrefix('bullmq/package.json').version;

const QUEUE = 'bench';
const connection = { host: spec.host, port: spec.port };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with `promise`, or with `onTimeout` after `ms` (the timer never outlives it). */
function within(promise, ms, onTimeout) {
  let timer;
  const expiry = new Promise((resolve) => {
    timer = setTimeout(() => resolve(onTimeout), ms);
  });
  return Promise.race([promise, expiry]).finally(() => clearTimeout(timer));
}

function payloads(start, stop) {
  const jobs = [];
  for (let i = start; i < stop; i++) jobs.push({ name: 'noop', data: { i } });
  return jobs;
}

async function fill(queue, n, batch) {
  for (let start = 0; start < n; start += batch) {
    await queue.addBulk(payloads(start, Math.min(start + batch, n)));
  }
}

/** sha1 -> BullMQ script name, from the package's own script sources (ioredis loads each with
 * defineCommand, which runs it by the sha1 of exactly this text). Empty if the layout differs. */
function scriptNames() {
  const names = {};
  try {
    const scripts = requireFromPrefix('bullmq/dist/cjs/scripts');
    for (const script of Object.values(scripts)) {
      if (script && typeof script.content === 'string') {
        const sha = createHash('sha1').update(script.content).digest('hex');
        names[sha] = `${script.name}-${script.keys}`;
      }
    }
  } catch {
    // an unknown layout: the report shows shas
  }
  return names;
}

/** SLOWLOG entries -> [{command, calls, usec, usec_per_call}] (EVALSHA per script), most
 * total time first; the same shape as compare.py's `aggregate_slowlog`. */
function aggregateSlowlog(entries, names) {
  const table = new Map();
  for (const entry of entries) {
    if (!Array.isArray(entry) || entry.length < 4 || !Array.isArray(entry[3])) continue;
    const duration = Number(entry[2]);
    const args = entry[3].map(String);
    let command = (args[0] || '?').toLowerCase();
    if ((command === 'evalsha' || command === 'evalsha_ro') && args.length > 1) {
      command = `${command} ${names[args[1]] || args[1].slice(0, 12)}`;
    }
    const slot = table.get(command) || { command, calls: 0, usec: 0 };
    slot.calls += 1;
    slot.usec += duration;
    table.set(command, slot);
  }
  return [...table.values()]
    .map((slot) => ({ ...slot, usec_per_call: slot.usec / slot.calls }))
    .sort((a, b) => b.usec - a.usec);
}

/** Server-side statistics around the timed part of a process run (spec.stats / spec.slowlog). */
class StatsProbe {
  constructor() {
    this.client = spec.stats || spec.slowlog ? new IORedis(connection) : null;
  }
  async start() {
    if (!this.client) return;
    if (spec.slowlog) {
      await this.client.call('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
      await this.client.call('CONFIG', 'SET', 'slowlog-max-len', '1000000');
      await this.client.call('SLOWLOG', 'RESET');
    }
    await this.client.call('CONFIG', 'RESETSTAT');
    this.cpuBefore = await this.client.call('INFO', 'cpu');
  }
  async stop() {
    if (!this.client) return null;
    const out = {
      cpu_before: this.cpuBefore,
      cpu_after: await this.client.call('INFO', 'cpu'),
      commandstats: await this.client.call('INFO', 'commandstats'),
    };
    if (spec.slowlog) {
      const entries = await this.client.call('SLOWLOG', 'GET', '-1');
      await this.client.call('CONFIG', 'SET', 'slowlog-log-slower-than', '10000');
      await this.client.call('CONFIG', 'SET', 'slowlog-max-len', '128');
      await this.client.call('SLOWLOG', 'RESET');
      out.slowlog_entries = entries.length;
      out.per_command = aggregateSlowlog(entries, scriptNames());
    }
    return out;
  }
  async close() {
    if (this.client) await this.client.quit();
  }
}

async function counts(queue) {
  return queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed');
}

function expect(actual, expected) {
  return Object.entries(expected)
    .filter(([state, want]) => actual[state] !== want)
    .map(([state, want]) => `${state}: ${actual[state]} (expected ${want})`);
}

async function addSingle(queue) {
  const n = spec.n;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await queue.add('noop', { i });
  const seconds = (performance.now() - t0) / 1000;
  const problems = expect(await counts(queue), { waiting: n, active: 0 });
  return { value: n / seconds, unit: 'jobs/s', seconds, problems };
}

async function addBulk(queue) {
  const { n, batch } = spec;
  const t0 = performance.now();
  for (let start = 0; start < n; start += batch) {
    await queue.addBulk(payloads(start, Math.min(start + batch, n)));
  }
  const seconds = (performance.now() - t0) / 1000;
  const problems = expect(await counts(queue), { waiting: n, active: 0 });
  return { value: n / seconds, unit: 'jobs/s', seconds, problems };
}

/** Fills the queue with `spec.fill` jobs (default n), then times one worker until n of them
 * finished: all of them for `process`, the head of the backlog for `backlog` (the worker is
 * closed then, with the rest still waiting). */
async function processRun(queue) {
  const { n, batch, concurrency } = spec;
  const total = Math.max(n, spec.fill || n);
  const fillStarted = performance.now();
  await fill(queue, total, total === n ? batch : Math.max(batch, 5000));
  const fillSeconds = (performance.now() - fillStarted) / 1000;
  const worker = new Worker(QUEUE, async () => null, { connection, concurrency, autorun: false });
  let completed = 0;
  let failed = 0;
  let lastDone = 0;
  let resolveAll;
  const allDone = new Promise((resolve) => {
    resolveAll = resolve;
  });
  const onDone = (ok) => {
    if (ok) completed += 1;
    else failed += 1;
    if (completed + failed <= n) lastDone = performance.now();
    if (completed + failed === n) resolveAll(true);
  };
  worker.on('completed', () => onDone(true));
  worker.on('failed', () => onDone(false));
  worker.on('error', () => {});
  await worker.waitUntilReady();
  const probe = new StatsProbe();
  await probe.start();

  const t0 = performance.now();
  const running = worker.run();
  const finished = await within(allDone, spec.timeout_s * 1000, false);
  const end = finished ? lastDone : performance.now();
  const seconds = (end - t0) / 1000;
  const stats = await probe.stop();

  const problems = [];
  if (!finished) problems.push(`only ${completed} of ${n} completed (${failed} failed) in time`);
  else if (failed) problems.push(`${failed} jobs failed`);
  await worker.close();
  await running.catch((error) => problems.push(`worker.run() rejected: ${error}`));
  await probe.close();
  if (total === n) {
    problems.push(
      ...expect(await counts(queue), { completed: n, waiting: 0, active: 0, failed: 0 }),
    );
  }
  const value = Math.min(completed, n) / seconds;
  return { value, unit: 'jobs/s', seconds, problems, stats, fill: total, fill_seconds: fillSeconds };
}

async function usedMemory(client) {
  const info = await client.call('INFO', 'memory');
  const line = String(info)
    .split('\n')
    .find((l) => l.startsWith('used_memory:'));
  return Number(line.split(':')[1]);
}

/** Bytes of Redis memory per waiting job: used_memory before and after n no-op jobs are
 * bulk-added (the server was FLUSHALL'd before this runner started). */
async function memory(queue) {
  const { n, batch } = spec;
  const client = new IORedis(connection);
  try {
    const before = await usedMemory(client);
    const t0 = performance.now();
    await fill(queue, n, batch);
    const seconds = (performance.now() - t0) / 1000;
    const after = await usedMemory(client);
    const problems = expect(await counts(queue), { waiting: n, active: 0 });
    const perJob = (after - before) / n;
    return {
      value: perJob,
      bytes_per_job: perJob,
      unit: 'bytes',
      used_memory_before: before,
      used_memory_after: after,
      seconds,
      problems,
    };
  } finally {
    await client.quit();
  }
}

function percentile(sorted, q) {
  if (!sorted.length) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

async function latency(queue) {
  const { n, gap_ms: gapMs } = spec;
  const worker = new Worker(QUEUE, async () => null, { connection, concurrency: 1 });
  let pending = null; // {resolve} of the job in flight
  let doneAt = 0;
  worker.on('completed', () => {
    doneAt = performance.now();
    if (pending) pending.resolve(true);
  });
  worker.on('failed', () => {
    doneAt = performance.now();
    if (pending) pending.resolve(false);
  });
  worker.on('error', () => {});
  await worker.waitUntilReady();
  await sleep(500); // let the worker settle into its idle wait

  const samples = [];
  const problems = [];
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const done = new Promise((resolve) => {
      pending = { resolve };
    });
    const t0 = performance.now();
    await queue.add('noop', { i });
    const ok = await within(done, 10_000, null);
    pending = null;
    if (ok === null) {
      problems.push(`job ${i} not completed within 10 s`);
      break;
    }
    if (!ok) problems.push(`job ${i} failed`);
    samples.push(doneAt - t0);
    if (gapMs > 0) await sleep(gapMs);
  }
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  samples.sort((a, b) => a - b);
  const mean = samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : null;
  return {
    value: percentile(samples, 0.5),
    unit: 'ms',
    p50: percentile(samples, 0.5),
    p99: percentile(samples, 0.99),
    mean,
    max: samples.length ? samples[samples.length - 1] : null,
    samples: samples.length,
    seconds,
    problems,
  };
}

const WORKLOADS = {
  add_single: addSingle,
  add_bulk: addBulk,
  process: processRun,
  latency,
  memory,
  backlog: processRun,
};

async function main() {
  const result = { system: 'bullmq-node', version: `bullmq ${version}, node ${process.version}` };
  const queue = new Queue(QUEUE, { connection });
  try {
    await queue.waitUntilReady();
    // Untimed warm-up on another queue: loads the add scripts and warms the JIT.
    const warm = new Queue('warmup', { connection });
    for (let i = 0; i < 200; i++) await warm.add('noop', { i });
    await warm.addBulk(payloads(0, 200));
    await warm.obliterate({ force: true });
    await warm.close();
    const run = WORKLOADS[spec.workload];
    if (!run) throw new Error(`unknown workload ${spec.workload}`);
    Object.assign(result, { workload: spec.workload }, await run(queue));
  } catch (error) {
    result.error = String(error && error.stack ? error.stack : error);
  } finally {
    await queue.close().catch(() => {});
  }
  // Exit only once the line is flushed: a pipe write is asynchronous in Node.
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`, () => process.exit(0));
}

main();
