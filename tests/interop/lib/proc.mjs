// Child-process and HTTP helpers shared by the PocketBase and a2app launchers.
//
// Why a registry of children: node:test runs `after` hooks on normal failure, but a
// crash, an uncaught error or a runner timeout (SIGTERM) would otherwise leave a
// server listening on a loopback port and break the next run. Every child started
// here is killed on process exit, whatever the reason.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const children = new Set();
const tempDirs = new Set();

function killAllSync() {
  for (const child of children) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
  children.clear();
  for (const dir of tempDirs) removeDir(dir);
}
process.on('exit', killAllSync);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => { killAllSync(); process.exit(128 + os.constants.signals[sig]); });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every network call has a bounded timeout so a wedged server fails the test
// instead of hanging the run.
export const HTTP_TIMEOUT_MS = Number(process.env.INTEROP_HTTP_TIMEOUT_MS || 15000);

/**
 * fetch + parse; never throws on HTTP status, returns {status, body, text}.
 * `raw` sends a string as-is with a JSON content type: the only way to send a body
 * that JSON.stringify cannot produce (malformed JSON).
 */
export async function request(method, url, { headers = {}, json, raw, timeoutMs = HTTP_TIMEOUT_MS } = {}) {
  const init = { method, headers: { ...headers }, signal: AbortSignal.timeout(timeoutMs) };
  if (json !== undefined && raw !== undefined) throw new Error('request: pass json or raw, not both');
  if (json !== undefined || raw !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = raw !== undefined ? raw : JSON.stringify(json);
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let body = null;
  if (text.length) {
    try { body = JSON.parse(text); } catch { body = text; }
  }
  return { status: res.status, body, text };
}

export function makeTempDir(label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `a2app-interop-${label}-`));
  tempDirs.add(dir); // removed on exit even if stop() never runs
  return dir;
}

/** True when something already answers HTTP on the port (a leftover server). */
export async function portAnswers(port) {
  try {
    await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) });
    return true;
  } catch {
    return false;
  }
}

/**
 * Spawn a long-running server with stdout+stderr going to logFile.
 * Returns {child, exited} where exited is a promise of the exit code.
 */
export function spawnServer(cmd, args, { cwd, logFile, env = process.env }) {
  const fd = fs.openSync(logFile, 'a');
  const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd); // the child holds its own copy
  children.add(child);
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => { children.delete(child); resolve(code ?? signal); });
    child.once('error', (err) => { children.delete(child); resolve(`spawn error: ${err.message}`); });
  });
  return { child, exited };
}

/** Poll `url` until it answers 200, the process exits, or the deadline passes. */
export async function waitHealthy(url, { exited, timeoutMs, logFile }) {
  let gone = null;
  exited.then((code) => { gone = code; });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (gone !== null) throw new Error(`server exited (${gone}) before ${url} was healthy\n${tail(logFile)}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) return;
    } catch { /* not listening yet */ }
    await sleep(150);
  }
  throw new Error(`timeout after ${timeoutMs} ms waiting for ${url}\n${tail(logFile)}`);
}

/** SIGTERM, then SIGKILL after graceMs; resolves once the process is gone. */
export async function stopChild({ child, exited }, graceMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
}

export function tail(file, lines = 30) {
  try {
    const all = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    return `--- last lines of ${file} ---\n${all.slice(-lines).join('\n')}`;
  } catch {
    return `(no log at ${file})`;
  }
}

export function removeDir(dir) {
  // INTEROP_KEEP_TMP=1 keeps server dirs and logs for post-mortem debugging.
  tempDirs.delete(dir);
  if (process.env.INTEROP_KEEP_TMP === '1') return;
  try { fs.rmSync(dir, { recursive: true, force: true }); } catch { /* best effort */ }
}
