import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of the test's own: initdb into a temp dir, a free port on 127.0.0.1, its unix
 * socket inside the temp dir, trust auth. A test may stop and restart it at will; the shared server
 * on 127.0.0.1:5432 serves other test files at the same time and must never be touched that way.
 *
 * PostgreSQL refuses to run as root. Tests run as root in CI, so there every binary runs as the
 * `postgres` OS user (the temp dir is handed to it); as anyone else they run as that user.
 */
export interface PrivateCluster {
  port: number;
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  dir: string;
  /** pg_ctl start; resolves once connections are accepted. */
  start(): Promise<void>;
  /** pg_ctl stop; `fast` disconnects clients and shuts down cleanly, `immediate` is a crash. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** pg_ctl restart -m fast; resolves once connections are accepted again. */
  restart(): Promise<void>;
  /** Stops the server (if running) and removes the temp dir. Never throws. */
  destroy(): Promise<void>;
}

const PG_CTL_WAIT_SECS = 60;

/** The directory holding initdb and pg_ctl: WEFT_TEST_PG_BIN, the newest /usr/lib/postgresql/N/bin, or PATH. */
function findBinDir(): string {
  const tried: string[] = [];
  const has = (dir: string) => {
    tried.push(dir);
    return fs.existsSync(path.join(dir, 'initdb')) && fs.existsSync(path.join(dir, 'pg_ctl'));
  };
  const fromEnv = process.env.WEFT_TEST_PG_BIN;
  if (fromEnv) {
    if (has(fromEnv)) return fromEnv;
    throw new Error(`WEFT_TEST_PG_BIN=${fromEnv} holds no initdb and pg_ctl`);
  }
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions) {
    const dir = path.join(root, v, 'bin');
    if (has(dir)) return dir;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    if (has(dir)) return dir;
  }
  throw new Error(
    'cannot start a private PostgreSQL cluster for this test: no directory with initdb and pg_ctl ' +
      `(looked in ${tried.join(', ') || 'nothing'}). Install the PostgreSQL server binaries ` +
      '(e.g. the postgresql-15 package) or point WEFT_TEST_PG_BIN at their directory.',
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export async function startPrivateCluster(): Promise<PrivateCluster> {
  const bin = findBinDir();
  const asRoot = process.getuid?.() === 0;
  let owner: { uid: number; gid: number } | null = null;
  if (asRoot) {
    try {
      owner = {
        uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
        gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
      };
    } catch (err) {
      throw new Error(
        'cannot start a private PostgreSQL cluster for this test: running as root, PostgreSQL must run as ' +
          `another user, and there is no "postgres" OS user (${(err as Error).message.trim()})`,
      );
    }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-pgcluster-'));
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'server.log');
  if (owner) fs.chownSync(dir, owner.uid, owner.gid);

  const pg = async (tool: string, args: string[]) => {
    const file = path.join(bin, tool);
    const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
    try {
      return await run(cmd, argv, { timeout: (PG_CTL_WAIT_SECS + 10) * 1000, cwd: dir });
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      const serverLog = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').slice(-2000) : '';
      throw new Error(`${tool} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}\nserver log:\n${serverLog}`);
    }
  };
  const ctl = (...args: string[]) => pg('pg_ctl', ['-D', data, '-l', log, '-w', '-t', String(PG_CTL_WAIT_SECS), ...args]);

  let port = 0;
  // A test process that dies without running its `after` hooks (killed on a timeout, say) must not
  // leave a server and its files behind: a detached shell waits for this process to go, then stops
  // the cluster and removes the temp dir.
  const q = (x: string) => `'${x.replace(/'/g, `'\\''`)}'`;
  const stopCmd = `${asRoot ? 'runuser -u postgres -- ' : ''}${q(path.join(bin, 'pg_ctl'))} -D ${q(data)} stop -m immediate -w`;
  const watchdog = spawn(
    'sh',
    ['-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${stopCmd} >/dev/null 2>&1; rm -rf ${q(dir)}`],
    { detached: true, stdio: 'ignore' },
  );
  watchdog.unref();

  const destroy = async () => {
    await ctl('stop', '-m', 'immediate').catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
    if (watchdog.exitCode === null && watchdog.pid) {
      try {
        process.kill(watchdog.pid);
      } catch {
        // Already gone.
      }
    }
  };

  try {
    await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
    const baseConf = fs.readFileSync(path.join(data, 'postgresql.conf'), 'utf8');
    // A port that was free a moment ago may be taken by the time the server binds it: try another.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      fs.writeFileSync(
        path.join(data, 'postgresql.conf'),
        `${baseConf}\n` +
          `port = ${port}\n` +
          `listen_addresses = '127.0.0.1'\n` +
          `unix_socket_directories = '${dir}'\n` +
          'shared_buffers = 16MB\n' +
          'max_connections = 50\n',
      );
      try {
        await ctl('start');
        break;
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
  } catch (err) {
    await destroy();
    throw err;
  }

  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dir,
    async start() {
      await ctl('start');
    },
    async stop(mode = 'fast') {
      await ctl('stop', '-m', mode);
    },
    async restart() {
      await ctl('restart', '-m', 'fast');
    },
    destroy: () => destroy().catch(() => {}),
  };
}
