// End-to-end: metrics history (getMetrics with start/end, bulk, team
// metrics), sandbox logs (lifecycle, each command and how it ended, after a
// kill) with the official e2b SDK, and the `e2b` CLI (@e2b/cli) pointed at
// sbx: sandbox list / metrics / logs / connect (through a pseudo-terminal) /
// kill, template list / delete. Run through
// test/e2e/daemon/run.sh <runtime> test/e2e/observability.test.mjs.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox, CommandExitError } from 'e2b'
import { restartDaemon } from './daemon/restart.mjs'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const api = process.env.E2B_API_URL
const key = process.env.E2B_API_KEY
const tag = `obs-${runtime}-${Date.now()}`
const created = []
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const cli = join(dirname(fileURLToPath(import.meta.url)), 'node_modules/@e2b/cli/dist/index.js')
const home = mkdtempSync(join(tmpdir(), 'sbx-e2b-cli-')) // the CLI's HOME: no login config

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
  rmSync(home, { recursive: true, force: true })
})

async function make() {
  const sbx = await Sandbox.create('base', { metadata: { suite: tag }, timeoutMs: 180_000 })
  created.push(sbx)
  return sbx
}

async function get(path) {
  const res = await fetch(api + path, { headers: { 'X-API-Key': key } })
  const body = await res.json()
  return { status: res.status, body }
}

// until polls fn until it returns a truthy value (at most ms).
async function until(what, fn, ms = 30_000) {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(500)
  }
}

// e2b runs the CLI with the SDK's environment (E2B_API_KEY, E2B_API_URL,
// E2B_SANDBOX_URL from run.sh) and a home of its own (no login config).
function e2b(args, { input, tty = false, timeoutMs = 60_000 } = {}) {
  const env = { ...process.env, HOME: home, NO_UPDATE_NOTIFIER: '1', FORCE_COLOR: '0', NO_COLOR: '1' }
  const argv = tty
    ? ['script', ['-qfec', [process.execPath, cli, ...args].map((a) => `'${a}'`).join(' '), '/dev/null']]
    : [process.execPath, [cli, ...args]]
  return new Promise((resolve, reject) => {
    const p = spawn(argv[0], argv[1], { env, stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    const timer = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`e2b ${args.join(' ')} timed out: ${out} ${err}`)) }, timeoutMs)
    p.stdout.on('data', (d) => { out += d; if (input) input(out, p.stdin) })
    p.stderr.on('data', (d) => { err += d })
    if (!input) p.stdin.end()
    p.on('close', (code) => { clearTimeout(timer); resolve({ code, out, err }) })
  })
}

test(`${runtime}: getMetrics honours start/end; bulk and team metrics`, async () => {
  const sbx = await make()
  const start = new Date()
  let end
  await sleep(1_100)
  const metrics = await until('a recorded sample in the window', async () => {
    end = new Date(Date.now() - 1_000) // a window without now: no fresh sample, only recorded ones
    const m = await sbx.getMetrics({ start, end })
    return m.length > 0 && m
  })
  const slack = 10_000 // samples are aligned to 5 s, queries are in seconds
  for (const m of metrics) {
    assert.ok(m.timestamp.getTime() >= start.getTime() - slack && m.timestamp.getTime() <= end.getTime() + slack, `${m.timestamp} in window`)
    assert.ok(m.cpuCount >= 1)
    assert.ok(m.memTotal > 0 && m.diskTotal > 0 && m.memUsed > 0, JSON.stringify(m))
    assert.ok(m.cpuUsedPct >= 0 && m.cpuUsedPct <= 100)
  }
  const before = await sbx.getMetrics({ start: new Date(start.getTime() - 3_600_000), end: new Date(start.getTime() - 1_800_000) })
  assert.deepEqual(before, [], 'a window before the sandbox existed holds no samples')
  const all = await sbx.getMetrics()
  assert.ok(all.length >= metrics.length)
  const fresh = await make() // no sample recorded yet: answers one taken now
  const now = await fresh.getMetrics()
  assert.equal(now.length, 1)
  assert.ok(now[0].memUsed > 0)
  await fresh.kill()

  const other = await make()
  // bulk answers each sandbox's latest recorded sample (one per 5 s)
  const bulk = await until('both sandboxes in the bulk metrics', async () => {
    const b = await get(`/sandboxes/metrics?sandbox_ids=${sbx.sandboxId},${other.sandboxId}`)
    assert.equal(b.status, 200)
    return Object.keys(b.body.sandboxes).length === 2 && b
  })
  assert.deepEqual(Object.keys(bulk.body.sandboxes).sort(), [sbx.sandboxId, other.sandboxId].sort())
  assert.ok(bulk.body.sandboxes[sbx.sandboxId].memTotal > 0)

  const teams = await get('/teams')
  assert.equal(teams.status, 200)
  const team = teams.body.find((t) => t.isDefault).teamID
  const series = await until('a team sample with both sandboxes', async () => {
    const s = (await get(`/teams/${team}/metrics`)).body
    return s.some((p) => p.concurrentSandboxes >= 2) && s
  })
  assert.ok(series.every((p) => typeof p.timestampUnix === 'number' && typeof p.sandboxStartRate === 'number'))
  const max = await get(`/teams/${team}/metrics/max?metric=concurrent_sandboxes`)
  assert.equal(max.status, 200)
  assert.ok(max.body.value >= 2, JSON.stringify(max.body))
  assert.equal((await get(`/teams/not-my-team/metrics`)).status, 403)
  await other.kill()
})

