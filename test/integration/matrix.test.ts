/**
 * Matrix jobs end to end (README "Matrix, fan-out and artifacts"): a real `weft server` (SQLite, then
 * PostgreSQL) and real `weft worker` processes. A 2×3 matrix with include/exclude sends each instance
 * to the worker pool its `${{ matrix.os }}` label names; fail_fast cancels a running sibling;
 * max_parallel keeps instances from overlapping; outputs reach the job below as documented.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { client, until } from '../helpers/http.js';
import { createDatabase } from '../helpers/postgres.js';
import { sandbox as makeSandbox, serverProcess as server, spawnWeft, track, type Sandbox } from '../helpers/server.js';

type Api = ReturnType<typeof client>;

async function worker(t: TestContext, sb: Sandbox, serverUrl: string, id: string, labels: string | undefined, concurrency = '4') {
  const p = track(
    t,
    spawnWeft(['worker'], { SERVER_URL: serverUrl, POLL_SECS: '0.2', CANCEL_POLL_SECS: '0.2', KILL_GRACE_SECS: '1', WORKER_ID: id, WORKER_LABELS: labels, CONCURRENCY: concurrency }, sb.dir),
  );
  await p.waitFor(/weft worker \S+ started/);
  return p;
}

async function stdout(api: Api, wf: string, job: string): Promise<string[]> {
  const r = await api.get(`/api/workflows/${wf}/jobs/${encodeURIComponent(job)}/logs`);
  assert.equal(r.status, 200, r.text);
  return (r.body as any[]).flatMap((c) => c.data.split('\n').filter((l: string) => l !== ''));
}

async function setup(t: TestContext, store: 'sqlite' | 'postgres') {
  const sb = makeSandbox(t, 'weft-matrix-');
  let env: Record<string, string | undefined> = {};
  if (store === 'postgres') {
    const db = await createDatabase();
    t.after(() => db.drop());
    env = { ...sb.env, DATABASE_URL: db.url };
  }
  const srv = await server(t, sb, env);
  return { sb, srv, api: client(srv.url) };
}

for (const store of ['sqlite', 'postgres'] as const) {
  test(`${store}: a 2×3 matrix with include/exclude runs each instance on the worker its matrix label names; the job below sees every instance`, async (t) => {
    const { sb, srv, api } = await setup(t, store);
    await worker(t, sb, srv.url, 'w-linux', 'linux');
    await worker(t, sb, srv.url, 'w-mac', 'mac');
    await api.createWorkflow({
      id: 'mx',
      jobs: {
        test: {
          strategy: {
            matrix: { os: ['linux', 'mac'], node: [18, 20, 22], exclude: [{ os: 'mac', node: 18 }], include: [{ os: 'linux', node: 22, extra: 'yes' }] },
          },
          labels: ['${{ matrix.os }}'],
          env: { OS: '${{ matrix.os }}' },
          run: 'echo "os=$OS node=$WEFT_MATRIX_NODE extra=${WEFT_MATRIX_EXTRA:-} id=$WEFT_JOB_ID"; echo "::set-output v=${{ matrix.os }}-${{ matrix.node }}"',
        },
        report: {
          needs: ['test'],
          env: { ALL: '${{ needs.test.outputs.v }}', RESULT: '${{ needs.test.result }}' },
          run: 'echo "all=$ALL result=$RESULT"; echo "$WEFT_UPSTREAM_OUTPUTS"',
        },
      },
    });
    const idle = await api.status('mx');
    assert.deepEqual(idle.jobs.map((j: any) => [j.id, j.group, j.instances]), [['test', 'test', null], ['report', undefined, undefined]]);
    await api.run('mx');
    const doc = await api.settled('mx', 60_000);
    assert.equal(doc.status, 'success', JSON.stringify(doc.jobs.map((j: any) => [j.id, j.state, j.error])));
    const instances = doc.jobs.filter((j: any) => j.group === 'test');
    assert.deepEqual(instances.map((j: any) => [j.id, j.name, j.matrix, j.required_labels]), [
      ['test~0', 'test (linux, 18)', { os: 'linux', node: 18 }, ['linux']],
      ['test~1', 'test (linux, 20)', { os: 'linux', node: 20 }, ['linux']],
      ['test~2', 'test (linux, 22, yes)', { os: 'linux', node: 22, extra: 'yes' }, ['linux']],
      ['test~3', 'test (mac, 20)', { os: 'mac', node: 20 }, ['mac']],
      ['test~4', 'test (mac, 22)', { os: 'mac', node: 22 }, ['mac']],
    ]);
    for (const j of instances) assert.equal(j.worker_id, `w-${j.matrix.os}`, `${j.id} ran on the ${j.matrix.os} pool`);
    assert.deepEqual(await stdout(api, 'mx', 'test~2'), ['os=linux node=22 extra=yes id=test~2', '::set-output v=linux-22']);
    const report = doc.jobs.find((j: any) => j.id === 'report');
    assert.deepEqual(report.depends_on, ['test~0', 'test~1', 'test~2', 'test~3', 'test~4']);
    assert.equal(report.group, undefined);
    const [line, upstream] = await stdout(api, 'mx', 'report');
    assert.equal(line, 'all=["linux-18","linux-20","linux-22","mac-20","mac-22"] result=success');
    assert.deepEqual(JSON.parse(upstream!)['test~3'], { v: 'mac-20' });
    const one = await api.get('/api/jobs/mx/test~4/cancelled');
    assert.deepEqual([one.status, one.text], [200, 'false'], 'routes taking a job id take an instance id');
  });
}

test('fail_fast: one instance failing cancels its running sibling, the run fails; max_parallel: 1 never overlaps instances', async (t) => {
  const { sb, srv, api } = await setup(t, 'sqlite');
  await worker(t, sb, srv.url, 'w', undefined, '4');
  await api.createWorkflow({
    id: 'ff',
    jobs: {
      test: {
        strategy: { matrix: { n: [1, 2] } },
        run: 'if [ "$WEFT_MATRIX_N" = 1 ]; then while [ ! -e "$GO" ]; do sleep 0.1; done; exit 3; fi; echo waiting; sleep 60',
        env: { GO: `${sb.dir}/go` },
      },
      after: { needs: 'test', if: 'always()', run: 'echo "r=$WEFT_NEEDS_TEST_RESULT"' },
    },
  });
  await api.run('ff');
  await until(async () => (await api.jobState('ff', 'test~1')).state === 'running', 'the long sibling to run');
  const fs = await import('node:fs');
  fs.writeFileSync(`${sb.dir}/go`, '');
  const doc = await api.settled('ff', 30_000);
  assert.equal(doc.status, 'failed');
  const states = Object.fromEntries(doc.jobs.map((j: any) => [j.id, [j.state, j.error]]));
  assert.deepEqual(states['test~1'], ['cancelled', 'cancelled by fail_fast: instance "test~0" failed']);
  assert.deepEqual(await stdout(api, 'ff', 'after'), ['r=failure']);

  await api.createWorkflow({
    id: 'mp',
    // Each instance records its own start and end: a claim's and a completion's server times are taken
    // when their requests arrive, so two that cross in one write batch may read a few ms out of order.
    jobs: {
      test: {
        strategy: { matrix: { n: [1, 2, 3, 4] }, max_parallel: 1 },
        run: 'echo "::set-output start=$(date +%s%3N)"; sleep 0.3; echo "::set-output end=$(date +%s%3N)"',
      },
    },
  });
  await api.run('mp');
  const mp = await api.settled('mp', 30_000);
  assert.equal(mp.status, 'success');
  const spans = mp.jobs.map((j: any) => [Number(j.outputs.start), Number(j.outputs.end)]).sort((a: number[], b: number[]) => a[0]! - b[0]!);
  for (let i = 1; i < spans.length; i++) assert.ok(spans[i][0] >= spans[i - 1][1], `instance ${i} started before the one before it finished: ${JSON.stringify(spans)}`);
});

for (const store of ['sqlite', 'postgres'] as const) {
  test(`${store}: for_each fans out over a plan's JSON list on real workers; an empty list succeeds with no instances`, async (t) => {
    const { sb, srv, api } = await setup(t, store);
    await worker(t, sb, srv.url, 'w1', undefined);
    await worker(t, sb, srv.url, 'w2', undefined);
    await api.createWorkflow({
      id: 'fan',
      inputs: { list: { default: '["a","b",{"name":"c"}]' } },
      jobs: {
        plan: { env: { LIST: '${{ inputs.list }}' }, run: 'echo "::set-output shards=$LIST"' },
        shard: {
          needs: 'plan',
          for_each: '${{ needs.plan.outputs.shards }}',
          strategy: { max_parallel: 2 },
          env: { NAME: '${{ item.name }}' },
          run: 'echo "item=$WEFT_ITEM index=$WEFT_ITEM_INDEX name=$NAME"; echo "::set-output got=$WEFT_ITEM_INDEX"',
        },
        join: { needs: 'shard', env: { GOT: '${{ needs.shard.outputs.got }}' }, run: 'echo "got=$GOT"' },
      },
    });
    const idle = await api.status('fan');
    assert.deepEqual(idle.jobs.find((j: any) => j.id === 'shard').instances, null);
    await api.run('fan');
    const doc = await api.settled('fan', 60_000);
    assert.equal(doc.status, 'success', JSON.stringify(doc.jobs.map((j: any) => [j.id, j.state, j.error])));
    const instances = doc.jobs.filter((j: any) => j.group === 'shard');
    assert.deepEqual(instances.map((j: any) => [j.id, j.name, j.item, j.item_index]), [
      ['shard~0', 'shard (a)', 'a', 0],
      ['shard~1', 'shard (b)', 'b', 1],
      ['shard~2', 'shard (2)', { name: 'c' }, 2],
    ]);
    assert.deepEqual(doc.jobs.find((j: any) => j.id === 'join').depends_on, ['shard~0', 'shard~1', 'shard~2']);
    assert.deepEqual(await stdout(api, 'fan', 'shard~2'), ['item={"name":"c"} index=2 name=c', '::set-output got=2']);
    assert.deepEqual(await stdout(api, 'fan', 'join'), ['got=["0","1","2"]']);

    const r = await api.post('/api/workflows/fan/run', { inputs: { list: '[]' } });
    assert.equal(r.status, 202, r.text);
    const empty = await until(async () => {
      const d = await api.status('fan');
      return d.run_number === 2 && d.status !== 'running' ? d : null;
    }, 'the empty fan-out to settle');
    assert.equal(empty.status, 'success');
    const shard = empty.jobs.find((j: any) => j.id === 'shard');
    assert.deepEqual([shard.state, shard.group, shard.instances], ['success', 'shard', 0]);
  });
}
