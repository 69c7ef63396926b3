// What the OAuth tests share: the host's redirect URI, a loopback server, and
// a watch on the consent page's "returning" line.

import http from 'node:http';

/**
 * The host's redirect URI: a loopback server on `port` that hands each
 * return (`/callback`) to the test, as the URL the browser asked for.
 */
export function startReturnServer(port) {
  const host = `127.0.0.1:${port}`;
  const unclaimed = [];
  const waiting = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, `http://${host}`);
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>Signed in</title><p id="back">Back in the host. You can close this tab.</p>');
    const waiter = waiting.shift();
    if (waiter) waiter(url); else unclaimed.push(url);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve({
      /** The next return to arrive. */
      next: () => (unclaimed.length ? Promise.resolve(unclaimed.shift()) : new Promise((r) => waiting.push(r))),
      stop: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
    }));
  });
}

/**
 * Collects what the dashboard's "returning" line says as it is shown: the page
 * leaves at once, so the line is reported through a binding, which outlives it.
 */
export async function watchReturning(page) {
  const shown = [];
  await page.exposeBinding('__returningShown', (_source, text) => { shown.push(text); });
  await page.evaluate(() => {
    const line = document.getElementById('grants-returning');
    new MutationObserver(() => { if (!line.hidden) window.__returningShown(line.textContent); })
      .observe(line, { childList: true, characterData: true, subtree: true, attributes: true });
  });
  return shown;
}
