// Electron's security checklist, applied in one place (each item is answered in main/README.md):
// isolation and sandbox on every window, no navigation, no new windows, no webviews,
// no permissions, a CSP on every response, and a trusted-sender check for IPC.
import type { BrowserWindowConstructorOptions, Session, WebContents, WebFrameMain } from 'electron';
import { isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The window's policy, sent as a header on every response and written as the <meta> of
// renderer/index.html (Electron may not deliver headers for file:// pages: the meta is what
// surely applies). `connect-src 'none'`: the renderer makes no requests of its own, the main
// process makes every API call. Web mode serves the same index.html with `connect-src 'self'`
// instead (server/http/web-ui.ts): there the page calls the API itself. main/README.md quotes
// this value; test/unit/csp.test.ts holds the three in agreement.
export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function secureWebPreferences(preload: string): NonNullable<BrowserWindowConstructorOptions['webPreferences']> {
  return {
    preload,
    contextIsolation: true,
    sandbox: true,
    nodeIntegration: false,
    nodeIntegrationInWorker: false,
    nodeIntegrationInSubFrames: false,
    webSecurity: true,
    allowRunningInsecureContent: false,
    experimentalFeatures: false,
    webviewTag: false,
    navigateOnDragDrop: false,
    spellcheck: false,
    safeDialogs: true,
  };
}

/** The renderer's index.html as a file URL; only frames showing it may use IPC. */
export function appUrl(rendererIndex: string): string {
  return pathToFileURL(rendererIndex).href;
}

export function isTrustedFrame(frame: WebFrameMain | null, rendererIndex: string): boolean {
  if (!frame || frame.parent) return false; // top-level frame only
  try {
    const u = new URL(frame.url);
    u.hash = '';
    return u.href === appUrl(rendererIndex);
  } catch {
    return false;
  }
}

/**
 * True for a URL the window may load: a file inside the renderer's folder (dist/renderer, not
 * any other file on the disk), data: and blob: (images the page makes), devtools:.
 */
export function allowedRequest(url: string, rendererDir: string): boolean {
  if (url.startsWith('devtools://') || url.startsWith('data:') || url.startsWith('blob:')) return true;
  if (!url.startsWith('file:')) return false;
  let path: string;
  try {
    path = fileURLToPath(url); // refuses encoded slashes; resolves `..` segments
  } catch {
    return false;
  }
  const rel = relative(resolve(rendererDir), resolve(path));
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

export function hardenSession(ses: Session, rendererDir: string): void {
  ses.setPermissionRequestHandler((_wc, permission, cb) => cb(permission === 'clipboard-sanitized-write'));
  ses.setPermissionCheckHandler((_wc, permission) => permission === 'clipboard-sanitized-write');
  ses.webRequest.onHeadersReceived((details, cb) => {
    cb({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CSP] } });
  });
  // No remote content, and no file outside the renderer's folder: the window only ever loads
  // the app's own files.
  ses.webRequest.onBeforeRequest((details, cb) => cb({ cancel: !allowedRequest(details.url, rendererDir) }));
}

/**
 * The subscription import links of the client view (v2rayNG, Hiddify, sing-box, Clash Meta):
 * the only navigation the window may hand to the system, which opens the app that registered
 * the scheme. Nothing else leaves the window.
 */
export function isImportLink(url: string): boolean {
  return /^(v2rayng:\/\/install-config\?|hiddify:\/\/import\/|sing-box:\/\/import-remote-profile\?|clash:\/\/install-config\?|streisand:\/\/import\/)/.test(url) && url.length <= 4096;
}

export function hardenContents(contents: WebContents, rendererIndex: string, openExternal?: (url: string) => void): void {
  const own = appUrl(rendererIndex);
  contents.on('will-navigate', (e, url) => {
    if (url.split('#')[0] === own) return;
    e.preventDefault();
    if (openExternal && isImportLink(url)) openExternal(url);
  });
  contents.on('will-redirect', (e) => e.preventDefault());
  contents.on('will-attach-webview', (e) => e.preventDefault());
  contents.setWindowOpenHandler(() => ({ action: 'deny' }));
}
