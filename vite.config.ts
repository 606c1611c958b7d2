// Builds the renderer into dist/renderer with relative asset paths, so the same files load
// from file:// in Electron and from the server's `/` in web mode.
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

// index.html's CSP meta is the Electron window's (connect-src 'none'); the dev server is web
// mode, where the page calls /v2 itself (and Vite's HMR socket): 'self' there, as
// server/http/web-ui.ts serves it. The build keeps the meta as written.
const devConnectSelf: Plugin = {
  name: 'dev-connect-self',
  apply: 'serve',
  transformIndexHtml: (html) => html.replace("connect-src 'none'", "connect-src 'self'"),
};

export default defineConfig({
  root: 'renderer',
  base: './',
  plugins: [react(), devConnectSelf],
  build: {
    outDir: '../dist/renderer',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
  },
  server: {
    host: '127.0.0.1',
    // `npm run serve` on 8787 answers /v2 during renderer development.
    proxy: { '/v2': 'http://127.0.0.1:8787' },
  },
});
