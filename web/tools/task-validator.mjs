// task-validator.mjs - the task spec validator of the designer, compiled
// ahead of time: Ajv reads schema/task.schema.json (the schema halleyd
// validates against) and writes the validating function as plain JavaScript
// (Ajv's standalone code), which the console bundles. Nothing is compiled in
// the browser, so the console's Content-Security-Policy (no eval) holds.
// vite.config.ts serves the code as the module "virtual:task-validator".
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import standaloneCode from 'ajv/dist/standalone/index.js';

export const schemaPath = fileURLToPath(new URL('../../schema/task.schema.json', import.meta.url));

/** The ES module source: `export default validate` (errors in validate.errors). */
export function generate() {
  const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
  const ajv = new Ajv2020({
    allErrors: true, // every problem, not the first: the form shows each field's
    messages: false, // the console words its own messages (schema.ts)
    code: { source: true, esm: true, lines: false },
  });
  let code = standaloneCode(ajv, ajv.compile(schema));
  // The code requires Ajv's run-time helpers (CommonJS, such as ucs2length
  // for minLength); the console is ES modules: import them. Whether a
  // bundler gives a CommonJS module's exports.default or its exports as the
  // default export, the helper is found.
  const imports = [];
  code = code.replace(/require\("(ajv\/dist\/runtime\/\w+)"\)\.default/g, (_, mod) => {
    const id = `runtime${imports.length}`;
    imports.push(`import * as ${id} from "${mod}.js";`);
    return `(${id}.default.default ?? ${id}.default)`;
  });
  if (/\brequire\(/.test(code)) throw new Error('task-validator: the compiled validator still requires a module');
  return `${imports.join('\n')}\n${code}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(generate());
