// End-to-end: E2B behaviour at the edges, with the official e2b SDK against a
// real `sbx serve` on one runtime (test/e2e/daemon/run.sh sets E2B_API_URL,
// E2B_SANDBOX_URL, E2B_API_KEY): what a watcher sees of files.write(),
// remove() of a missing path, getInfo()/list() of symlinks, setTimeout(0),
// and forward-compatible create bodies.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, FilesystemEventType, SandboxNotFoundError } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const api = process.env.E2B_API_URL
const key = process.env.E2B_API_KEY
const created = []

async function make(opts = {}) {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000, ...opts })
  created.push(sbx)
  return sbx
}

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

// watch collects the events of dir while f runs, until want() holds of them
// (or 5 s pass), then a little longer to catch strays.
async function watch(sbx, dir, f, want) {
  const seen = []
  let done
  const got = new Promise((r) => { done = r })
  const h = await sbx.files.watchDir(dir, (ev) => {
    seen.push(ev)
    if (want(seen)) done()
  })
  await f()
  await Promise.race([got, new Promise((r) => setTimeout(r, 5000))])
  await new Promise((r) => setTimeout(r, 300))
  await h.stop()
  return seen
}

const show = (evs) => evs.map((e) => `${e.type}:${e.name}`).join(', ')

test(`${runtime}: files.write is seen by watchDir as a plain write of the file, no other name`, async () => {
  const sbx = await make()
  await sbx.files.makeDir('w')
  // E2B's SDK test: an overwrite gives WRITE on the file's own name.
  await sbx.files.write('w/a.txt', 'first')
  let evs = await watch(sbx, 'w', () => sbx.files.write('w/a.txt', 'second'),
    (s) => s.some((e) => e.type === FilesystemEventType.WRITE && e.name === 'a.txt'))
  assert.ok(evs.some((e) => e.type === FilesystemEventType.WRITE && e.name === 'a.txt'), show(evs))
  assert.ok(evs.every((e) => e.name === 'a.txt'), `only a.txt may be seen: ${show(evs)}`)
  assert.ok(!evs.some((e) => e.type === FilesystemEventType.RENAME || e.type === FilesystemEventType.REMOVE), show(evs))
  assert.equal(await sbx.files.read('w/a.txt'), 'second')
  // A new file: CREATE then WRITE on it; several files in one request
  // (multipart) likewise, each under its own name.
  evs = await watch(sbx, 'w', () => sbx.files.write([{ path: 'w/b.txt', data: 'b' }, { path: 'w/c.txt', data: 'c' }]),
    (s) => ['b.txt', 'c.txt'].every((n) => s.some((e) => e.type === FilesystemEventType.WRITE && e.name === n)))
  for (const n of ['b.txt', 'c.txt']) {
    const types = evs.filter((e) => e.name === n).map((e) => e.type)
    assert.ok(types.includes(FilesystemEventType.CREATE) && types.includes(FilesystemEventType.WRITE), `${n}: ${show(evs)}`)
    assert.ok(types.indexOf(FilesystemEventType.CREATE) < types.indexOf(FilesystemEventType.WRITE), `${n}: ${show(evs)}`)
  }
  assert.ok(evs.every((e) => e.name === 'b.txt' || e.name === 'c.txt'), `only b.txt, c.txt may be seen: ${show(evs)}`)
  // An overwrite writes the same file: a hard link sees the new content and
  // the file keeps its mode.
  await sbx.commands.run('chmod 700 w/a.txt && ln w/a.txt w/hard')
  await sbx.files.write('w/a.txt', 'third')
  assert.equal((await sbx.commands.run('cat w/hard; stat -c %a w/a.txt')).stdout, 'third700\n')
})

test(`${runtime}: files.remove of a missing path succeeds, as on E2B`, async () => {
  const sbx = await make()
  await sbx.files.remove('non_existing_file.txt')
  await sbx.files.remove('/tmp/no/such/dir')
  await sbx.files.write('gone.txt', 'x')
  await sbx.files.remove('gone.txt')
  assert.equal(await sbx.files.exists('gone.txt'), false)
})

test(`${runtime}: getInfo and list report a symlink by its target, as E2B's SDK tests expect`, async () => {
  const sbx = await make()
  await sbx.files.write('test_file.txt', 'test')
  await sbx.commands.run('ln -s test_file.txt test_symlink.txt && mkdir -p d && ln -s d dl && ln -s nowhere dangling')
  const pwd = (await sbx.commands.run('pwd')).stdout.trim()
  const info = await sbx.files.getInfo('test_symlink.txt')
  assert.equal(info.name, 'test_symlink.txt')
  assert.equal(info.symlinkTarget, `${pwd}/test_file.txt`)
  assert.equal(info.type, 'file')
  assert.equal(info.mode, 0o644)
  assert.equal(info.permissions, 'Lrwxrwxrwx')
  const dl = await sbx.files.getInfo('dl')
  assert.equal(dl.type, 'dir')
  assert.equal(dl.symlinkTarget, `${pwd}/d`)
  const entries = new Map((await sbx.files.list('.')).map((e) => [e.name, e]))
  assert.equal(entries.get('test_symlink.txt')?.type, 'file')
  assert.equal(entries.get('test_symlink.txt')?.symlinkTarget, `${pwd}/test_file.txt`)
  assert.equal(entries.get('dl')?.type, 'dir')
  assert.equal(entries.has('dangling'), false, 'a dangling symlink has no type: the SDK leaves it out')
  // Writing through a symlink writes its target.
  await sbx.files.write('test_symlink.txt', 'through')
  assert.equal(await sbx.files.read('test_file.txt'), 'through')
})

test(`${runtime}: setTimeout(0) ends the sandbox at once, as on E2B`, async () => {
  const sbx = await make()
  await sbx.setTimeout(0)
  const deadline = Date.now() + 10_000
  while (await sbx.isRunning({ requestTimeoutMs: 2000 })) {
    assert.ok(Date.now() < deadline, 'still running 10 s after setTimeout(0)')
    await new Promise((r) => setTimeout(r, 200))
  }
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError)
})

test(`${runtime}: a create with an unknown field works; mcp and iam are refused by name`, async () => {
  const post = (body) => fetch(`${api}/v2/sandboxes`, {
    method: 'POST', headers: { 'X-API-KEY': key, 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  })
  const res = await post({ templateID: 'base', timeout: 60, someFieldFromANewerSdk: { enabled: true } })
  assert.equal(res.status, 201, await res.clone().text())
  const { sandboxID } = await res.json()
  const sbx = await Sandbox.connect(sandboxID)
  created.push(sbx)
  assert.equal((await sbx.commands.run('echo ok')).stdout, 'ok\n')
  for (const [field, body] of [['mcp', { mcp: { exa: { apiKey: 'k' } } }], ['iam', { iam: { tokens: {} } }]]) {
    const r = await post({ templateID: 'base', ...body })
    const e = await r.json()
    assert.equal(r.status, 400)
    assert.equal(e.code, 400)
    assert.match(e.message, new RegExp(`\\b${field}\\b`))
  }
  // Through the SDK, as a user would: a clear error naming the field.
  await assert.rejects(Sandbox.create('base', { mcp: { exa: { apiKey: 'k' } } }), /mcp/)
})
