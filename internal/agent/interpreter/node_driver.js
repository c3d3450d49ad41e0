// sbx code-interpreter driver for JavaScript (and TypeScript) contexts.
//
// Started by the Go server (internal/agent/interpreter) as the sandbox user.
// One persistent vm context holds the state: top-level let/const/function
// declarations and globals survive between executions, like a REPL. The
// completion value of a cell is its main result (text/plain, util.inspect).
// Promises are awaited. Code with a top-level await runs in an async wrapper
// whose last expression is its value and whose top-level variables become
// the context's (rewritten with the tsc parser when it is installed).
// TypeScript is transpiled per cell with the `typescript` module (Debian's
// node-typescript): types are erased, not checked (as Deno's kernel does);
// a syntax error is a SyntaxError naming the TS diagnostic. Without the
// module a TypeScript context fails to start.
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
sandbox.__sbx_default = (m) => (m && m.__esModule ? m.default : m) // see replModules
const context = vm.createContext(sandbox)
process.stdout.write = (c) => out.write(c)
process.stderr.write = (c) => err.write(c)
process.on('SIGINT', () => {})

// typescript is the tsc module, loaded when first needed (it costs a
// javascript context some 100 MB): at start for typescript, else by the
// first cell with import/export or a top-level await. null: not installed.
let tsModule
function typescript () {
  if (tsModule === undefined) {
    try { tsModule = require('typescript') } catch (_) { tsModule = null }
  }
  return tsModule
}
if (lang === 'typescript' && !typescript()) {
  send({ type: 'fatal', error: 'typescript contexts need the typescript module (Debian: node-typescript)' })
  process.exit(1)
}

const tsOptions = { target: 'ES2022', module: 'commonjs', esModuleInterop: true, sourceMap: false }

// transpile erases a TypeScript cell's types (after replModules).
function transpile (code) {
  if (lang !== 'typescript' && !/\b(import|export)\b/.test(code)) return code
  const ts = typescript()
  if (!ts) return code
  code = replModules(ts, code)
  if (lang !== 'typescript') return code
  const r = ts.transpileModule(code, { reportDiagnostics: true, compilerOptions: tsOptions })
  const bad = (r.diagnostics || []).find((d) => d.category === ts.DiagnosticCategory.Error)
  if (bad) throw tsError(ts, bad)
  return r.outputText
}

// replModules turns a cell's import and export declarations into what a
// REPL needs: imports become require() bound to the imported names (which
// later cells see), export keywords go. tsc's own module output would bind
// them to hidden names and drop unused ones.
function replModules (ts, code) {
  const kind = lang === 'typescript' ? ts.ScriptKind.TS : ts.ScriptKind.JS
  const sf = ts.createSourceFile('cell.ts', code, ts.ScriptTarget.ES2022, true, kind)
  const edits = []
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st)) {
      edits.push([st.getStart(sf), st.end, importCode(ts, st, sf)])
    } else if (ts.isExportDeclaration(st)) {
      edits.push([st.getStart(sf), st.end, st.moduleSpecifier ? `void require(${st.moduleSpecifier.getText(sf)});` : ''])
    } else if (ts.isExportAssignment(st)) {
      edits.push([st.getStart(sf), st.end, st.expression.getText(sf) + ';'])
    } else {
      for (const m of st.modifiers || []) {
        if (m.kind === ts.SyntaxKind.ExportKeyword || m.kind === ts.SyntaxKind.DefaultKeyword) edits.push([m.getStart(sf), m.end, ''])
      }
    }
  }
  return applyEdits(code, edits)
}

function importCode (ts, st, sf) {
  const req = `require(${st.moduleSpecifier.getText(sf)})`
  const c = st.importClause
  if (!c) return 'void ' + req + ';'
  if (c.isTypeOnly) return ''
  const out = []
  if (c.name) out.push(`const ${c.name.text} = __sbx_default(${req});`)
  const b = c.namedBindings
  if (b && ts.isNamespaceImport(b)) out.push(`const ${b.name.text} = ${req};`)
  if (b && ts.isNamedImports(b)) {
    const els = b.elements.filter((e) => !e.isTypeOnly).map((e) => e.propertyName ? `${e.propertyName.text}: ${e.name.text}` : e.name.text)
    if (els.length) out.push(`const { ${els.join(', ')} } = ${req};`)
  }
  return out.join(' ')
}

// applyEdits replaces [start, end) ranges of code, last first.
function applyEdits (code, edits) {
  for (const [start, end, text] of edits.sort((a, b) => b[0] - a[0])) code = code.slice(0, start) + text + code.slice(end)
  return code
}

function tsError (ts, d) {
  const msg = `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`
  const e = new SyntaxError(msg)
  if (d.file && d.start !== undefined) {
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start)
    e.stack = `SyntaxError: ${msg}\n    at cell.ts:${line + 1}:${character + 1}`
  }
  return e
}

function compile (code) {
  try {
    return new vm.Script(code, { filename: 'cell.js' })
  } catch (e) {
    if (e instanceof SyntaxError && /await/.test(e.message)) {
      return new vm.Script(asyncCell(code), { filename: 'cell.js' })
    }
    throw e
  }
}

// asyncCell wraps a cell with a top-level await in an async function. With
// the tsc parser at hand, the top-level variables it declares become the
// context's (plain assignments, which make globals in sloppy code) and its
// last expression is returned, so that `const a = await f()` and `await f()`
// behave as in a REPL.
function asyncCell (code) {
  const ts = typescript()
  if (!ts) return '(async () => {\n' + code + '\n})()'
  const sf = ts.createSourceFile('cell.js', code, ts.ScriptTarget.ES2022, true, ts.ScriptKind.JS)
  const edits = []
  for (const st of sf.statements) {
    if (ts.isVariableStatement(st) && st.declarationList.declarations.every((d) => ts.isIdentifier(d.name))) {
      const parts = st.declarationList.declarations.map((d) =>
        `${d.name.text} = ${d.initializer ? '(' + d.initializer.getText(sf) + ')' : 'undefined'}`)
      edits.push([st.getStart(sf), st.end, `void (${parts.join(', ')});`])
    }
  }
  const last = sf.statements[sf.statements.length - 1]
  if (last && ts.isExpressionStatement(last)) {
    edits.push([last.getStart(sf), last.end, `return (${last.expression.getText(sf)});`])
  }
  return '(async () => {\n' + applyEdits(code, edits) + '\n})()'
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
