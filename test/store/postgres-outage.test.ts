/**
 * The PostgreSQL store when its database misbehaves: a backend killed mid-statement, a database that
 * cannot be reached, one that stops answering, a schema newer than this build. Runs on the shared
 * test server; every case touches only a database (and backends) of its own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import postgres from 'postgres';
import { StoreUnavailableError } from '../../src/store/index.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { LATEST_SCHEMA_VERSION } from '../../src/store/postgres/migrations.js';
import { pipeline, statement, transaction } from '../../src/store/postgres/tx.js';
import { VERSION } from '../../src/version.js';
import { ADMIN_URL, createDatabase } from '../helpers/postgres.js';

function connect(url: string) {
  return postgres(url, { max: 1, onnotice: () => {} });
}

/** Waits for the backend of the store's statement whose text contains `marker`, and terminates it. */
async function terminateWhenRunning(admin: postgres.Sql, db: string, marker: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const [row] = await admin`
      SELECT pid FROM pg_stat_activity
      WHERE datname = ${db} AND state = 'active' AND query LIKE ${`%${marker}%`} AND pid <> pg_backend_pid()`;
    if (row) {
      await admin`SELECT pg_terminate_backend(${row.pid as number})`;
      return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no backend ran ${marker} within 10 s`);
}

/** What `p` rejects with, caught at once (the rejection may come before anyone awaits it). */
function failure(p: Promise<unknown>): Promise<Error | null> {
  return p.then(
    () => null,
    (err: Error) => err,
  );
}

async function assertStoreWorks(store: PostgresStore): Promise<void> {
  assert.deepEqual([...(await statement(store.sql, 'SELECT 1 AS one'))], [{ one: 1 }]);
  assert.equal(await transaction(store.sql, async (q) => (await q('SELECT 2 AS two'))[0]!.two), 2);
  assert.deepEqual(await store.read((r) => r.listWorkers()), []);
}

test('postgres outage: a transaction and a pipeline whose backend dies mid-statement fail as unavailable, and the store goes on', async () => {
  const db = await createDatabase();
  const admin = connect(ADMIN_URL);
  const store = await PostgresStore.open(db.url, { max: 4 });
  try {
    // Before the fix, the ROLLBACK that followed (or the next query on the released connection) ended
    // the process with a TypeError thrown from the driver's deferred write.
    const tx = failure(
      transaction(store.sql, async (q) => {
        await q('SELECT 1');
        await q("SELECT pg_sleep(5), 'weft-tx-marker'");
      }),
    );
    await terminateWhenRunning(admin, db.name, 'weft-tx-marker');
    const txError = await tx;
    assert.ok(txError instanceof StoreUnavailableError, `${txError}`);
    assert.match(txError.message, /^database unavailable: /);
    await assertStoreWorks(store);

    const piped = failure(
      pipeline(store.sql, [
        ['SELECT 1', []],
        ["SELECT pg_sleep(5), 'weft-pipe-marker'", []],
      ]),
    );
    await terminateWhenRunning(admin, db.name, 'weft-pipe-marker');
    const pipeError = await piped;
    assert.ok(pipeError instanceof StoreUnavailableError, `${pipeError}`);
    await assertStoreWorks(store);
    // Every session connection comes back, not just the one in use.
    await Promise.all(Array.from({ length: 8 }, () => assertStoreWorks(store)));
  } finally {
    await store.close();
    await admin.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres outage: a database that cannot be reached fails at open with a message saying so', async () => {
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const started = Date.now();
  await assert.rejects(PostgresStore.open(`postgres://postgres@127.0.0.1:${port}/nothing`, { connectTimeoutMs: 500 }), (err: Error) => {
    assert.match(err.message, /^cannot open PostgreSQL database postgres:\/\/postgres@127\.0\.0\.1:\d+\/nothing: database unavailable: no connection \(ECONNREFUSED\)/);
    return true;
  });
  // Refused, not retried for ever: a bound far above the 500 ms connect timeout, so load cannot reach it.
  assert.ok(Date.now() - started < 30_000, `refused within ${Date.now() - started} ms`);
});

/**
 * A TCP relay to the test server that can be frozen: while frozen it passes nothing on in either
 * direction and keeps every connection open, as a network partition does.
 */