test(`${runtime}: logs record lifecycle and each command's end, and outlive the sandbox`, async () => {
  const short = await Sandbox.create('base', { metadata: { suite: tag }, timeoutMs: 2_000 })
  const sbx = await make()
  await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 1_000 }))
  await until('the timeout in the log', async () =>
    (await get(`/v2/sandboxes/${sbx.sandboxId}/logs?search=timeout`)).body.logs.length > 0)
  await sbx.commands.run('echo fine')
  await assert.rejects(sbx.commands.run('exit 3'), (e) => e instanceof CommandExitError && e.exitCode === 3)
  await sbx.kill() // at once: the kill reads the agent's last events first

  const { status, body } = await get(`/v2/sandboxes/${sbx.sandboxId}/logs`)
  assert.equal(status, 200, 'logs are kept after the kill')
  const msgs = body.logs.map((l) => l.message)
  assert.ok(msgs.includes('Sandbox created'), msgs.join(' | '))
  assert.ok(msgs.includes('Sandbox killed: api'), msgs.join(' | '))
  assert.ok(body.logs.filter((l) => l.message === 'Process started').length >= 3)
  const failed = body.logs.find((l) => l.message === 'Process exited with an error')
  assert.equal(failed.level, 'error')
  assert.equal(failed.fields.exit_code, '3')
  assert.ok(body.logs.some((l) => l.fields.exit_code === '0' && l.level === 'info'))
  assert.ok(body.logs.some((l) => l.message === 'Process killed: timeout' && l.fields.reason === 'timeout'), msgs.join(' | '))
  for (let i = 1; i < body.logs.length; i++) {
    assert.ok(body.logs[i - 1].timestamp <= body.logs[i].timestamp, 'forward is oldest first')
  }
  const errors = await get(`/v2/sandboxes/${sbx.sandboxId}/logs?level=error`)
  assert.deepEqual(errors.body.logs.map((l) => l.message), ['Process exited with an error'])
  const last = await get(`/v2/sandboxes/${sbx.sandboxId}/logs?direction=backward&limit=1`)
  assert.equal(last.body.logs[0].message, 'Sandbox killed: api')
  assert.equal((await get(`/v2/sandboxes/${sbx.sandboxId}/logs?direction=up`)).status, 400)
  await until('the deadline to kill the short sandbox', async () =>
    (await get(`/v2/sandboxes/${short.sandboxId}/logs?search=killed`)).body.logs.some((l) => l.message === 'Sandbox killed: timeout'))
})

