// vite.config.ts - builds the Orrery UI into static/app (served by galaxyd at
// /app/). The task spec schema is copied next to the bundle as
// /app/task.schema.json so the designer form is driven by the same schema
// halleyd validates against.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

const schemaPath = fileURLToPath(new URL('../schema/task.schema.json', import.meta.url));

function taskSchema(): Plugin {
  return {
    name: 'orrery-task-schema',
    generateBundle() {
      const text = readFileSync(schemaPath, 'utf8');
      JSON.parse(text); // fail the build on a broken schema
      this.emitFile({ type: 'asset', fileName: 'task.schema.json', source: text });
    },
    configureServer(server) {
      server.middlewares.use('/app/task.schema.json', (_req, res) => {
        res.setHeader('Content-Type', 'application/json');
        res.end(readFileSync(schemaPath, 'utf8'));
      });
    },
  };
}

export default defineConfig({
  base: '/app/',
  plugins: [taskSchema()],
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../static/app',
    emptyOutDir: true,
    chunkSizeWarningLimit: 600,
  },
});
