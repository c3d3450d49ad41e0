// End-to-end: a third round of E2B's own SDK tests (e2b-dev/code-interpreter
// js/tests and e2b-dev/E2B packages/js-sdk/tests), ported with their
// assertions unchanged where the target is local, and run with the official
// SDKs against a real `sbx serve` (test/e2e/daemon/run.sh). One
// code-interpreter sandbox made with E2B's env-var fixture serves every
// code-interpreter case that does not need a sandbox of its own. Left out:
// cases that need the internet (`npm:is-odd`), the deno kernel (not in the
// template), E2B's charts/* (ported to interpreter.test.mjs, "charts"),
// and the SDK-internal unit tests
// (commandHandle, watchHandle, entryInfo, getLifecycle), which need no sandbox.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { Sandbox, Template } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'

import { runtime, make } from './e2bfixture.mjs'

let ci // the shared code-interpreter sandbox, with E2B's TEST_ENV_VAR
before(async () => {
  ci = await make({ envs: { TEST_ENV_VAR: 'supertest' } }, CodeSandbox, 'code-interpreter-v1')
})

test(`${runtime}: code runs as root in /home/user; commands as user (E2B's template; contexts.test.ts cwd /root)`, async () => {
  // E2B's code-interpreter template starts its Jupyter server with sudo
  // (template.py: set_start_cmd("sudo /root/.jupyter/start-up.sh")) and
  // sets the sandbox user to `user` for everything else.
  assert.equal((await ci.runCode('import os; os.getuid()')).text, '0')
  assert.equal((await ci.runCode('process.getuid()', { language: 'js' })).text, '0')
  assert.equal((await ci.commands.run('whoami')).stdout, 'user\n')
  // contexts.test.ts, with E2B's cwd
  const context = await ci.createCodeContext({ language: 'python', cwd: '/root' })
  const contexts = await ci.listCodeContexts()
  const lastContext = contexts[contexts.length - 1]
  assert.equal(lastContext.id, context.id)
  assert.equal(lastContext.language, context.language)
  assert.equal(lastContext.cwd, '/root')
  assert.equal((await ci.runCode('import os; os.getcwd()', { context })).text, '/root')
})

test(`${runtime}: cwd, basic, statefulness, independence of kernels (cwd, basic, statefulness, kernels.test.ts)`, async () => {
  assert.equal((await ci.runCode('from pathlib import Path; print(Path.cwd())', { language: 'python' })).logs.stdout.join().trim(), '/home/user')
  assert.equal((await ci.runCode('process.cwd()', { language: 'js' })).text, '/home/user')
  assert.equal((await ci.runCode('process.cwd()', { language: 'ts' })).text, '/home/user')
  assert.equal((await ci.runCode('getwd()', { language: 'r' })).results[0]?.text.trim(), '[1] "/home/user"')
  assert.equal((await ci.runCode('System.getProperty("user.dir")', { language: 'java' })).results[0]?.text.trim(), '/home/user')
  // every kernel lives on with all six up (in 1 GiB the JVM's start took the
  // sandbox to the OOM guard's reserve, which killed the R kernel or the JVM)
  for (const [language, code, want] of [['r', '1+1', '[1] 2'], ['java', '1+1', '2'], ['python', '1+1', '2']]) {
    const ex = await ci.runCode(code, { language })
    assert.equal(ex.error, undefined, `${language}: ${ex.error?.name}: ${ex.error?.value}`)
    assert.equal(ex.results[0]?.text.trim(), want, language)
  }
  assert.equal((await ci.runCode('x =1; x')).text, '1')
  await ci.runCode('x = 1')
  assert.equal((await ci.runCode('x += 1; x')).text, '2')
  const context = await ci.createCodeContext()
  const output = await ci.runCode('x', { context })
  assert.equal(output.error.value, "name 'x' is not defined")
})

test(`${runtime}: javascript and typescript (languages/js.test.ts)`, async () => {
  assert.equal((await ci.runCode('console.log("Hello, World!")', { language: 'js' })).logs.stdout.join().trim(), 'Hello, World!')
  let result = await ci.runCode(`
    async function main() {
        return 'Hello, World!'
    }

    await main()
    `, { language: 'js' })
  assert.equal(result.results[0].text, 'Hello, World!')
  result = await ci.runCode('\nconst add = (x, y) => x + y;\nadd(1, 2)\n', { language: 'js' })
  assert.equal(result.results[0].text, '3')
  await ci.runCode('const z = 1', { language: 'js' })
  assert.equal((await ci.runCode('z', { language: 'js' })).results[0].text, '1')
  assert.equal((await ci.runCode('process.cwd()', { language: 'js' })).results[0].text, '/home/user')
  const ctx = await ci.createCodeContext({ cwd: '/home', language: 'js' })
  assert.equal((await ci.runCode('process.cwd()', { context: ctx })).results[0].text, '/home')
  result = await ci.runCode('\nfunction subtract(x: number, y: number): number {\n  return x - y;\n}\n\nsubtract(1, 2)\n', { language: 'ts' })
  assert.equal(result.results[0].text, '-1')
})

