// End-to-end: two teams on one `sbx serve`, each with its own API key, used
// through the official e2b SDK (test/e2e/daemon/run.sh sets E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY, the admin key). A team's sandboxes and
// snapshots are invisible to the other: every SDK call with the other
// team's ids fails exactly as with ids that never existed; a revoked key
// stops working at its next call; the official e2b CLI with each key sees
// that team's sandboxes only. Template names are per team (as E2B's): each
// team builds and starts its own "my-app"; another team's is "<slug>/my-app"
// and reachable only once public.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox, SandboxNotFoundError, AuthenticationError, Template } from 'e2b'

const cli = join(dirname(fileURLToPath(import.meta.url)), 'node_modules/@e2b/cli/dist/index.js')
const home = mkdtempSync(join(tmpdir(), 'sbx-e2b-cli-')) // the CLI's HOME: no login config

// e2b runs the official CLI (@e2b/cli) with apiKey as E2B_API_KEY.
function e2b(apiKey, args) {
  const env = { ...process.env, E2B_API_KEY: apiKey, HOME: home, NO_UPDATE_NOTIFIER: '1', FORCE_COLOR: '0', NO_COLOR: '1' }
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    const timer = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`e2b ${args.join(' ')} timed out`)) }, 60_000)
    p.stdout.on('data', (d) => { out += d })
    p.stderr.on('data', (d) => { err += d })
    p.on('close', (code) => { clearTimeout(timer); resolve({ code, out, err }) })
  })
}

const api = process.env.E2B_API_URL
const admin = process.env.E2B_API_KEY
const created = []
let A, B

async function call(key, method, path, body) {
  const res = await fetch(api + path, {
    method, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

async function newTeam(name) {
  const r = await call(admin, 'POST', '/sbx/teams', { name })
  assert.equal(r.status, 201, JSON.stringify(r.body))
  return { id: r.body.teamID, key: r.body.apiKey }
}

// failure runs f and returns its error with the given id replaced, so the
// answers for another team's id and a nonexistent one can be compared.
async function failure(f, id) {
  try {
    await f()
  } catch (e) {
    return { name: e.constructor.name, message: e.message.replaceAll(id, '<id>') }
  }
  assert.fail('expected a failure')
}

before(async () => {
  A = await newTeam(`e2e-a-${Date.now()}`)
  B = await newTeam(`e2e-b-${Date.now()}`)
})

after(async () => {
  for (const [s, key] of created) await Sandbox.kill(s, { apiKey: key }).catch(() => {})
  rmSync(home, { recursive: true, force: true })
})

test('two teams: sandboxes are invisible across teams, as ids that never existed', async () => {
  const sbx = await Sandbox.create('base', { apiKey: A.key, timeoutMs: 120_000 })
  created.push([sbx.sandboxId, A.key])
  assert.equal((await sbx.commands.run('echo hi')).stdout, 'hi\n')
  const ghost = 'zzzzzzzzzzzzzzzzzzzz'

  const mine = await Sandbox.list({ apiKey: A.key }).nextItems()
  assert.ok(mine.some((s) => s.sandboxId === sbx.sandboxId))
  const theirs = await Sandbox.list({ apiKey: B.key }).nextItems()
  assert.ok(!theirs.some((s) => s.sandboxId === sbx.sandboxId), 'B lists no sandbox of A')

  for (const [what, f] of Object.entries({
    getInfo: (id) => Sandbox.getInfo(id, { apiKey: B.key }),
    connect: (id) => Sandbox.connect(id, { apiKey: B.key }),
    setTimeout: (id) => Sandbox.setTimeout(id, 60_000, { apiKey: B.key }),
    getMetrics: (id) => Sandbox.getMetrics(id, { apiKey: B.key }),
    createSnapshot: (id) => Sandbox.createSnapshot(id, { apiKey: B.key }),
  })) {
    const other = await failure(() => f(sbx.sandboxId), sbx.sandboxId)
    const never = await failure(() => f(ghost), ghost)
    assert.deepEqual(other, never, what)
    if (what !== 'createSnapshot') assert.equal(other.name, SandboxNotFoundError.name, what)
  }
  assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: B.key }), false)
  assert.equal(await Sandbox.kill(ghost, { apiKey: B.key }), false)
  assert.equal((await sbx.commands.run('echo still')).stdout, 'still\n', "B's kill did nothing")
  assert.equal((await Sandbox.getInfo(sbx.sandboxId, { apiKey: A.key })).sandboxId, sbx.sandboxId)
})