test(`${runtime}: the e2b CLI lists, shows metrics and logs, connects a terminal and kills`, async () => {
  const sbx = await make()
  await assert.rejects(sbx.commands.run('exit 5'))
  await until('a sample', async () => (await sbx.getMetrics()).length > 0)

  const list = await e2b(['sandbox', 'list', '--format', 'json'])
  assert.equal(list.code, 0, list.err)
  assert.ok(JSON.parse(list.out).some((s) => s.sandboxId === sbx.sandboxId), list.out)

  const metrics = await e2b(['sandbox', 'metrics', sbx.sandboxId, '--format', 'json'])
  assert.equal(metrics.code, 0, metrics.err)
  const samples = metrics.out.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  assert.ok(samples.length > 0 && samples[0].memTotal > 0, metrics.out)

  await until('the failed command in the log', async () =>
    (await get(`/v2/sandboxes/${sbx.sandboxId}/logs?level=error`)).body.logs.length > 0)
  const logs = await e2b(['sandbox', 'logs', sbx.sandboxId, '--format', 'json'])
  assert.equal(logs.code, 0, logs.err)
  const lines = logs.out.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  assert.ok(lines.some((l) => l.level.toLowerCase() === 'error' && l.exit_code === '5' && l.logger === 'process'), logs.out)
  assert.ok(lines.some((l) => l.message === 'Sandbox created'), logs.out)

  let sent = 0
  const term = await e2b(['sandbox', 'connect', sbx.sandboxId], {
    tty: true,
    input: (out, stdin) => {
      if (sent === 0 && /Terminal connecting/.test(out)) {
        sent = 1
        setTimeout(() => stdin.write('echo obs-$((6*7))\r'), 1_500)
      } else if (sent === 1 && /obs-42/.test(out)) {
        sent = 2
        stdin.write('exit\r')
      }
    },
  })
  assert.equal(term.code, 0, term.out + term.err)
  assert.match(term.out, /obs-42/)

  const kill = await e2b(['sandbox', 'kill', sbx.sandboxId])
  assert.equal(kill.code, 0, kill.err)
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId))
  const gone = await e2b(['sandbox', 'logs', sbx.sandboxId, '--format', 'json'])
  assert.match(gone.out, /Sandbox killed: api/, 'the CLI reads logs of a killed sandbox')
})

test(`${runtime}: the e2b CLI lists and deletes templates`, async () => {
  const list = await e2b(['template', 'list', '--format', 'json'])
  assert.equal(list.code, 0, list.err)
  const templates = JSON.parse(list.out)
  assert.ok(templates.some((t) => t.templateID === 'base' || (t.aliases || []).includes('base')), list.out)

  const missing = await e2b(['template', 'delete', 'no-such-template', '-y'])
  assert.notEqual(missing.code, 0, 'deleting an unknown template fails')
  if (runtime !== 'runsc') return // snapshots (deletable templates) need memory checkpoints
  const sbx = await make()
  const snap = await sbx.createSnapshot()
  const del = await e2b(['template', 'delete', snap.snapshotId, '-y'])
  assert.equal(del.code, 0, del.out + del.err)
  const left = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems()
  assert.ok(!left.some((s) => s.snapshotId === snap.snapshotId), 'the snapshot is gone')
})

test(`${runtime}: metrics and logs survive a daemon restart`, async () => {
  const alive = await make()
  const dead = await make()
  await assert.rejects(dead.commands.run('exit 4'))
  await until('a recorded sample', async () => (await alive.getMetrics({ end: new Date(Date.now() - 1_000) })).length > 0)
  await until('the failed command in the log', async () =>
    (await get(`/v2/sandboxes/${dead.sandboxId}/logs?level=error`)).body.logs.length > 0)
  await dead.kill()
  const restartedAt = new Date()
  await restartDaemon()

  const logs = (await get(`/v2/sandboxes/${dead.sandboxId}/logs`)).body.logs
  assert.ok(logs.some((l) => l.fields.exit_code === '4'), JSON.stringify(logs))
  assert.ok(logs.some((l) => l.message === 'Sandbox killed: api'))
  const history = await alive.getMetrics({ end: restartedAt })
  assert.ok(history.length > 0, 'samples from before the restart are kept')
  const again = (await get(`/v2/sandboxes/${alive.sandboxId}/logs`)).body.logs.map((l) => l.message)
  assert.ok(again.includes('Sandbox re-adopted after a daemon restart'), again.join(' | '))
})

test(`${runtime}: pause and resume are in the log`, { skip: runtime !== 'runsc' && 'memory pause is runsc only' }, async () => {
  const sbx = await make()
  await sbx.pause()
  await Sandbox.connect(sbx.sandboxId)
  const msgs = (await get(`/v2/sandboxes/${sbx.sandboxId}/logs`)).body.logs.map((l) => l.message)
  const paused = msgs.indexOf('Sandbox paused')
  assert.ok(paused > 0 && msgs.indexOf('Sandbox resumed') > paused, msgs.join(' | '))
})
