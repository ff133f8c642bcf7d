import react from '@vitejs/plugin-react'
import { defineConfig } from 'vite'

// The console is served by `strand server` at / from the files built into
// ../dist (embedded in the Go binary); `npm run dev` proxies /api to a
// server running locally.
export default defineConfig({
  base: '/',
  plugins: [react()],
  build: {
    outDir: '../dist',
    emptyOutDir: true,
    // Hashed names only: the Go handler marks /assets/ as immutable.
    assetsDir: 'assets',
    sourcemap: false,
    // ECharts (about 520 kB, 180 kB gzipped) is a chunk of its own, loaded
    // with the first chart.
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: {
      '/api': 'http://127.0.0.1:8233',
    },
  },
})