async function freezableRelay(target: URL): Promise<{ url: (db: string) => string; freeze(): void; thaw(): void; close(): Promise<void> }> {
  let frozen = false;
  const held: Array<() => void> = [];
  const sockets = new Set<net.Socket>();
  const relay = (from: net.Socket, to: net.Socket) => {
    from.on('data', (chunk) => {
      if (frozen) held.push(() => to.write(chunk));
      else to.write(chunk);
    });
    from.on('error', () => to.destroy());
    from.on('close', () => to.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: (db) => {
      const u = new URL(target.toString());
      u.host = `127.0.0.1:${port}`;
      u.pathname = `/${db}`;
      return u.toString();
    },
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
      for (const send of held.splice(0)) send();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

test('postgres outage: a database that stops answering fails operations at their deadline instead of hanging', async () => {
  const db = await createDatabase();
  const relay = await freezableRelay(new URL(ADMIN_URL));
  // Deadline: connect timeout + statement timeout + 1 s = 1.7 s.
  const store = await PostgresStore.open(relay.url(db.name), { max: 4, connectTimeoutMs: 300, statementTimeoutMs: 400 });
  try {
    await assertStoreWorks(store);
    relay.freeze();
    for (const op of [
      () => statement(store.sql, 'SELECT 1'),
      () => transaction(store.sql, (q) => q('SELECT 1')),
      () => store.read((r) => r.listWorkers()),
    ]) {
      const started = Date.now();
      await assert.rejects(op(), (err: Error) => {
        assert.ok(err instanceof StoreUnavailableError, `${err.name}: ${err.message}`);
        // A connection opened while frozen runs into its connect timeout first.
        assert.match(err.message, /^database unavailable: (no answer within 1700 ms|no connection \(CONNECT_TIMEOUT\))$/);
        return true;
      });
      const took = Date.now() - started;
      assert.ok(took < 4000, `answered after ${took} ms`);
    }
    relay.thaw();
    await assertStoreWorks(store);
  } finally {
    relay.thaw();
    await store.close();
    await relay.close();
    await db.drop();
  }
});

test('postgres settings: the statement timeout and the pool size hold on every connection', async () => {
  const db = await createDatabase();
  const admin = connect(ADMIN_URL);
  const store = await PostgresStore.open(db.url, { max: 4, statementTimeoutMs: 250 });
  try {
    assert.equal((await statement(store.sql, 'SHOW statement_timeout'))[0]!.statement_timeout, '250ms');
    assert.equal(await transaction(store.sql, async (q) => (await q('SHOW statement_timeout'))[0]!.statement_timeout), '250ms');
    await assert.rejects(statement(store.sql, 'SELECT pg_sleep(2)'), (err: Error) => {
      assert.ok(err instanceof StoreUnavailableError, `${err.name}: ${err.message}`);
      assert.match(err.message, /statement timeout \(SQLSTATE 57014\)/);
      return true;
    });
    // Twenty units of work at once, on four connections at most.
    let most = 0;
    const count = async () => {
      const [row] = await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${db.name} AND application_name = 'weft'`;
      most = Math.max(most, row!.n as number);
    };
    const work = Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0 ? statement(store.sql, 'SELECT pg_sleep(0.05)') : transaction(store.sql, (q) => q('SELECT pg_sleep(0.05)')),
      ),
    );
    let done = false;
    void work.finally(() => (done = true)).catch(() => {});
    while (!done) {
      await count();
      await new Promise((r) => setTimeout(r, 10));
    }
    await work;
    await count();
    assert.ok(most >= 2 && most <= 4, `at most 4 connections, saw ${most}`);
  } finally {
    await store.close();
    await admin.end({ timeout: 5 });
    await db.drop();
  }
});

test('postgres schema: a database migrated by a newer build refuses to open, naming both versions', async () => {
  const db = await createDatabase();
  const sql = connect(db.url);
  try {
    await (await PostgresStore.open(db.url)).close();
    const newer = LATEST_SCHEMA_VERSION + 1;
    await sql`INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (${newer}, 'from the future', 0)`;
    await assert.rejects(PostgresStore.open(db.url), (err: Error) => {
      assert.ok(
        err.message.includes(`the database schema is at version ${newer}, newer than this build of weft (${VERSION}) knows: it knows versions up to ${LATEST_SCHEMA_VERSION}`),
        err.message,
      );
      return true;
    });
    const versions = (await sql`SELECT version FROM schema_migrations ORDER BY version`).map((r) => r.version as number);
    assert.equal(versions.at(-1), newer, 'nothing was changed');
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});
