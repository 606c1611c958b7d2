// Runs the real preload bundle (dist/preload/index.cjs) in a window's page, as Electron's
// sandboxed preload runs: at document start, in the top frame only (nodeIntegrationInSubFrames
// is off), with a `require` that offers only `electron`'s contextBridge and ipcRenderer.
//   ipcRenderer.invoke  -> the page binding IPC_BINDING -> ipcMain.handle in main (with the
//                          calling frame, so main's sender check sees the real frame URL)
//   webContents.send    -> page.evaluate of IPC_DELIVER -> ipcRenderer.on listeners
// Chromium gives no second JavaScript world to a page script here, so contextBridge copies
// the API onto `window` as a frozen object of plain functions, as Electron's bridge does
// (the transport binding stays reachable to page scripts; main's checks are the defence
// that matters and they are what the desktop specs exercise).

export const IPC_BINDING = '__electronStandInInvoke';
export const IPC_DELIVER = '__electronStandInDeliver';

export function preloadInitScript(source: string, file: string): string {
  return `(() => {
  if (window.top !== window) return;
  const BINDING = ${JSON.stringify(IPC_BINDING)};
  const listeners = new Map();
  const ipcRenderer = {
    invoke(channel, ...args) {
      const fn = window[BINDING];
      if (typeof fn !== 'function') return Promise.reject(new Error('IPC transport is not installed'));
      return fn(String(channel), args);
    },
    on(channel, listener) {
      if (!listeners.has(channel)) listeners.set(channel, new Set());
      listeners.get(channel).add(listener);
      return ipcRenderer;
    },
    once(channel, listener) {
      const wrapped = (...a) => { ipcRenderer.removeListener(channel, wrapped); listener(...a); };
      return ipcRenderer.on(channel, wrapped);
    },
    removeListener(channel, listener) {
      listeners.get(channel)?.delete(listener);
      return ipcRenderer;
    },
    removeAllListeners(channel) {
      listeners.delete(channel);
      return ipcRenderer;
    },
  };
  Object.defineProperty(window, ${JSON.stringify(IPC_DELIVER)}, {
    value: (channel, args) => {
      for (const l of [...(listeners.get(channel) ?? [])]) {
        try { l({ sender: ipcRenderer }, ...args); } catch (e) { console.error(e); }
      }
    },
  });
  // Electron's bridge copies values across worlds: functions become callable proxies,
  // objects are copied and frozen.
  const copy = (v) => {
    if (typeof v === 'function') return (...a) => v(...a);
    if (Array.isArray(v)) return Object.freeze(v.map(copy));
    if (v && typeof v === 'object') {
      const o = {};
      for (const k of Object.keys(v)) o[k] = copy(v[k]);
      return Object.freeze(o);
    }
    return v;
  };
  const contextBridge = {
    exposeInMainWorld(key, api) {
      if (Object.prototype.hasOwnProperty.call(window, key)) throw new Error('Cannot bind an API on top of an existing property on the window object');
      Object.defineProperty(window, key, { value: copy(api), enumerable: true });
    },
  };
  const require = (name) => {
    if (name === 'electron') return { contextBridge, ipcRenderer };
    throw new Error('module not found: ' + name + ' (a sandboxed preload may only require electron)');
  };
  const module = { exports: {} };
  (function (exports, require, module, __filename, __dirname) {
${source}
  }).call(module.exports, module.exports, require, module, ${JSON.stringify(file)}, '.');
})();
//# sourceURL=${pathUrl(file)}`;
}

function pathUrl(file: string): string {
  return 'file://' + file.split('/').map(encodeURIComponent).join('/');
}
