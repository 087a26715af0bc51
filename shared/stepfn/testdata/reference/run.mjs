// Reference harness: runs Step Functions definitions through aws-local-stepfunctions (npm) in one Node 22
// process, so ora's conformance suite and benchmark can compare against it.
//
// Usage: node run.mjs < request.json > response.json
//
// Request, mode "cases":
//   {"mode":"cases","cases":[{"name":"...","definition":{...},"input":<json>,"tasks":{...}}]}
// Response: {"results":{"<name>":{"status":"SUCCEEDED","output":<json>} | {"status":"FAILED","error":"...","cause":"..."}}}
//
// Request, mode "bench": {"mode":"bench","definition":{...},"input":<json>,"tasks":{...},"n":N}
// Response: {"n":N,"ns_per_op":<number>,"output":<the execution's output>}
//
// Tasks follow ora's tasks format: an object keyed by Task state name, each a list of items consumed in order
// (one per invocation of that state, the last repeating): {"result": <json>} or {"error": "...", "cause": "..."},
// optionally "delay_seconds". Every Task is overridden by state name; Wait states and Retry intervals are
// overridden to zero. A ".waitForTaskToken" task receives context Task.Token and is settled from its item (the
// result as SendTaskSuccess, the error as SendTaskFailure). A plain "arn:aws:states:::lambda:invoke" result is
// wrapped as the Lambda integration's response ({"ExecutedVersion","Payload","StatusCode"}), as AWS returns it.
// An item {"response": <json>} mocks a service integration's whole response and is returned as it is.
// delay_seconds is real time here (kept only for timeout cases, where it exceeds TimeoutSeconds). Definitions
// are validated by the package with its default options.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

const modules = path.resolve(here, '../../../../tools/node_modules');

async function loadLibrary() {
  cacheSchemaValidation();
  return import(path.join(modules, 'aws-local-stepfunctions', 'build', 'main.node.esm.js'));
}

// cacheSchemaValidation makes asl-validator compile its JSON schemas once per process instead of once per
// definition (it builds a new Ajv for every StateMachine, ~75% of the suite's time). The validation itself is
// unchanged: the harness always passes the same validation options, so the formats the first compiled
// validator closes over are the ones every later call would register.
function cacheSchemaValidation() {
  const req = createRequire(path.join(modules, 'asl-validator', 'dist', 'src', 'checks', 'json-schema-errors.js'));
  let ajvModule;
  try {
    ajvModule = req('ajv');
  } catch {
    return; // a different layout: validate uncached
  }
  const Ajv = ajvModule.default || ajvModule;
  const compiled = new Map();
  const validate = Ajv.prototype.validate;
  Ajv.prototype.validate = function (schemaKeyRef, data) {
    if (typeof schemaKeyRef !== 'string') return validate.call(this, schemaKeyRef, data);
    let fn = compiled.get(schemaKeyRef);
    if (!fn) {
      fn = this.getSchema(schemaKeyRef);
      if (!fn) return validate.call(this, schemaKeyRef, data);
      compiled.set(schemaKeyRef, fn);
    }
    const valid = fn(data);
    this.errors = fn.errors;
    return valid;
  };
}

const TASK_TOKEN = 'reference-task-token';
// A request-response lambda:invoke in any partition (aws, aws-cn, aws-us-gov).
const LAMBDA_INVOKE = /^arn:aws(-[a-z]+)*:states:::lambda:invoke$/;

// walk visits every state of a definition, nested Parallel branches and Map processors included.
function walk(definition, visit) {
  for (const [name, state] of Object.entries(definition.States || {})) {
    visit(name, state);
    for (const branch of state.Branches || []) walk(branch, visit);
    if (state.ItemProcessor) walk(state.ItemProcessor, visit);
    if (state.Iterator) walk(state.Iterator, visit);
  }
}

function overridesFor(definition, tasks) {
  const taskResourceLocalHandlers = {};
  const waitTimeOverrides = {};
  const retryIntervalOverrides = {};
  walk(definition, (name, state) => {
    if (state.Retry) retryIntervalOverrides[name] = 0;
    if (state.Type === 'Wait') waitTimeOverrides[name] = 0;
    if (state.Type !== 'Task') return;
    const items = tasks[name] || [];
    let calls = 0;
    const resource = String(state.Resource || '');
    taskResourceLocalHandlers[name] = async () => {
      if (items.length === 0) {
        const err = new Error(`no tasks item for state ${name}`);
        err.name = 'HarnessMissingTask';
        throw err;
      }
      const item = items[Math.min(calls, items.length - 1)];
      calls++;
      if (item.delay_seconds) {
        await new Promise((resolve) => setTimeout(resolve, item.delay_seconds * 1000).unref());
      }
      if (item.error !== undefined) {
        const err = new Error(item.cause ?? '');
        err.name = item.error;
        throw err;
      }
      if (item.response !== undefined) return item.response;
      const result = item.result === undefined ? null : item.result;
      if (LAMBDA_INVOKE.test(resource)) {
        return { ExecutedVersion: '$LATEST', Payload: result, StatusCode: 200 };
      }
      return result;
    };
  });
  return { taskResourceLocalHandlers, waitTimeOverrides, retryIntervalOverrides };
}

function describe(err) {
  // ExecutionError carries the runtime error as its cause; the runtime error's name is the Step Functions
  // error and its cause (or message) the Step Functions cause, as the library's own event log reports them.
  const inner = err && err.name === 'ExecutionError' && err.cause ? err.cause : err;
  const cause = inner && inner.cause !== undefined ? inner.cause : inner && inner.message;
  return { status: 'FAILED', error: String(inner && inner.name), cause: typeof cause === 'string' ? cause : JSON.stringify(cause) };
}

async function runOne(lib, definition, input, tasks) {
  let machine;
  try {
    machine = new lib.StateMachine(definition);
  } catch (err) {
    return { status: 'INVALID', error: 'InvalidDefinition', cause: String(err && err.message) };
  }
  try {
    const execution = machine.run(input, {
      overrides: overridesFor(definition, tasks || {}),
      context: { Task: { Token: TASK_TOKEN } },
    });
    const output = await execution.result;
    return { status: 'SUCCEEDED', output: output === undefined ? null : output };
  } catch (err) {
    if (err && err.name === 'ExecutionTimeoutError') {
      return { status: 'TIMED_OUT', error: 'States.Timeout', cause: '' };
    }
    return describe(err);
  }
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function main() {
  const request = await readStdin();
  const lib = await loadLibrary();
  if (request.mode === 'bench') {
    const n = request.n || 1;
    const overrides = () => overridesFor(request.definition, request.tasks || {});
    const machine = new lib.StateMachine(request.definition);
    // One untimed run checks the definition and warms the JIT.
    const output = await machine.run(request.input, { overrides: overrides() }).result;
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      await machine.run(request.input, { overrides: overrides() }).result;
    }
    const elapsed = Number(process.hrtime.bigint() - start);
    process.stdout.write(JSON.stringify({ n, ns_per_op: elapsed / n, output }));
    return;
  }
  const results = {};
  await Promise.all(
    (request.cases || []).map(async (c) => {
      results[c.name] = await runOne(lib, c.definition, c.input, c.tasks);
    }),
  );
  process.stdout.write(JSON.stringify({ results }));
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(String((err && err.stack) || err) + '\n');
    process.exit(1);
  },
);
