// sbx code-interpreter driver for JavaScript (and TypeScript) contexts.
//
// Started by the Go server (internal/agent/interpreter) as the sandbox user.
// One persistent vm context holds the state: top-level let/const/function
// declarations and globals survive between executions, like a REPL. The
// completion value of a cell is its main result (text/plain, util.inspect).
// Promises are awaited. Code with a top-level await runs in an async wrapper.
// TypeScript is transpiled with the `typescript` module when it can be
// required; otherwise it runs as JavaScript.
//
// Same line protocol as kernel_driver.py: requests on stdin, events on fd 3.
// SIGINT interrupts a running cell (vm breakOnSigint) and is ignored between cells.
'use strict'
const fs = require('fs')
const vm = require('vm')
const util = require('util')
const readline = require('readline')
const { Console } = require('console')
const { Writable } = require('stream')
const path = require('path')
const { createRequire } = require('module')

const lang = process.argv[2] || 'javascript'
const send = (o) => fs.writeSync(3, JSON.stringify(o) + '\n')
let silent = false

function sink (type) {
  return new Writable({
    write (chunk, _enc, cb) {
      if (!silent) send({ type, text: chunk.toString() })
      cb()
    }
  })
}

const out = sink('stdout')
const err = sink('stderr')
const sandbox = {
  console: new Console({ stdout: out, stderr: err, colorMode: false }),
  process, require: createRequire(path.join(process.cwd(), 'cell.js')), Buffer, URL, URLSearchParams, TextEncoder, TextDecoder,
  setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, clearImmediate,
  queueMicrotask, structuredClone, fetch: globalThis.fetch, AbortController
}
sandbox.global = sandbox
const context = vm.createContext(sandbox)
process.stdout.write = (c) => out.write(c)
process.stderr.write = (c) => err.write(c)
process.on('SIGINT', () => {})

let ts = null
if (lang === 'typescript') {
  try { ts = require('typescript') } catch (_) { ts = null }
}

function transpile (code) {
  if (!ts) return code
  return ts.transpileModule(code, { compilerOptions: { target: 'ES2022', module: 'commonjs' } }).outputText
}

function compile (code) {
  try {
    return new vm.Script(code, { filename: 'cell.js' })
  } catch (e) {
    if (e instanceof SyntaxError && /await/.test(e.message)) {
      return new vm.Script('(async () => {\n' + code + '\n})()', { filename: 'cell.js' })
    }
    throw e
  }
}

function display (value) {
  if (value === undefined) return
  send({ type: 'result', main: true, data: { 'text/plain': util.inspect(value, { colors: false }) } })
}

function report (e) {
  if (e === null || typeof e !== 'object') e = { name: 'Error', message: String(e), stack: String(e) }
  const name = e.name || 'Error'
  send({ type: 'error', name, value: String(e.message ?? ''), traceback: String(e.stack || `${name}: ${e.message}`).split('\n') })
}

let count = 0
async function execute (req) {
  silent = !!req.silent
  if (!silent) send({ type: 'count', count: ++count })
  try {
    let v = compile(transpile(req.code || '')).runInContext(context, { breakOnSigint: true, displayErrors: false })
    if (v && typeof v.then === 'function') v = await v
    if (!silent) display(v)
  } catch (e) {
    if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') e = { name: 'KeyboardInterrupt', message: 'execution interrupted', stack: 'KeyboardInterrupt: execution interrupted' }
    report(e)
  }
  silent = false
  send({ type: 'done' })
}

const rl = readline.createInterface({ input: process.stdin })
const queue = []
let busy = false
async function pump () {
  if (busy) return
  busy = true
  while (queue.length) await execute(queue.shift())
  busy = false
  if (closed) process.exit(0)
}
let closed = false
rl.on('line', (line) => {
  const req = JSON.parse(line)
  if (req.op === 'execute') { queue.push(req); pump() }
})
rl.on('close', () => { closed = true; if (!busy) process.exit(0) })
send({ type: 'ready' })
