// End-to-end tests of the agent's filesystem service and /files endpoint
// with the official SDK in debug mode (agent on localhost:49983).
// Run: E2B_DEBUG=true node --test files.test.mjs (test/e2e/agent/run.sh
// starts the agent and runs this).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { Sandbox, FileType } from 'e2b'

process.env.E2B_DEBUG = 'true'
const AGENT = 'http://localhost:49983'
// test/e2e/agent/run.sh starts the agent with an /init secret, as the daemon
// does; /init is accepted only with it.
const daemonInit = process.env.SBX_E2E_INIT_TOKEN ? { 'X-Sbx-Init-Token': process.env.SBX_E2E_INIT_TOKEN } : {}
const dir = `/tmp/sbx-e2e-files-${crypto.randomBytes(4).toString('hex')}`
let sbx

before(async () => { sbx = await Sandbox.create() })
after(async () => { await sbx.files.remove(dir).catch(() => {}) })

test('write and read text and binary (1 MiB+)', async () => {
  await sbx.files.write(`${dir}/a.txt`, 'hello')
  assert.equal(await sbx.files.read(`${dir}/a.txt`), 'hello')
  const big = crypto.randomBytes((1 << 20) + 123)
  await sbx.files.write(`${dir}/big.bin`, big.buffer.slice(big.byteOffset, big.byteOffset + big.length))
  const back = await sbx.files.read(`${dir}/big.bin`, { format: 'bytes' })
  assert.ok(Buffer.from(back).equals(big))
  const gz = await sbx.files.read(`${dir}/big.bin`, { format: 'bytes', gzip: true })
  assert.ok(Buffer.from(gz).equals(big))
  await sbx.files.write(`${dir}/gz.txt`, 'zipped', { gzip: true })
  assert.equal(await sbx.files.read(`${dir}/gz.txt`), 'zipped')
  await sbx.files.write(`${dir}/empty`, '')
  assert.equal(await sbx.files.read(`${dir}/empty`), '')
})

test('write several files at once', async () => {
  const out = await sbx.files.write([
    { path: `${dir}/m/one.txt`, data: '1' },
    { path: `${dir}/m/sub/two.txt`, data: '2' },
  ])
  assert.deepEqual(out.map((w) => w.path), [`${dir}/m/one.txt`, `${dir}/m/sub/two.txt`])
  assert.equal(await sbx.files.read(`${dir}/m/sub/two.txt`), '2')
})

test('list, exists, getInfo, makeDir, rename, remove', async () => {
  assert.equal(await sbx.files.makeDir(`${dir}/d/e`), true)
  assert.equal(await sbx.files.makeDir(`${dir}/d/e`), false)
  await sbx.files.write(`${dir}/d/f.txt`, 'abc')
  const l1 = await sbx.files.list(`${dir}/d`)
  assert.deepEqual(l1.map((e) => e.name), ['e', 'f.txt'])
  const l2 = await sbx.files.list(dir, { depth: 2 })
  assert.ok(l2.some((e) => e.path === `${dir}/d/f.txt`))
  const info = await sbx.files.getInfo(`${dir}/d/f.txt`)
  assert.equal(info.type, FileType.FILE)
  assert.equal(info.size, 3)
  assert.equal(info.permissions, '-rw-r--r--')
  assert.equal(info.mode, 0o644)
  assert.ok(info.modifiedTime instanceof Date)
  assert.equal((await sbx.files.getInfo(`${dir}/d/e`)).type, FileType.DIR)
  assert.equal(await sbx.files.exists(`${dir}/nope`), false)
  await assert.rejects(sbx.files.getInfo(`${dir}/nope`), { name: 'FileNotFoundError' })
  const moved = await sbx.files.rename(`${dir}/d/f.txt`, `${dir}/d/g.txt`)
  assert.equal(moved.path, `${dir}/d/g.txt`)
  await sbx.files.remove(`${dir}/d`)
  assert.equal(await sbx.files.exists(`${dir}/d`), false)
})

