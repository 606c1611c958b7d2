// Electron's security checklist, applied in one place (each item is answered in the README):
// isolation and sandbox on every window, no navigation, no new windows, no webviews,
// no permissions, a CSP on every response, and a trusted-sender check for IPC.
import type { BrowserWindowConstructorOptions, Session, WebContents, WebFrameMain } from 'electron';
import { pathToFileURL } from 'node:url';

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

export function hardenSession(ses: Session): void {
  ses.setPermissionRequestHandler((_wc, permission, cb) => cb(permission === 'clipboard-sanitized-write'));
  ses.setPermissionCheckHandler((_wc, permission) => permission === 'clipboard-sanitized-write');
  ses.webRequest.onHeadersReceived((details, cb) => {
    cb({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CSP] } });
  });
  // No remote content: the window only ever loads the app's own files.
  ses.webRequest.onBeforeRequest((details, cb) => {
    const ok = details.url.startsWith('file://') || details.url.startsWith('devtools://') || details.url.startsWith('data:') || details.url.startsWith('blob:');
    cb({ cancel: !ok });
  });
}

/**
 * The subscription import links of the client view (v2rayNG, Hiddify, sing-box, Clash Meta):
 * the only navigation the window may hand to the system, which opens the app that registered
 * the scheme. Nothing else leaves the window.
 */
export function isImportLink(url: string): boolean {
  return /^(v2rayng:\/\/install-config\?|hiddify:\/\/import\/|sing-box:\/\/import-remote-profile\?|clash:\/\/install-config\?)/.test(url) && url.length <= 4096;
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
