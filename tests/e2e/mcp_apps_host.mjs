// The host side of an MCP Apps view, as a chat client runs it, for the browser
// tests: the official `@modelcontextprotocol/ext-apps` AppBridge in a page,
// the view in a sandboxed iframe under the extension's default CSP, and the
// view's tool calls handed to the test (which makes them with the official
// MCP client against the real app). Bundled once by esbuild for the page.
import { build } from 'esbuild';
import path from 'node:path';
import { E2E_DIR } from './lib.mjs';

// The page half. `window.hostCallTool` is exposed by the test (Playwright).
const PAGE_ENTRY = `
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

// The extension's default policy for a view that declares no csp.
const CSP = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; " +
  "img-src 'self' data:; media-src 'self' data:; connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'self'";

window.host = { calls: [], sizes: [], initialized: false, echo: false };

window.mountView = async ({ html, tool, args, result, theme }) => {
  // One view at a time: the last one's bridge stops listening as it goes.
  await window.host.bridge?.close();
  document.getElementById('slot').replaceChildren();
  const iframe = document.createElement('iframe');
  iframe.id = 'view';
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.width = '900px';
  iframe.style.height = '600px';
  document.getElementById('slot').append(iframe);

  const bridge = new AppBridge(null, { name: 'a2app-e2e-host', version: '1.0.0' },
    { serverTools: {}, serverResources: {} },
    { hostContext: { theme, toolInfo: { tool: { name: tool, inputSchema: { type: 'object' } } } } });
  bridge.oncalltool = async (params) => {
    window.host.calls.push(params);
    const result = await window.hostCallTool(params);
    // Some hosts also announce a call the view made as tool-input and tool-result.
    if (window.host.echo) {
      await bridge.sendToolInput({ arguments: params.arguments });
      await bridge.sendToolResult(result);
    }
    return result;
  };
  bridge.onsizechange = (size) => { window.host.sizes.push(size); };
  const ready = new Promise((resolve) => { bridge.oninitialized = resolve; });
  // As a host does: listen first, then load the view, whose first word is ui/initialize.
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html.replace('<head>', '<head><meta http-equiv="Content-Security-Policy" content="' + CSP + '">');
  await ready;
  window.host.initialized = true;
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  window.host.bridge = bridge;
};
`;

/** The page's script: AppBridge and the mount function, as one IIFE. */
export async function hostScript() {
  const out = await build({
    stdin: { contents: PAGE_ENTRY, resolveDir: E2E_DIR, sourcefile: 'host-entry.mjs' },
    bundle: true,
    format: 'iife',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
    absWorkingDir: path.resolve(E2E_DIR),
  });
  return out.outputFiles[0].text;
}
