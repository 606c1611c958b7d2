// Builds the renderer into dist/renderer with relative asset paths, so the same files load
// from file:// in Electron and from the server's `/` in web mode.
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: 'renderer',
  base: './',
  plugins: [react()],
  build: {
    outDir: '../dist/renderer',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    chunkSizeWarningLimit: 800,
  },
  server: {
    host: '127.0.0.1',
    // `npm run serve` on 8787 answers /v2 during renderer development.
    proxy: { '/v2': 'http://127.0.0.1:8787' },
  },
});