test("two teams: a snapshot is its team's: B can neither list nor start from it", { skip: process.env.SBX_E2E_RUNTIME !== 'runsc' }, async () => {
  const sbx = await Sandbox.create('base', { apiKey: A.key, timeoutMs: 120_000 })
  created.push([sbx.sandboxId, A.key])
  const snap = await sbx.createSnapshot()
  try {
    const listedB = await Sandbox.listSnapshots({ apiKey: B.key }).nextItems()
    assert.ok(!listedB.some((s) => s.snapshotId === snap.snapshotId))
    const other = await failure(() => Sandbox.create(snap.snapshotId, { apiKey: B.key }), snap.snapshotId)
    const never = await failure(() => Sandbox.create('snapnosuchsnapshot00', { apiKey: B.key }), 'snapnosuchsnapshot00')
    assert.deepEqual(other, never)
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, { apiKey: B.key }), false)
    const fromA = await Sandbox.create(snap.snapshotId, { apiKey: A.key, timeoutMs: 60_000 })
    created.push([fromA.sandboxId, A.key])
    assert.equal((await fromA.commands.run('echo restored')).stdout, 'restored\n')
  } finally {
    await Sandbox.deleteSnapshot(snap.snapshotId, { apiKey: A.key })
  }
})

test('a revoked key stops working at its next call', async () => {
  const made = await call(A.key, 'POST', '/api-keys', { name: 'short-lived' })
  assert.equal(made.status, 201)
  assert.ok(made.body.key.startsWith('e2b_'))
  await Sandbox.list({ apiKey: made.body.key }).nextItems()
  const keys = await call(A.key, 'GET', '/api-keys')
  const listed = keys.body.find((k) => k.id === made.body.id)
  assert.equal(listed.name, 'short-lived')
  assert.equal(listed.key, undefined, 'a key is shown only once')
  assert.equal((await call(A.key, 'DELETE', `/api-keys/${made.body.id}`)).status, 204)
  await assert.rejects(Sandbox.list({ apiKey: made.body.key }).nextItems(), AuthenticationError)
  await assert.rejects(Sandbox.create('base', { apiKey: made.body.key }), AuthenticationError)
  // B cannot revoke A's keys: as unknown.
  assert.equal((await call(B.key, 'DELETE', `/api-keys/${listed.id}`)).status, 404)
})

