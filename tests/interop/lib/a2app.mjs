// Start "ours": the a2app server, or (self-check mode) a second real PocketBase.
//
//   A2APP_BIN        server binary (default <repo>/target/debug/agent-app)
//   INTEROP_OURS     "a2app" (default) or "pocketbase": the self-check mode that runs
//                    PocketBase on both sides, proving the dataset and the comparator
//                    are deterministic (every query must then be identical).
//   INTEROP_EXAMPLE  example app dir to copy (default <repo>/examples/kanban)
import fs from 'node:fs';
import path from 'node:path';
import { INTEROP_DIR, startPocketBase } from './pocketbase.mjs';
import {
  makeTempDir, portAnswers, removeDir, sleep, spawnServer, stopChild, waitHealthy,
} from './proc.mjs';

export const REPO_ROOT = path.resolve(INTEROP_DIR, '..', '..');
export const EXAMPLE_DIR = process.env.INTEROP_EXAMPLE || path.join(REPO_ROOT, 'examples', 'kanban');
export const SCHEMA_PATH = path.join(EXAMPLE_DIR, 'schema.json');
export const OURS_MODE = process.env.INTEROP_OURS || 'a2app';

// Only these files define an app; data/, logs/ and .agent-token of a developer's
// checkout must not leak into a test run.
const APP_FILES = ['app.toml', 'schema.json', 'operations.json'];

export function a2appBin() {
  return process.env.A2APP_BIN || path.join(REPO_ROOT, 'target', 'debug', 'agent-app');
}

/**
 * @param {{port:number, startTimeoutMs?:number}} opts
 * @returns {Promise<{kind:string, url:string, token:string, dir:string,
 *   writeHeaders:Record<string,string>, stop:()=>Promise<void>}>}
 */
export async function startOurs({ port, startTimeoutMs = 30000 }) {
  if (OURS_MODE === 'pocketbase') {
    return startPocketBase({ port, schemaPath: SCHEMA_PATH, label: 'ours-pb', startTimeoutMs });
  }
  if (OURS_MODE !== 'a2app') throw new Error(`INTEROP_OURS must be "a2app" or "pocketbase", not ${OURS_MODE}`);

  const bin = a2appBin();
  if (!fs.existsSync(bin)) throw new Error(`a2app binary not found at ${bin}; run \`cargo build\` or set A2APP_BIN`);
  if (await portAnswers(port)) throw new Error(`port ${port} already answers HTTP (leftover server?)`);

  const root = makeTempDir('ours');
  const dir = path.join(root, 'app');
  fs.mkdirSync(dir);
  for (const f of APP_FILES) {
    const src = path.join(EXAMPLE_DIR, f);
    if (fs.existsSync(src)) fs.copyFileSync(src, path.join(dir, f));
  }

  const logFile = path.join(root, 'serve.log');
  const proc = spawnServer(bin, ['serve', dir, '--http', `127.0.0.1:${port}`], { cwd: root, logFile });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopChild(proc);
    removeDir(root);
  };
  try {
    await waitHealthy(`${url}/api/health`, { exited: proc.exited, timeoutMs: startTimeoutMs, logFile });
    // The server writes its agent token at start-up; allow a short race after health.
    const tokenFile = path.join(dir, '.agent-token');
    const deadline = Date.now() + 5000;
    while (!fs.existsSync(tokenFile) && Date.now() < deadline) await sleep(100);
    if (!fs.existsSync(tokenFile)) throw new Error(`${tokenFile} not written by the server`);
    const token = fs.readFileSync(tokenFile, 'utf8').trim();
    if (!token) throw new Error(`${tokenFile} is empty`);
    return {
      kind: 'a2app',
      url,
      token,
      dir,
      writeHeaders: { 'X-LUI-Token': token, 'X-LUI-Agent': 'interop' },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
