#!/usr/bin/env node
// A stand-in for the a2app binary, for checking the harness's a2app path (argv,
// health wait, .agent-token, X-LUI-* headers on writes) before the Rust server
// exists. It speaks the same command line:
//   fake-a2app.mjs serve <DIR> --http 127.0.0.1:<PORT>
// and forwards every request to a private PocketBase on PORT+5, built from
// <DIR>/schema.json. Writes without the right X-LUI-Token get 401, so a harness that
// forgot the header fails loudly. Use: A2APP_BIN=tests/interop/lib/fake-a2app.mjs
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startPocketBase } from './pocketbase.mjs';

const [cmd, dir, flag, hostPort] = process.argv.slice(2);
if (cmd !== 'serve' || !dir || flag !== '--http' || !/^127\.0\.0\.1:\d+$/.test(hostPort || '')) {
  console.error('usage: fake-a2app.mjs serve <DIR> --http 127.0.0.1:<PORT>');
  process.exit(2);
}
const port = Number(hostPort.split(':')[1]);
const backendPort = port + 5;
const backend = await startPocketBase({ port: backendPort, schemaPath: path.join(dir, 'schema.json'), label: 'fake-backend' });
const token = crypto.randomBytes(16).toString('hex');

const server = http.createServer((req, res) => {
  const isWrite = !['GET', 'HEAD', 'OPTIONS'].includes(req.method);
  if (isWrite && (req.headers['x-lui-token'] !== token || !req.headers['x-lui-agent'])) {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 401, message: 'fake-a2app: missing or wrong X-LUI-Token / X-LUI-Agent', data: {} }));
    return;
  }
  const headers = { ...req.headers, host: `127.0.0.1:${backendPort}` };
  delete headers['x-lui-token'];
  delete headers['x-lui-agent'];
  const up = http.request({ host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers }, (upRes) => {
    res.writeHead(upRes.statusCode, upRes.headers);
    upRes.pipe(res); // streams, so realtime SSE passes through
  });
  up.on('error', (err) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 502, message: `fake-a2app: ${err.message}`, data: {} }));
  });
  res.on('close', () => up.destroy());
  req.pipe(up);
});

server.listen(port, '127.0.0.1', () => {
  fs.writeFileSync(path.join(dir, '.agent-token'), `${token}\n`);
});

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  server.closeAllConnections();
  server.close();
  await backend.stop();
  process.exit(0);
};
// Registered after lib/proc.mjs's own handlers, which would SIGKILL the backend
// and exit at once; drop those so the backend gets a clean stop.
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.removeAllListeners(sig);
  process.once(sig, shutdown);
}
