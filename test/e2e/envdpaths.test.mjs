// End-to-end: how envd resolves the paths a caller leaves empty or points
// at nothing, with the official e2b SDK against a real `sbx serve`
// (test/e2e/daemon/run.sh sets E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY).
// envd's ExpandAndResolve takes an empty path as the default workdir, else
// the user's home (infra packages/envd/internal/permissions/path.go), so
// code written against E2B lists the home with files.list(""); a missing cwd
// is envd's invalid_argument "cwd '<dir>' does not exist".
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, InvalidArgumentError } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const created = []

async function make(opts = {}) {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000, ...opts })
  created.push(sbx)
  return sbx
}

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

test(`${runtime}: an empty path is the home for list, getInfo, exists, makeDir and watchDir, as in envd`, async () => {
  const sbx = await make()
  const f = sbx.files
  await f.write('chart.png', new Uint8Array([137, 80, 78, 71]))
  const names = (await f.list('')).map((e) => e.name)
  assert.deepEqual(names, (await f.list('/home/user')).map((e) => e.name))
  assert.ok(names.includes('chart.png'), names.join(' '))
  assert.equal((await f.list('', { user: 'root' }))[0]?.path.startsWith('/root/'), true)
  const info = await f.getInfo('')
  assert.deepEqual([info.path, info.type, info.name], ['/home/user', 'dir', 'user'])
  assert.equal(await f.exists(''), true)
  assert.equal(await f.makeDir(''), false)
  const seen = []
  const h = await f.watchDir('', (e) => seen.push(`${e.type}:${e.name}`))
  await f.write('w.txt', 'x')
  for (let i = 0; i < 50 && !seen.includes('write:w.txt'); i++) await new Promise((r) => setTimeout(r, 100))
  await h.stop()
  assert.ok(seen.includes('write:w.txt'), seen.join(', '))
  // envd would remove or move the home itself; sbx refuses (the home stays)
  await assert.rejects(f.remove(''), InvalidArgumentError)
  await assert.rejects(f.rename('', 'elsewhere'), InvalidArgumentError)
  assert.equal(await f.exists('/home/user/chart.png'), true)
})

test(`${runtime}: a missing cwd is envd's "cwd '<dir>' does not exist"`, async () => {
  const sbx = await make()
  await assert.rejects(sbx.commands.run('pwd', { cwd: '/nonexistent' }),
    (e) => e instanceof InvalidArgumentError && /cwd '\/nonexistent' does not exist/.test(e.message))
  await assert.rejects(sbx.commands.run('pwd', { cwd: 'missing/sub' }),
    (e) => e instanceof InvalidArgumentError && /cwd '\/home\/user\/missing\/sub' does not exist/.test(e.message))
})
