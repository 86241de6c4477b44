// Vite builds the front end into ui/dist, which `attractor serve` serves.
// `npm run dev` proxies /api to a running `attractor serve` (port 7300, or
// ATTRACTOR_API=http://host:port) so the UI reloads live against real data.
import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

const api = process.env.ATTRACTOR_API ?? "http://127.0.0.1:7300";

export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, chunkSizeWarningLimit: 1500 },
  server: { proxy: { "/api": { target: api, changeOrigin: false } } },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
  },
});