test("the e2b CLI with each team's key sees that team's sandboxes only", async () => {
  const sbx = await Sandbox.create('base', { apiKey: A.key, timeoutMs: 120_000 })
  created.push([sbx.sandboxId, A.key])
  const listA = await e2b(A.key, ['sandbox', 'list', '--format', 'json'])
  assert.equal(listA.code, 0, listA.err)
  assert.ok(listA.out.includes(sbx.sandboxId), listA.out)
  const listB = await e2b(B.key, ['sandbox', 'list', '--format', 'json'])
  assert.equal(listB.code, 0, listB.err)
  assert.ok(!listB.out.includes(sbx.sandboxId), listB.out)
  const logsB = await e2b(B.key, ['sandbox', 'logs', sbx.sandboxId, '--format', 'json'])
  assert.notEqual(logsB.code, 0, "B reads A's sandbox's logs")
  const killB = await e2b(B.key, ['sandbox', 'kill', sbx.sandboxId])
  assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n', `B's kill did nothing (${killB.code})`)
  const logsA = await e2b(A.key, ['sandbox', 'logs', sbx.sandboxId, '--format', 'json'])
  assert.equal(logsA.code, 0, logsA.err)
  assert.match(logsA.out, /Sandbox created/)
})

test('template names are per team: both build my-app; a public one is <slug>/my-app', { timeout: 600_000 }, async () => {
  const slug = {}
  for (const [t, who] of [[A, 'A'], [B, 'B']]) {
    const teams = await call(t.key, 'GET', '/teams')
    assert.equal(teams.status, 200)
    slug[who] = teams.body[0].slug
    assert.equal(slug[who], t.id, 'the namespace is the team id')
    // a tiny build on the built-in base: one RUN
    const tpl = Template().fromTemplate('base').runCmd(`echo ${who} > /who`, { user: 'root' })
    await Template.build(tpl, 'my-app', { apiKey: t.key })
  }
  for (const [t, who] of [[A, 'A'], [B, 'B']]) {
    assert.equal(await Template.exists('my-app', { apiKey: t.key }), true)
    assert.deepEqual((await Template.getTags('my-app', { apiKey: t.key })).map((x) => x.tag), ['default'])
    const sbx = await Sandbox.create('my-app', { apiKey: t.key, timeoutMs: 60_000 })
    created.push([sbx.sandboxId, t.key])
    assert.equal((await sbx.commands.run('cat /who')).stdout, `${who}\n`, `${who} starts its own my-app`)
    await Sandbox.kill(sbx.sandboxId, { apiKey: t.key })
  }
  // A's private my-app, by its namespaced name, is for B what a name A never had is.
  assert.equal(await Template.exists(`${slug.A}/my-app`, { apiKey: B.key }), false)
  const other = await failure(() => Sandbox.create(`${slug.A}/my-app`, { apiKey: B.key }), 'my-app')
  const never = await failure(() => Sandbox.create(`${slug.A}/nosuchtemplate`, { apiKey: B.key }), 'nosuchtemplate')
  assert.deepEqual(other, never)
  assert.deepEqual(await failure(() => Template.getTags(`${slug.A}/my-app`, { apiKey: B.key }), 'my-app'),
    await failure(() => Template.getTags(`${slug.A}/nosuchtemplate`, { apiKey: B.key }), 'nosuchtemplate'))
  // as a base, E2B's build API resolves it by namespace and says no access
  await assert.rejects(Template.build(Template().fromTemplate(`${slug.A}/my-app`), 'b-child', { apiKey: B.key }),
    (e) => e.name === 'BuildError' && e.message === `you have no access to use '${slug.A}/my-app' as a base template`)
  await call(B.key, 'DELETE', '/templates/b-child')
  assert.equal((await call(A.key, 'PATCH', '/templates/my-app', { public: true })).status, 200)
  // a public template's tags are every team's to read, as on E2B
  assert.deepEqual((await Template.getTags(`${slug.A}/my-app`, { apiKey: B.key })).map((x) => x.tag), ['default'])
  assert.equal(await Template.exists(`${slug.A}/my-app`, { apiKey: B.key }), true)
  const pub = await Sandbox.create(`${slug.A}/my-app`, { apiKey: B.key, timeoutMs: 60_000 })
  created.push([pub.sandboxId, B.key])
  assert.equal((await pub.commands.run('cat /who')).stdout, 'A\n', "B starts A's public my-app by its namespaced name")
  const own = await Sandbox.create('my-app', { apiKey: B.key, timeoutMs: 60_000 })
  created.push([own.sandboxId, B.key])
  assert.equal((await own.commands.run('cat /who')).stdout, 'B\n', 'the bare name stays B\'s own')
  // public gives use, not change
  assert.equal((await call(B.key, 'DELETE', `/templates/${encodeURIComponent(`${slug.A}/my-app`)}`)).status, 404)
  assert.equal(await Template.exists('my-app', { apiKey: A.key }), true)
  // the admin (default team) has no my-app: neither A's nor B's
  assert.equal(await Template.exists('my-app', { apiKey: admin }), false)
})
