/**
 * An embedded weft worker: a TypeScript handler instead of `sh -c`. It reads the job's `command` as
 * a tiny instruction ("sum 1 2 3", "sleep 5", "upper <text>") and answers with outputs.
 *
 *   SERVER_URL=http://localhost:3000 WORKER_LABELS=ts npx tsx examples/embedded-worker/worker.ts
 *
 * 'weft' resolves to this checkout's built package (after `npm install`), as it would once installed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { PermanentError, Worker } from 'weft';

const worker = new Worker({
  serverUrl: process.env.SERVER_URL ?? 'http://localhost:3000',
  token: process.env.WEFT_TOKEN,
  labels: (process.env.WORKER_LABELS ?? 'ts').split(',').filter(Boolean),
  concurrency: 2,
  async handler(job, ctx) {
    ctx.log(`${job.workflow_id}/${job.job_id} attempt ${ctx.attempt}: ${job.command}`);
    const [verb = '', ...args] = job.command.trim().split(/\s+/);
    switch (verb) {
      case 'sum':
        return { sum: String(args.map(Number).reduce((a, b) => a + b, 0)) };
      case 'sleep':
        // Rejects as soon as the job is cancelled or its lease is lost.
        await sleep(Number(args[0] ?? 1) * 1000, undefined, { signal: ctx.signal });
        return { slept: args[0] ?? '1' };
      case 'upper': {
        // Upstream outputs are named "$job.key"; anything else is literal text.
        const words = args.map((a) => (a.startsWith('$') ? (ctx.upstream[a.slice(1).split('.')[0]!]?.[a.split('.')[1]!] ?? '') : a));
        ctx.log(`::set-output text=${words.join(' ').toUpperCase()}`); // ::set-output works from ctx.log too
        return;
      }
      default:
        // Retrying cannot fix an unknown instruction: fail without using the retry budget.
        throw new PermanentError(`unknown instruction "${verb}"`);
    }
  },
});

worker.on('job:done', (e) => console.log(`done ${e.job.job_id}`, e.outputs));
worker.on('job:failed', (e) => console.log(`failed ${e.job.job_id}: ${e.error}`));
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => void worker.stop().then(() => process.exit(0)));
}
await worker.start();
console.log(`worker ${worker.workerId} started`);
