// task-validator.d.ts - the type of the module "virtual:task-validator": the
// task spec validator that Ajv compiles from schema/task.schema.json at build
// time (tools/task-validator.mjs, served by vite.config.ts).
declare module 'virtual:task-validator' {
  /** One problem, as Ajv reports it (messages are the console's own). */
  export interface SchemaError {
    instancePath: string; // JSON Pointer to the value: "/retries/max"
    schemaPath: string; // "#/properties/retries/properties/max/maximum"
    keyword: string;
    params: Record<string, unknown>;
  }
  interface Validate {
    (data: unknown): boolean;
    errors?: SchemaError[] | null;
  }
  const validate: Validate;
  export default validate;
}
