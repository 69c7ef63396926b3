// What the OAuth tests share: the host's redirect URI, a loopback server that
// holds each return, and a watch on the consent page's "returning" line.

import http from 'node:http';

/**
 * The host's redirect URI: a loopback server on `port` that hands each
 * return (`/callback`) to the test as the URL the browser asked for, and holds
 * the answer until the test calls `release`. Until then the browser still
 * shows the page it is leaving, so the test can read what that page said as
 * it left.
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
    const release = () => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>Signed in</title><p id="back">Back in the host. You can close this tab.</p>');
    };
    const waiter = waiting.shift();
    if (waiter) waiter({ url, release }); else unclaimed.push({ url, release });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve({
      /** The next return to arrive, as `{ url, release }`. */
      next: () => (unclaimed.length ? Promise.resolve(unclaimed.shift()) : new Promise((r) => waiting.push(r))),
      stop: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
    }));
  });
}

const SHOWN = 'returning-line:';

/**
 * Watches the consent page's "returning" line. The page logs each text the
 * line shows to its console, which Playwright hears as an event: the page
 * cannot be asked while it leaves (Chromium holds DevTools calls to a frame
 * whose navigation is in flight), but it can tell. The host holds its answer
 * (see `startReturnServer`), so the page stays alive until the event is in.
 * Returns `shown()`: waits for the first text (10 s at most), then lists all.
 */
export async function watchReturning(page) {
  const texts = [];
  let heard = null;
  page.on('console', (m) => {
    if (m.type() !== 'log' || !m.text().startsWith(SHOWN)) return;
    texts.push(m.text().slice(SHOWN.length));
    heard?.();
  });
  await page.evaluate((prefix) => {
    const line = document.getElementById('grants-returning');
    new MutationObserver(() => { if (!line.hidden) console.log(prefix + line.textContent); })
      .observe(line, { childList: true, characterData: true, subtree: true, attributes: true });
  }, SHOWN);
  return async () => {
    if (texts.length === 0) {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the returning line was never shown')), 10000);
        heard = () => { clearTimeout(timer); resolve(); };
      });
    }
    return [...texts];
  };
}
