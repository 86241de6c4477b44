// Vite builds the front end into ui/dist, which `attractor serve` serves.
// `npm run dev` proxies /api to a running `attractor serve` (port 7300, or
// ATTRACTOR_API=http://host:port) so the UI reloads live against real data.
import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";
import type { Plugin } from "vite";

const api = process.env.ATTRACTOR_API ?? "http://127.0.0.1:7300";

/**
 * Names ECharts' files in the page (`<link rel="modulepreload">`) though the
 * app imports them only when a chart mounts (components/EChart.tsx): the
 * browser downloads and compiles them alongside the app's own code, off the
 * main thread, and runs them only when a chart asks — after its first frame
 * is on screen (lib/sketch.ts).
 */
function preloadECharts(): Plugin {
  return {
    name: "attractor-preload-echarts",
    apply: "build",
    transformIndexHtml(_html, ctx) {
      const chunks = Object.values(ctx.bundle ?? {}).filter((c) => c.type === "chunk" && !c.isEntry && c.name === "echarts");
      return chunks.map((c) => ({ tag: "link", attrs: { rel: "modulepreload", crossorigin: true, href: `/${c.fileName}` }, injectTo: "head" as const }));
    },
  };
}

export default defineConfig({
  root: import.meta.dirname,
  plugins: [react(), preloadECharts()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
    // The app, React and ECharts in three files (the page names the last two
    // with modulepreload): a cold page downloads and compiles them in
    // parallel instead of one 1 MB file in one go.
    rolldownOptions: {
      output: {
        advancedChunks: {
          groups: [
            { name: "echarts", test: /node_modules[\\/](echarts|zrender|tslib)[\\/]/ },
            { name: "react", test: /node_modules[\\/](react|react-dom|scheduler|@tanstack)[\\/]/ },
          ],
        },
      },
    },
  },
  server: { proxy: { "/api": { target: api, changeOrigin: false } } },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
  },
});
