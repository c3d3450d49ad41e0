// End-to-end: the official e2b SDK against the API front of a two-node
// cluster (test/e2e/cluster/run.sh starts PostgreSQL, the nodes and the
// front, and sets E2B_API_URL/E2B_SANDBOX_URL to the front and
// SBX_E2E_NODE_URLS to the nodes). Creates land on both nodes; commands,
// files, exposed ports, lists and kills work through the front.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { Sandbox } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const nodes = process.env.SBX_E2E_NODE_URLS.split(' ')
const front = new URL(process.env.E2B_API_URL)
const tag = `cluster-${runtime}-${Date.now()}`
const created = []

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

// onNode returns the ids of the sandboxes a node serves (asked directly).
async function onNode(url) {
  const r = await fetch(`${url}/v2/sandboxes?metadata=${encodeURIComponent(`suite=${tag}`)}`, { headers: { 'X-API-Key': process.env.E2B_API_KEY } })
  assert.equal(r.status, 200)
  return (await r.json()).map((s) => s.sandboxID)
}

function getVia(host) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: front.hostname, port: front.port, path: '/hello.txt', headers: { Host: host } }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

test(`${runtime}: creates through the front land on both nodes; each works through the front`, async () => {
  const made = await Promise.all(Array.from({ length: 6 }, () =>
    Sandbox.create('base', { metadata: { suite: tag }, timeoutMs: 120_000 })))
  created.push(...made)
  const per = await Promise.all(nodes.map(onNode))
  assert.equal(per[0].length + per[1].length, 6, `the nodes serve ${per.map((p) => p.length)}`)
  assert.ok(per[0].length > 0 && per[1].length > 0, `6 creates placed ${per[0].length} and ${per[1].length}`)
  for (const ids of per) {
    const sbx = made.find((s) => s.sandboxId === ids[0])
    const r = await sbx.commands.run('echo "$((6*7))" from $(hostname)')
    assert.equal(r.exitCode, 0)
    assert.match(r.stdout, /^42 from /)
    await sbx.files.write('/home/user/note.txt', `written to ${sbx.sandboxId}`)
    assert.equal(await sbx.files.read('/home/user/note.txt'), `written to ${sbx.sandboxId}`)
  }
  const listed = await Sandbox.list({ query: { metadata: { suite: tag } } }).nextItems()
  assert.deepEqual(listed.map((s) => s.sandboxId).sort(), made.map((s) => s.sandboxId).sort())
})

test(`${runtime}: an exposed port through the front, by <port>-<id>.<domain>`, async () => {
  const sbx = await Sandbox.create('base', { metadata: { suite: tag }, timeoutMs: 120_000 })
  created.push(sbx)
  await sbx.files.write('/home/user/www/hello.txt', 'hello through the front')
  await sbx.commands.run('cd /home/user/www && python3 -m http.server 8000', { background: true })
  let r
  for (let i = 0; i < 100; i++) {
    r = await getVia(sbx.getHost(8000))
    if (r.status === 200) break
    await new Promise((res) => setTimeout(res, 100))
  }
  assert.equal(r.status, 200)
  assert.equal(r.body, 'hello through the front')
  assert.equal((await getVia(`8000-${'x'.repeat(20)}.${sbx.getHost(8000).split('.').slice(1).join('.')}`)).status, 404)
})

test(`${runtime}: kill through the front; the sandbox is gone on its node`, async () => {
  const sbx = await Sandbox.create('base', { metadata: { suite: tag }, timeoutMs: 120_000 })
  await sbx.kill()
  assert.equal(await sbx.isRunning(), false)
  for (const url of nodes) assert.ok(!(await onNode(url)).includes(sbx.sandboxId))
  await assert.rejects(Sandbox.connect(sbx.sandboxId))
})
