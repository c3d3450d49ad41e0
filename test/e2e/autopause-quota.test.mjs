// End-to-end, with the official e2b SDK: a sandbox created with
// lifecycle.onTimeout "pause" whose team is at its disk quota when its
// deadline comes is not killed (it was, its files lost): it keeps running,
// getInfo shows it running with its endAt at the next try, its files are
// there; once the team frees disk (its other paused sandbox killed) it is
// paused, and connect resumes it with its files. Run through
// test/e2e/daemon/run.sh runsc test/e2e/autopause-quota.test.mjs (crun too).
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, RateLimitError } from 'e2b'

const api = process.env.E2B_API_URL
const admin = process.env.E2B_API_KEY
const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const created = []

after(async () => {
  for (const [id, apiKey] of created) await Sandbox.kill(id, { apiKey }).catch(() => {})
})

async function newTeam(name, quota) {
  const res = await fetch(api + '/sbx/teams', {
    method: 'POST', headers: { 'X-API-Key': admin, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name, quota }),
  })
  const body = await res.json()
  assert.equal(res.status, 201, JSON.stringify(body))
  return body.apiKey
}

async function waitState(id, apiKey, state, within) {
  let info
  for (const end = Date.now() + within; Date.now() < end; await sleep(250)) {
    info = await Sandbox.getInfo(id, { apiKey })
    if (info.state === state) return info
  }
  assert.fail(`sandbox ${id}: ${info?.state} after ${within} ms, want ${state}`)
}

test('an onTimeout "pause" sandbox at its team\'s disk quota runs on, then pauses once disk is freed', async () => {
  const apiKey = await newTeam(`autopause-${Date.now()}`, { diskMB: 32, sandboxes: 1 })
  const memory = runtime === 'runsc'
  const holder = await Sandbox.create('base', { apiKey, timeoutMs: 120_000 })
  created.push([holder.sandboxId, apiKey])
  await holder.commands.run('head -c 40M /dev/urandom > ~/big')
  assert.equal(await holder.betaPause({ keepMemory: memory }), true)

  const sbx = await Sandbox.create('base', { apiKey, timeoutMs: 120_000, lifecycle: { onTimeout: 'pause' } })
  created.push([sbx.sandboxId, apiKey])
  await sbx.files.write('/home/user/f', 'kept')
  await assert.rejects(sbx.betaPause({ keepMemory: memory }), RateLimitError, 'a pause at the disk quota')
  assert.equal(await sbx.isRunning(), true, 'a refused pause leaves it running')

  await sbx.setTimeout(1000)
  await sleep(4000)
  const info = await sbx.getInfo()
  assert.equal(info.state, 'running', 'past its deadline, its pause refused: still running')
  assert.ok(info.endAt.getTime() > Date.now(), `endAt ${info.endAt.toISOString()} is the next try, in the future`)
  assert.equal(await sbx.files.read('/home/user/f'), 'kept')

  assert.equal(await Sandbox.kill(holder.sandboxId, { apiKey }), true) // frees the team's disk
  await waitState(sbx.sandboxId, apiKey, 'paused', 20_000)
  const back = await Sandbox.connect(sbx.sandboxId, { apiKey, timeoutMs: 60_000 })
  assert.equal(await back.files.read('/home/user/f'), 'kept')
})
