// bunqueue (embedded SQLite mode) side of benches/embedded.py: runs ONE workload and prints
// one line `RESULT {json}` on stdout, as bullmq_bench.mjs does for compare.py. embedded.py
// starts it once per workload (bunqueue keeps one embedded manager per process, bound to the
// first dataPath it sees), under the Bun binary it installed:
//
//   bun benches/bunqueue_bench.ts <npm prefix dir> '<spec json>'
//
// <npm prefix dir> is where `npm install --prefix <dir> @oven/bun-linux-x64 bunqueue` put
// node_modules (embedded.py's scratch directory, never the repo); bunqueue is loaded from there.
// The spec: {workload: add_single|add_single_durable|add_bulk|process, data_path, n, batch,
//            concurrency, timeout_s}.
// The result: {system, version, workload, value (jobs/s), unit, seconds, problems}.
// The workloads match embedded.py's lanemq runners: job name "noop", data {i}, default queue
// and worker options (so a plain add is buffered: see benches/README.md), completion observed
// by the worker's "completed" event, the clock read with performance.now().

import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const [prefixDir, specText] = process.argv.slice(2);
if (!prefixDir || !specText) {
  console.error('usage: bun bunqueue_bench.ts <npm prefix dir> <spec json>');
  process.exit(2);
}
const spec = JSON.parse(specText);
const requireFromPrefix = createRequire(path.join(path.resolve(prefixDir), 'package.json'));
const { Queue, Worker, shutdownManager } = requireFromPrefix('bunqueue/client');
const version: string = requireFromPrefix('bunqueue/package.json').version;

const QUEUE = 'bench';
const options = { embedded: true, dataPath: spec.data_path };

function payloads(start: number, stop: number) {
  const jobs = [];
  for (let i = start; i < stop; i++) jobs.push({ name: 'noop', data: { i } });
  return jobs;
}

async function fill(queue: any, n: number, batch: number) {
  for (let start = 0; start < n; start += batch) {
    await queue.addBulk(payloads(start, Math.min(start + batch, n)));
  }
}

/** One awaited add at a time; `durable` asks bunqueue to write each add before it returns. */
async function addSingle(queue: any, n: number, durable: boolean): Promise<number> {
  const opts = durable ? { durable: true } : undefined;
  const started = performance.now();
  for (let i = 0; i < n; i++) await queue.add('noop', { i }, opts);
  return (performance.now() - started) / 1000;
}

async function addBulk(queue: any, n: number, batch: number): Promise<number> {
  const started = performance.now();
  await fill(queue, n, batch);
  return (performance.now() - started) / 1000;
}

/** Fills the queue (untimed), then times one worker of `concurrency` draining it. */
async function processAll(queue: any, n: number, batch: number, concurrency: number,
                          timeoutS: number): Promise<[number, string[]]> {
  await fill(queue, n, batch);
  let completed = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => { done = resolve; });
  const started = performance.now();
  const worker = new Worker(QUEUE, async () => null, { ...options, concurrency });
  worker.on('completed', () => {
    completed += 1;
    if (completed === n) done();
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutS * 1000); });
  await Promise.race([finished, expired]);
  clearTimeout(timer);
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  const problems = completed === n ? [] : [`completed ${completed} of ${n} in ${timeoutS} s`];
  return [seconds, problems];
}

async function main() {
  const queue = new Queue(QUEUE, options);
  const n: number = spec.n;
  let seconds = 0;
  let problems: string[] = [];
  switch (spec.workload) {
    case 'add_single':
      seconds = await addSingle(queue, n, false);
      break;
    case 'add_single_durable':
      seconds = await addSingle(queue, n, true);
      break;
    case 'add_bulk':
      seconds = await addBulk(queue, n, spec.batch);
      break;
    case 'process':
      [seconds, problems] = await processAll(queue, n, spec.batch, spec.concurrency, spec.timeout_s);
      break;
    default:
      throw new Error(`unknown workload ${JSON.stringify(spec.workload)}`);
  }
  if (spec.workload !== 'process') {
    const counts = await queue.getJobCounts();
    if (counts.waiting !== n) problems.push(`waiting ${counts.waiting}, expected ${n}`);
  }
  await queue.close();
  shutdownManager();
  const result = {
    system: 'bunqueue', version, workload: spec.workload, value: n / seconds, unit: 'jobs/s',
    seconds, problems,
  };
  console.log(`RESULT ${JSON.stringify(result)}`);
}

main().then(() => process.exit(0), (error) => {
  console.error(error?.stack ?? String(error));
  process.exit(1);
});
