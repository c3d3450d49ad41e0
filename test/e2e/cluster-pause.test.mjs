// End-to-end: pause, resume and snapshots across the nodes of a cluster,
// with the official e2b SDK through the API front. The nodes share a
// --shared-dir (test/e2e/cluster/run.sh with SBX_E2E_SHARED=1, on runsc):
//   SBX_E2E_SHARED=1 test/e2e/cluster/run.sh runsc test/e2e/cluster-pause.test.mjs
// A sandbox paused on one node is resumed by Sandbox.connect on the other
// after the first is killed (kill -9), the same process going on with its
// memory; a snapshot made on the dead node starts sandboxes on the other.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const nodes = process.env.SBX_E2E_NODE_URLS.split(' ')
const pids = (process.env.SBX_E2E_NODE_PIDS || '').split(' ').map(Number)
const tag = `cluster-pause-${runtime}-${Date.now()}`
const created = []
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

// A process counting in its memory, writing each count to a file.
const counter = `nohup python3 -c '
import os, time
i = 0
while True:
    i += 1
    open("/home/user/count.tmp", "w").write(str(i))
    os.replace("/home/user/count.tmp", "/home/user/count")
    time.sleep(0.05)
' >/dev/null 2>&1 &`

const count = async (sbx) => Number((await sbx.commands.run('cat /home/user/count 2>/dev/null || echo 0')).stdout.trim())
const pythonPid = async (sbx) => (await sbx.commands.run("pgrep -f '[c]ount.tmp'")).stdout.trim()

// advances waits until the counter passes from (its memory went on).
async function advances(sbx, from) {
  for (let i = 0; i < 200; i++) {
    const n = await count(sbx)
    if (n > from) return n
    await sleep(50)
  }
  throw new Error(`counter stuck at or below ${from}`)
}

// nodeOf is the index of the node serving sandbox id (asked directly; a
// dead node is skipped).
async function nodeOf(id) {
  for (const [i, url] of nodes.entries()) {
    const r = await fetch(`${url}/v2/sandboxes?metadata=${encodeURIComponent(`suite=${tag}`)}&state=running,paused`,
      { headers: { 'X-API-Key': process.env.E2B_API_KEY } }).catch(() => undefined)
    if (r?.ok && (await r.json()).some((s) => s.sandboxID === id)) return i
  }
  return -1
}

test(`${runtime}: paused on a node that dies, resumed on another; its snapshot starts sandboxes there`, { skip: pids.length !== 2 && 'needs SBX_E2E_NODE_PIDS' }, async () => {
  const sbx = await Sandbox.create('base', { metadata: { suite: tag }, timeoutMs: 120_000 })
  created.push(sbx)
  await sbx.commands.run(counter)
  const started = await advances(sbx, 5)
  await sbx.files.write('/home/user/before.txt', 'written before pause')
  const pid = await pythonPid(sbx)
  const snap = await sbx.createSnapshot({ name: `snap-${Date.now()}` })
  const home = await nodeOf(sbx.sandboxId)
  assert.ok(home >= 0, 'served by a node')
  const before = await count(sbx)
  assert.equal(await sbx.pause(), true)
  process.kill(pids[home], 'SIGKILL')
  // Until its lease runs out the front still sends the sandbox to the dead
  // node (502); then to the other, which takes it over.
  let info
  for (let i = 0; i < 100 && !info; i++) {
    info = await Sandbox.getInfo(sbx.sandboxId).catch(() => undefined)
    if (!info) await sleep(200)
  }
  assert.equal(info?.state, 'paused', 'paused, with its node dead')
  // The other node takes it over by itself: listed as paused through the front.
  let listed = []
  for (let i = 0; i < 50 && !listed.some((s) => s.sandboxId === sbx.sandboxId); i++) {
    listed = await Sandbox.list({ query: { state: ['paused'], metadata: { suite: tag } } }).nextItems()
    if (!listed.some((s) => s.sandboxId === sbx.sandboxId)) await sleep(200)
  }
  assert.ok(listed.some((s) => s.sandboxId === sbx.sandboxId), 'listed as paused after its node died')

  const t0 = Date.now()
  const back = await Sandbox.connect(sbx.sandboxId)
  const took = Date.now() - t0
  assert.equal(await nodeOf(sbx.sandboxId), 1 - home, 'resumed on the other node')
  const n = await advances(back, before)
  assert.ok(n < before + 200, `counter ${n} ran on while paused (from ${before})`)
  assert.equal(await pythonPid(back), pid, 'the same process runs')
  assert.equal(await back.files.read('/home/user/before.txt'), 'written before pause')
  assert.equal((await back.getInfo()).state, 'running')
  console.log(`resumed on the other node (connect) in ${took} ms`)

  const from = await Sandbox.create(snap.snapshotId, { metadata: { suite: tag }, timeoutMs: 60_000 })
  created.push(from)
  assert.equal(await nodeOf(from.sandboxId), 1 - home)
  assert.equal(await from.files.read('/home/user/before.txt'), 'written before pause')
  await advances(from, started)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
})