test('metadata is stored, listed and kept by rename', async () => {
  await sbx.files.write(`${dir}/md.txt`, 'x', { metadata: { Owner: 'alice', build: '7' } })
  let info = await sbx.files.getInfo(`${dir}/md.txt`)
  assert.deepEqual(info.metadata, { owner: 'alice', build: '7' })
  await sbx.files.rename(`${dir}/md.txt`, `${dir}/md2.txt`)
  info = await sbx.files.getInfo(`${dir}/md2.txt`)
  assert.deepEqual(info.metadata, { owner: 'alice', build: '7' })
  await sbx.files.write(`${dir}/md2.txt`, 'y')
  assert.equal((await sbx.files.getInfo(`${dir}/md2.txt`)).metadata, undefined)
})

test('watchDir recursive', async () => {
  await sbx.files.makeDir(`${dir}/w`)
  const seen = []
  let done
  const got = new Promise((r) => { done = r })
  const h = await sbx.files.watchDir(`${dir}/w`, (ev) => {
    seen.push(`${ev.type} ${ev.name}`)
    if (ev.name === 'x/y/z.txt') done()
  }, { recursive: true })
  await sbx.files.write(`${dir}/w/x/y/z.txt`, 'z')
  await Promise.race([got, new Promise((_, j) => setTimeout(() => j(new Error(`timeout, saw ${seen}`)), 5000))])
  await h.stop()
  assert.ok(seen.includes('create x'), seen.join(','))
  await assert.rejects(sbx.files.watchDir(`${dir}/w/x/y/z.txt`, () => {}), { name: 'InvalidArgumentError' })
})

test('uploadUrl/downloadUrl without a token, then signed URLs after /init', async () => {
  const up = await sbx.uploadUrl(`${dir}/u.txt`)
  const form = new FormData()
  form.append('file', new Blob(['uploaded']), `${dir}/u.txt`)
  assert.equal((await fetch(up, { method: 'POST', body: form })).status, 200)
  assert.equal(await (await fetch(await sbx.downloadUrl(`${dir}/u.txt`))).text(), 'uploaded')

  const token = crypto.randomBytes(16).toString('hex')
  const init = await fetch(`${AGENT}/init`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...daemonInit }, body: JSON.stringify({ accessToken: token }) })
  assert.ok(init.ok, `init ${init.status}`)
  try {
    const path = `${dir}/u.txt`
    const sign = (op, exp) => 'v1_' + crypto.createHash('sha256').update(`${path}:${op}::${token}${exp ? `:${exp}` : ''}`).digest('base64').replace(/=+$/, '')
    const url = (op, exp, sig = sign(op, exp)) => `${AGENT}/files?` + new URLSearchParams({ path, signature: sig, ...(exp ? { signature_expiration: String(exp) } : {}) })
    const later = Math.floor(Date.now() / 1000) + 60
    assert.equal(await (await fetch(url('read', later))).text(), 'uploaded')
    assert.equal((await fetch(url('write'), { method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: 'signed' })).status, 200)
    assert.equal(await (await fetch(url('read'))).text(), 'signed')
    assert.equal((await fetch(url('write', later))).status, 401)
    assert.equal((await fetch(url('read', later, 'v1_tampered'))).status, 401)
    const expired = await fetch(url('read', 1000))
    assert.equal(expired.status, 401)
    assert.match((await expired.json()).message, /signature is already expired/)
    assert.equal((await fetch(`${AGENT}/files?path=${encodeURIComponent(path)}`)).status, 401)
    assert.equal((await fetch(`${AGENT}/files?path=${encodeURIComponent(path)}`, { headers: { 'X-Access-Token': token } })).status, 200)
  } finally {
    await fetch(`${AGENT}/init`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Access-Token': token, ...daemonInit }, body: JSON.stringify({ accessToken: '' }) })
  }
})
