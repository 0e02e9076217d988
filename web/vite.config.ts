// vite.config.ts - builds the Orrery UI into static/app (served by galaxyd at
// /app/). The task spec schema is copied next to the bundle as
// /app/task.schema.json so the designer form is driven by the same schema
// halleyd validates against, and compiled by Ajv into the designer's
// validator (the module "virtual:task-validator", tools/task-validator.mjs).
// Every build first checks that src/api-types.ts is what static/openapi.json
// gives (tools/api-types.mjs).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';
import { check as checkApiTypes } from './tools/api-types.mjs';
import { generate as taskValidatorCode } from './tools/task-validator.mjs';

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

const VALIDATOR = 'virtual:task-validator';

function taskValidator(): Plugin {
  return {
    name: 'orrery-task-validator',
    resolveId: (id) => (id === VALIDATOR ? `\0${VALIDATOR}` : undefined),
    load(id) {
      if (id !== `\0${VALIDATOR}`) return undefined;
      this.addWatchFile(schemaPath);
      return taskValidatorCode();
    },
  };
}

function apiTypes(): Plugin {
  return {
    name: 'orrery-api-types',
    apply: 'build',
    async buildStart() {
      try {
        await checkApiTypes();
      } catch (e) {
        this.error((e as Error).message);
      }
    },
  };
}

export default defineConfig({
  base: '/app/',
  plugins: [apiTypes(), taskSchema(), taskValidator()],
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../static/app',
    emptyOutDir: true,
    chunkSizeWarningLimit: 600,
  },
});
