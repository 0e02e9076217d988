// check-openapi.mjs - validates galaxyd's OpenAPI document against the
// OpenAPI 3.0 schema (swagger-parser's validator: the official JSON Schema
// of the specification, resolvable $refs, path parameters declared), then
// checks here what it leaves out: every operationId used once. Exit 0 when
// valid.
//
//   node web/tools/check-openapi.mjs static/openapi.json
import SwaggerParser from '@apidevtools/swagger-parser';

const path = process.argv[2];
if (!path) {
  console.error('usage: check-openapi.mjs OPENAPI_JSON');
  process.exit(2);
}
try {
  const api = await SwaggerParser.validate(path);
  let ops = 0;
  const seen = new Map();
  for (const [p, item] of Object.entries(api.paths)) {
    for (const m of ['get', 'put', 'post', 'delete', 'patch']) {
      if (!item[m]) continue;
      ops++;
      const id = item[m].operationId;
      if (id && seen.has(id)) throw new Error(`operationId ${id} used by ${seen.get(id)} and ${m.toUpperCase()} ${p}`);
      seen.set(id, `${m.toUpperCase()} ${p}`);
    }
  }
  console.log(`${path}: a valid OpenAPI ${api.openapi} document, ${ops} operations`);
} catch (e) {
  console.error(`${path}: not a valid OpenAPI document: ${e.message}`);
  process.exit(1);
}