test(`${runtime}: env vars on the sandbox, per execution, overwritten (env_vars/{python,js,bash}.test.ts)`, async () => {
  assert.equal((await ci.runCode('import os; os.getenv("TEST_ENV_VAR")', { language: 'python' })).results[0]?.text.trim(), 'supertest')
  assert.equal((await ci.runCode('process.env.TEST_ENV_VAR', { language: 'javascript' })).results[0]?.text.trim(), 'supertest')
  assert.equal((await ci.runCode('echo $TEST_ENV_VAR', { language: 'bash' })).logs.stdout[0], 'supertest\n')
  for (const [language, get, orDefault, out] of [
    ['python', 'import os; os.getenv("FOO")', 'import os; os.getenv("FOO", "default")', (r) => r.results[0]?.text.trim()],
    ['javascript', 'process.env.FOO', "process.env.FOO || 'default'", (r) => r.results[0]?.text.trim()],
    ['bash', 'echo $FOO', 'echo ${FOO:-default}', (r) => r.logs.stdout[0]?.trim()],
  ]) {
    assert.equal(out(await ci.runCode(get, { envs: { FOO: 'bar' }, language })), 'bar', language)
    assert.equal(out(await ci.runCode(orDefault, { language })), 'default', language)
  }
  const over = { python: 'import os; os.getenv("TEST_ENV_VAR")', javascript: 'process.env.TEST_ENV_VAR' }
  for (const [language, code] of Object.entries(over)) {
    assert.equal((await ci.runCode(code, { language, envs: { TEST_ENV_VAR: 'overwrite' } })).results[0]?.text.trim(), 'overwrite', language)
    assert.equal((await ci.runCode(code, { language })).results[0]?.text.trim(), 'supertest', language)
  }
  assert.equal((await ci.runCode('echo $TEST_ENV_VAR', { language: 'bash', envs: { TEST_ENV_VAR: 'overwrite' } })).logs.stdout[0], 'overwrite\n')
  assert.equal((await ci.runCode('echo $TEST_ENV_VAR', { language: 'bash' })).logs.stdout[0], 'supertest\n')
})

const plot = `
import matplotlib.pyplot as plt
import numpy as np

x = np.linspace(0, 20, 100)
y = np.sin(x)

plt.plot(x, y)
plt.show()
`

test(`${runtime}: streaming, display data, DataFrame data (streaming, displayData, data.test.ts)`, async () => {
  let out = []
  await ci.runCode('print(1)', { onStdout: (msg) => out.push(msg) })
  assert.equal(out.length, 1)
  assert.equal(out[0].line, '1\n')
  out = []
  await ci.runCode('import sys;print(1, file=sys.stderr)', { onStderr: (msg) => out.push(msg) })
  assert.equal(out.length, 1)
  assert.equal(out[0].line, '1\n')
  out = []
  await ci.runCode(plot + '\nx\n', { onResult: (result) => out.push(result) })
  assert.equal(out.length, 2)
  const image = (await ci.runCode(plot)).results[0]
  assert.ok(image.png)
  assert.ok(image.text)
  // data.test.ts's cell is `pd.DataFrame(...)`: the import is added, as no
  // startup script of E2B's template defines `pd` either (0002_data.py
  // imports `pandas`)
  const execution = await ci.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2, 3]})')
  assert.ok(execution.results[0].data)
})

test(`${runtime}: reconnect with autoPause, then runCode (reconnect.test.ts)`, async () => {
  const sandbox = await CodeSandbox.connect(ci.sandboxId, { timeoutMs: 120_000, autoPause: true })
  assert.equal((await sandbox.runCode('x =1; x')).text, '1')
})

test(`${runtime}: Template.getTags of a built-in template, and of a missing one (tags.test.ts)`, async () => {
  const tags = await Template.getTags('base')
  assert.ok(tags.length >= 1)
  const latest = tags.find((t) => t.tag === 'default') // E2B's name of the default tag
  assert.ok(latest, JSON.stringify(tags))
  assert.ok(latest.buildId)
  assert.ok(latest.createdAt instanceof Date && !Number.isNaN(latest.createdAt.getTime()))
  const name = `nonexistent-${randomUUID()}`
  await assert.rejects(Template.getTags(name), (e) => e.message.includes(`template '${name}' not found`))
})

test(`${runtime}: remove a file, remove a missing file (files/remove.test.ts)`, async () => {
  const sandbox = await make()
  const filename = 'test_remove.txt'
  await sandbox.files.write(filename, 'This file will be removed.')
  await sandbox.files.remove(filename)
  assert.equal(await sandbox.files.exists(filename), false)
  await sandbox.files.remove('non_existing_file.txt')
})
