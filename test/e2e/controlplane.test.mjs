// End-to-end: E2B's control-plane answers at their edges, with the official
// e2b SDK and the e2b CLI (@e2b/cli) against a real `sbx serve`: setTimeout
// past the longest timeout (E2B clamps it, 204), the list filters (template
// by alias, startedAfter at-or-after, a repeated state parameter as the
// Python SDK sends it, the v1 list of running sandboxes only), a paused
// sandbox's endAt (when it was paused), and the route
// `e2b template publish` calls. Run through
// test/e2e/daemon/run.sh runsc test/e2e/controlplane.test.mjs (pause needs
// runsc's memory checkpoints; the rest runs on any runtime).
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox } from 'e2b'

import { runtime, make } from './e2bfixture.mjs'

const api = process.env.E2B_API_URL
const key = process.env.E2B_API_KEY
const cli = join(dirname(fileURLToPath(import.meta.url)), 'node_modules/@e2b/cli/dist/index.js')
const home = mkdtempSync(join(tmpdir(), 'sbx-e2b-cli-')) // the CLI's HOME: no login config
after(() => rmSync(home, { recursive: true, force: true }))

async function get(path) {
  const res = await fetch(api + path, { headers: { 'X-API-Key': key } })
  return { status: res.status, body: await res.json() }
}

// e2b runs the CLI with the SDK's environment (from run.sh).
function e2b(args) {
  const env = { ...process.env, HOME: home, NO_UPDATE_NOTIFIER: '1', NO_COLOR: '1' }
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    p.stdout.on('data', (d) => (out += d))
    p.stderr.on('data', (d) => (out += d))
    p.on('close', (code) => resolve({ code, out }))
  })
}

test(`${runtime}: setTimeout past the longest timeout sets that one, as E2B clamps it`, async () => {
  const sbx = await make()
  await sbx.setTimeout(48 * 3600_000) // the daemon's --max-timeout is 24 h
  const left = (await sbx.getInfo()).endAt.getTime() - Date.now()
  assert.ok(left > 24 * 3600_000 - 60_000 && left <= 24 * 3600_000, `endAt in ${left} ms, want 24 h`)
  assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n')
})

test(`${runtime}: list by template alias and by the exact start (at or after)`, async () => {
  const sbx = await make()
  const { body: raw } = await get(`/sandboxes/${sbx.sandboxId}`) // startedAt to the nanosecond
  const ids = async (query) => (await Sandbox.list({ query: { metadata: { sandboxTestId: sbx.testId }, ...query } }).nextItems()).map((s) => s.sandboxId)
  assert.deepEqual(await ids({ template: 'base' }), [sbx.sandboxId])
  assert.deepEqual(await ids({ template: 'base:default' }), [sbx.sandboxId])
  assert.deepEqual(await ids({ template: 'code-interpreter-v1' }), [])
  const q = new URLSearchParams({ metadata: `sandboxTestId=${sbx.testId}`, startedAfter: raw.startedAt })
  const { body: listed } = await get(`/v2/sandboxes?${q}`)
  assert.deepEqual(listed.map((s) => s.sandboxID), [sbx.sandboxId], `startedAfter=${raw.startedAt}`)
})

test(`${runtime}: a paused sandbox: endAt is its pause, the v1 list leaves it out`, { skip: runtime !== 'runsc' && 'memory pause is runsc only' }, async () => {
  const running = await make()
  const paused = await make({ metadata: { sandboxTestId: running.testId } })
  const before = Date.now()
  assert.equal(await paused.pause(), true)
  const info = await Sandbox.getInfo(paused.sandboxId)
  assert.equal(info.state, 'paused')
  assert.ok(info.endAt.getTime() >= before - 1000 && info.endAt.getTime() <= Date.now() + 1000, `endAt ${info.endAt.toISOString()} is the pause`)
  const [listed] = await Sandbox.list({ query: { metadata: { sandboxTestId: running.testId }, state: ['paused'] } }).nextItems()
  assert.equal(listed?.endAt.getTime(), info.endAt.getTime())
  // The Python SDK repeats the state parameter (state=running&state=paused).
  const md = encodeURIComponent(`sandboxTestId=${running.testId}`)
  const both = await get(`/v2/sandboxes?metadata=${md}&state=running&state=paused`)
  assert.deepEqual(both.body.map((s) => s.sandboxID).sort(), [running.sandboxId, paused.sandboxId].sort())
  const v1 = await get(`/sandboxes?metadata=${md}`)
  assert.deepEqual(v1.body.map((s) => [s.sandboxID, s.state]), [[running.sandboxId, 'running']])
  const cliList = await e2b(['sandbox', 'list', '--state', 'paused', '--metadata', `sandboxTestId=${running.testId}`, '--format', 'json'])
  assert.equal(cliList.code, 0, cliList.out)
  assert.equal(JSON.parse(cliList.out)[0]?.endAt, info.endAt.toISOString())
  const resumed = await Sandbox.connect(paused.sandboxId, { timeoutMs: 60_000 })
  const left = (await resumed.getInfo()).endAt.getTime() - Date.now()
  assert.ok(left > 50_000 && left <= 60_000, `resumed: endAt in ${left} ms, want the connect's 60 s`)
})

test(`${runtime}: e2b template publish reaches the API (a built-in is refused by name)`, async () => {
  const res = await e2b(['template', 'publish', 'base', '-y'])
  assert.doesNotMatch(res.out, /no such endpoint/, res.out)
  assert.match(res.out, /built-in templates cannot be changed/, res.out)
})
