// Evaluates JSONata expressions with the jsonata npm package (the reference JSONata Step Functions follows),
// for ora's conformance suite to check its expected outputs.
//
// Usage: node jsonata.mjs < request.json > response.json
// Request: {"cases":[{"name":"...","expression":"...","input":<json>,"stateName":"..."}]}
// Response: {"results":{"<name>":{"value":<json>} | {"error":"..."}}}
// $states is bound as Step Functions binds it in a Pass state: {"input": <input>, "context": {"State": {"Name"}}}.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const jsonata = (await import(path.resolve(here, '../../../../tools/node_modules/jsonata/jsonata.js'))).default;

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const results = {};
for (const c of request.cases) {
  try {
    const v = await jsonata(c.expression).evaluate(c.input, { states: { input: c.input, context: { State: { Name: c.stateName } } } });
    results[c.name] = { value: v === undefined ? null : JSON.parse(JSON.stringify(v)) };
  } catch (err) {
    results[c.name] = { error: String(err && err.message) };
  }
}
process.stdout.write(JSON.stringify({ results }));
