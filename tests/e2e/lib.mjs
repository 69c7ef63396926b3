// What the browser tests stand on: the real `agent-app serve` on a temp copy of
// the kanban example, a second "foreign" web origin, headless Chromium, and a
// plain HTTP client acting as an agent.
//
// Every child process is registered and killed when this process exits, for
// whatever reason, so a failed or interrupted run leaves no server on a port.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const E2E_DIR = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(E2E_DIR, '..', '..');
export const OUT_DIR = path.join(E2E_DIR, 'out');
export const EXAMPLE_DIR = path.join(REPO_ROOT, 'examples', 'kanban');
export const CHROMIUM = process.env.E2E_CHROMIUM || '/usr/bin/chromium';
/** Flags that work on a closed network, in a container, as root. */
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run',
];
export const HTTP_TIMEOUT_MS = 10000;

const children = new Set();
const tempDirs = new Set();
process.on('exit', () => {
  for (const child of children) {
    try { child.kill('SIGKILL'); } catch { /* gone */ }
  }
  if (process.env.E2E_KEEP_TMP !== '1') {
    for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
  }
});
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => process.exit(128 + os.constants.signals[sig]));
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` (which asserts) until it passes or `ms` elapse; the last failure is thrown. */
export async function eventually(check, ms = 5000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try { return await check(); } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(100);
    }
  }
}

export function tempDir(label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `a2app-e2e-${label}-`));
  tempDirs.add(dir);
  return dir;
}

/** fetch with a deadline; never throws on status: `{status, body}`. */
export async function request(method, url, { headers = {}, json } = {}) {
  const init = { method, headers: { ...headers }, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) };
  if (json !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(json);
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = text; }
  return { status: res.status, body };
}

async function portAnswers(port) {
  try {
    await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) });
    return true;
  } catch {
    return false;
  }
}

function copyApp(dest) {
  // Only the files that define the app: a developer's data/, logs/ and token stay out.
  for (const f of ['app.toml', 'schema.json', 'operations.json', 'requests.json']) {
    const src = path.join(EXAMPLE_DIR, f);
    if (fs.existsSync(src)) fs.copyFileSync(src, path.join(dest, f));
  }
  fs.cpSync(path.join(EXAMPLE_DIR, 'ui'), path.join(dest, 'ui'), { recursive: true });
}

/**
 * `agent-app serve` on a temp copy of the kanban example; `configure(dir)`, when
 * given, may change that copy before it is served.
 * @returns {Promise<{url: string, dir: string, token: string, log: string, stop: () => Promise<void>}>}
 */
export async function startApp({ port, timeoutMs = 30000, configure }) {
  const bin = process.env.A2APP_BIN || path.join(REPO_ROOT, 'target', 'debug', 'agent-app');
  if (!fs.existsSync(bin)) throw new Error(`${bin} not found: run \`cargo build --bin agent-app\` or set A2APP_BIN`);
  if (await portAnswers(port)) throw new Error(`port ${port} already answers (a leftover server?)`);
  const root = tempDir('app');
  const dir = path.join(root, 'kanban');
  fs.mkdirSync(dir);
  copyApp(dir);
  if (configure) await configure(dir);
  const log = path.join(root, 'serve.log');
  const fd = fs.openSync(log, 'a');
  const child = spawn(bin, ['serve', dir, '--http', `127.0.0.1:${port}`], { cwd: root, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  children.add(child);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => { children.delete(child); resolve(code ?? signal); }));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  let gone = null;
  exited.then((c) => { gone = c; });
  for (;;) {
    if (gone !== null) throw new Error(`agent-app exited (${gone}) before it answered\n${fs.readFileSync(log, 'utf8')}`);
    if (Date.now() > deadline) { await stop(); throw new Error(`agent-app did not answer within ${timeoutMs} ms\n${fs.readFileSync(log, 'utf8')}`); }
    try {
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) break;
    } catch { /* not yet */ }
    await sleep(100);
  }
  const tokenFile = path.join(dir, '.agent-token');
  while (!fs.existsSync(tokenFile) && Date.now() < deadline) await sleep(50);
  const token = fs.readFileSync(tokenFile, 'utf8').trim();
  return { url, dir, token, log, stop };
}

/**
 * A page on another origin (another loopback port) that tries, in the visitor's
 * browser, to read the app and to write a card to it: the attacks the Origin
 * rule exists for. It reports what its script could observe in `#result`.
 */
export function startForeignSite({ port, target }) {
  const page = `<!doctype html><meta charset="utf-8"><title>Somewhere else</title>
<h1>An unrelated site</h1><pre id="result">running</pre>
<!-- The classic cross-site form post: text/plain, no preflight, the body shaped as JSON. -->
<form id="csrf" method="post" action="${target}/api/collections/cards/records" enctype="text/plain" target="sink">
  <input type="hidden" name='{"title":"written by a foreign form","list":"aaaaaaaaaaaaaaa","x":"' value='"}'>
</form>
<iframe name="sink" title="sink"></iframe>
<script>
const target = ${JSON.stringify(target)};
const out = [];
(async () => {
  // A "simple" cross-origin request: no preflight, so it reaches the app, with Origin set.
  try {
    await fetch(target + '/api/collections/cards/records', {
      method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
      body: JSON.stringify({ title: 'written by a foreign page', list: 'aaaaaaaaaaaaaaa' }),
    });
    out.push('fetch write: sent (opaque answer)');
  } catch (e) { out.push('fetch write: ' + e.message); }
  // A read this script could see, if the app allowed it: the app refuses the Origin, CORS hides it.
  try {
    const r = await fetch(target + '/api/collections/cards/records');
    out.push('read: ' + r.status);
  } catch (e) { out.push('read: blocked'); }
  document.getElementById('csrf').submit();
  document.getElementById('result').textContent = out.join('\\n');
  document.body.dataset.done = 'true';
})();
</script>`;
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(page);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve({
      url: `http://127.0.0.1:${port}`,
      stop: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
    }));
  });
}

/** Headless Chromium with a fresh profile; one context, as a person's browser. */
export async function launchBrowser() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (tests/e2e/run.sh does it)`);
  const profile = tempDir('profile');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1360, height: 820 },
    timeout: 30000,
    locale: 'en-GB',
    timezoneId: 'UTC',
  });
  context.setDefaultTimeout(10000);
  return context;
}

export function screenshotPath(name) {
  fs.mkdirSync(OUT_DIR, { recursive: true });
  return path.join(OUT_DIR, name);
}
