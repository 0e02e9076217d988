// api-types.mjs - web/src/api-types.ts, the TypeScript types of galaxyd's
// REST API, generated from the OpenAPI document galaxyd serves
// (static/openapi.json) by openapi-typescript. The build writes it before
// tsc runs (npm run build, tests/e2e/run.sh), so tsc fails wherever api.ts
// or a page no longer agrees with the document; vite.config.ts checks it is
// current on every vite build. The file is generated, not kept in git.
//
//   node tools/api-types.mjs           write src/api-types.ts (when changed)
//   node tools/api-types.mjs --check   exit 1 when src/api-types.ts is stale
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS from 'openapi-typescript';

export const documentPath = fileURLToPath(new URL('../../static/openapi.json', import.meta.url));
export const typesPath = fileURLToPath(new URL('../src/api-types.ts', import.meta.url));

const HEADER = `// api-types.ts - the types of galaxyd's REST API, generated from
// static/openapi.json by tools/api-types.mjs (openapi-typescript) at build
// time. Do not edit: change the document.

`;

/** The text of api-types.ts for the document as it is now. */
export async function generate() {
  const doc = JSON.parse(readFileSync(documentPath, 'utf8'));
  // Objects the document leaves free (no properties) hold anything: unknown.
  return openapiTS(doc, { commentHeader: HEADER, emptyObjectsUnknown: true, silent: true });
}

/** Throws when the checked-in api-types.ts differs from generate(). */
export async function check() {
  let have = '';
  try {
    have = readFileSync(typesPath, 'utf8');
  } catch {
    // missing: stale
  }
  if (have !== (await generate()))
    throw new Error('web/src/api-types.ts does not match static/openapi.json: run `npm run api-types` in web/');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === '--check') {
    try {
      await check();
    } catch (e) {
      console.error(e.message);
      process.exit(1);
    }
  } else {
    const text = await generate();
    let have = null;
    try {
      have = readFileSync(typesPath, 'utf8');
    } catch {
      // not written yet
    }
    if (have !== text) writeFileSync(typesPath, text);
  }
}
