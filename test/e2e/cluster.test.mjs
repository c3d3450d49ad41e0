// End-to-end: the official e2b SDK against the API front of a three-node
// cluster (test/e2e/cluster/run.sh starts PostgreSQL, the nodes and the
// front, sets E2B_API_URL/E2B_SANDBOX_URL to the front, SBX_E2E_NODE_URLS
// to the nodes, SBX_E2E_NODE_FRONT_URL to node 3's own front, and
// SBX_E2E_CLUSTER_CTL to stop and start daemons). In order: 30 creates
// spread over the nodes; commands, files, an exposed port, list and kill
// through the front; a node playing both roles; kill -9 of node 2 (its
// sandboxes gone within two leases, the others unaffected, creates go on);
// node 2 restarted reconciles (nothing half-made, nothing left on the
// host); the front killed and restarted loses nothing.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import fs from 'node:fs'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Sandbox } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const nodes = process.env.SBX_E2E_NODE_URLS.split(' ')
const front = new URL(process.env.E2B_API_URL)
const key = process.env.E2B_API_KEY
const leaseMs = Number(process.env.SBX_E2E_LEASE) * 1000
const top = process.env.SBX_E2E_CLUSTER_TOP
const prefix = process.env.SBX_E2E_NET_PREFIX
const tag = `cluster-${runtime}-${Date.now()}`
const opts = { metadata: { suite: tag }, timeoutMs: 300_000 }
const live = new Map() // id -> Sandbox: what should exist now
const sleep = (ms) => new Promise((res) => setTimeout(res, ms))

after(async () => {
  for (const s of live.values()) await s.kill().catch(() => {})
})

// ctl stops or starts a daemon (0: the front; 1..3: a node) through run.sh.
async function ctl(action, i) {
  const [bin, ...args] = process.env.SBX_E2E_CLUSTER_CTL.split(' ')
  await promisify(execFile)(bin, [...args, action, String(i)])
}

// onNode returns the ids of this suite's sandboxes a node serves (asked directly).
async function onNode(url) {
  const r = await fetch(`${url}/v2/sandboxes?metadata=${encodeURIComponent(`suite=${tag}`)}`, { headers: { 'X-API-Key': key } })
  assert.equal(r.status, 200)
  return (await r.json()).map((s) => s.sandboxID)
}

async function listed(apiUrl = front.href) {
  const all = await Sandbox.list({ apiUrl, query: { metadata: { suite: tag } }, limit: 100 }).nextItems()
  return all.map((s) => s.sandboxId).sort()
}

// status is GET /sandboxes/{id}'s status through the front, on a connection of its own.
function status(id) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: front.hostname, port: front.port, path: `/sandboxes/${id}`, agent: false, headers: { 'X-API-Key': key } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    })
    req.on('error', reject)
  })
}

async function createN(n, conc = 6) {
  const out = []
  for (let i = 0; i < n; i += conc) {
    const made = await Promise.all(Array.from({ length: Math.min(conc, n - i) }, () => Sandbox.create('base', opts)))
    for (const s of made) live.set(s.sandboxId, s)
    out.push(...made)
  }
  return out
}

async function works(sbx) {
  const r = await sbx.commands.run('echo "$((6*7))" from $(hostname)')
  assert.equal(r.exitCode, 0)
  assert.match(r.stdout, /^42 from /)
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

// residue lists what of node i is left on the host beyond its idle state:
// links, netns, mounts of its data dir other than the run tmpfs, and
// processes naming one of ids.
async function residue(i, ids) {
  const sh = async (c) => (await promisify(execFile)('sh', ['-c', c])).stdout
  const left = []
  const links = (await sh('ip -o link')).split('\n').filter((l) => l.match(new RegExp(`^\\d+: ${prefix}${i}[a-z2-7]{12}[@:]`)))
  if (links.length) left.push(`links: ${links.length}`)
  const ns = fs.readdirSync('/run/netns').filter((n) => n.startsWith(`${prefix}${i}-`))
  if (ns.length) left.push(`netns: ${ns}`)
  const dir = `${top}/node${i}/`
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4] || '')
    .filter((m) => m.startsWith(dir) && m !== `${dir}run` && !m.endsWith('/null-netns'))
  if (mounts.length) left.push(`mounts: ${mounts}`)
  const ps = (await sh('ps -eo args')).split('\n').filter((l) => ids.some((id) => l.includes(id)))
  if (ps.length) left.push(`processes: ${ps}`)
  return left
}

let per // the ids each node serves after the 30 creates

test(`${runtime}: 30 creates through the front spread over the three nodes; each works through the front`, async () => {
  const made = await createN(30)
  per = await Promise.all(nodes.map(onNode))
  const counts = per.map((p) => p.length)
  console.log(`placement of 30 creates over 3 nodes: ${counts.join(' / ')}`)
  assert.equal(counts.reduce((a, b) => a + b), 30, `the nodes serve ${counts}`)
  for (const c of counts) assert.ok(c >= 5 && c <= 15, `30 creates placed ${counts}: not spread`)
  for (const ids of per) {
    const sbx = live.get(ids[0])
    await works(sbx)
    await sbx.files.write('/home/user/note.txt', `written to ${sbx.sandboxId}`)
    assert.equal(await sbx.files.read('/home/user/note.txt'), `written to ${sbx.sandboxId}`)
  }
  assert.deepEqual(await listed(), made.map((s) => s.sandboxId).sort())
})

test(`${runtime}: an exposed port through the front, by <port>-<id>.<domain>`, async () => {
  const sbx = live.get(per[0][1])
  await sbx.files.write('/home/user/www/hello.txt', 'hello through the front')
  await sbx.commands.run('cd /home/user/www && python3 -m http.server 8000', { background: true })
  let r
  for (let i = 0; i < 100; i++) {
    r = await getVia(sbx.getHost(8000))
    if (r.status === 200) break
    await sleep(100)
  }
  assert.equal(r.status, 200)
  assert.equal(r.body, 'hello through the front')
  assert.equal((await getVia(`8000-${'x'.repeat(20)}.${sbx.getHost(8000).split('.').slice(1).join('.')}`)).status, 502, 'an unknown sandbox: E2B\'s 502')
})

test(`${runtime}: kill through the front; the sandbox is gone on its node`, async () => {
  const [sbx] = await createN(1)
  await sbx.kill()
  live.delete(sbx.sandboxId)
  assert.equal(await sbx.isRunning(), false)
  for (const url of nodes) assert.ok(!(await onNode(url)).includes(sbx.sandboxId))
  await assert.rejects(Sandbox.connect(sbx.sandboxId))
})

test(`${runtime}: node 3 plays both roles: its own front reaches every node's sandboxes and places creates`, async () => {
  const nf = process.env.SBX_E2E_NODE_FRONT_URL
  const viaNode3 = { apiUrl: nf, sandboxUrl: nf }
  for (const ids of per) await works(await Sandbox.connect(ids[0], viaNode3))
  const made = await Promise.all(Array.from({ length: 3 }, () => Sandbox.create('base', { ...opts, ...viaNode3 })))
  for (const s of made) live.set(s.sandboxId, s)
  await works(made[0])
  assert.deepEqual(await listed(nf), await listed())
  assert.deepEqual(await listed(), [...live.keys()].sort())
})

let victims

test(`${runtime}: kill -9 of node 2: its sandboxes gone within two leases, the others unaffected, creates go on`, async () => {
  victims = await onNode(nodes[1])
  const survivors = [...live.values()].filter((s) => !victims.includes(s.sandboxId))
  // creates in flight when node 2 dies (placed on it before or after)
  const pending = Promise.allSettled(Array.from({ length: 9 }, () => Sandbox.create('base', opts)))
  await ctl('kill', 2)
  const t0 = performance.now()
  let stop = false
  const during = (async () => { // the rest of the cluster keeps working meanwhile
    let n = 0
    while (!stop) {
      const [s] = await createN(1)
      await works(s).catch((e) => assert.fail(`command on ${s.sandboxId}, made during the outage: ${e.message}`))
      const o = survivors[n++ % survivors.length]
      await works(o).catch((e) => assert.fail(`command on ${o.sandboxId}, made before: ${e.message}`))
    }
    return n
  })()
  during.catch(() => {}) // awaited below, after the polling
  let gone
  try {
    for (;;) {
      const st = await Promise.all(victims.map(status))
      if (st.every((s) => s === 404)) { gone = performance.now() - t0; break }
      assert.ok(st.every((s) => s === 200 || s === 404 || s === 502), `statuses ${st}`)
      assert.ok(performance.now() - t0 < 4 * leaseMs, `node 2's sandboxes still there after ${performance.now() - t0} ms`)
      await sleep(50)
    }
  } finally {
    stop = true
  }
  const rounds = await during
  console.log(`node 2 killed: its ${victims.length} sandboxes reported gone after ${gone.toFixed(0)} ms (lease ${leaseMs} ms); ${rounds} creates + commands meanwhile`)
  assert.ok(gone <= 2 * leaseMs, `gone after ${gone} ms > 2 leases`)
  assert.equal(await live.get(victims[0]).isRunning(), false)
  for (const id of victims) live.delete(id)
  for (const s of survivors) await works(s)
  // creates in flight when node 2 died: each either failed or exists on a
  // live node, or was made on node 2 and is gone with it
  const seen = { made: 0, lost: 0, failed: [] }
  for (const r of await pending) {
    if (r.status === 'rejected') { seen.failed.push(r.reason.message); continue }
    const id = r.value.sandboxId
    const st = await status(id)
    assert.ok(st === 200 || st === 404, `in-flight create ${id}: ${st}`)
    if (st === 200) { live.set(id, r.value); seen.made++ } else { victims.push(id); seen.lost++ }
  }
  console.log(`creates in flight at the kill: ${seen.made} made on a live node, ${seen.lost} made on node 2 and lost with it, ${seen.failed.length} failed ${JSON.stringify(seen.failed)}`)
  assert.deepEqual(await listed(), [...live.keys()].sort())
})

test(`${runtime}: node 2 restarts and reconciles: its lost sandboxes reaped, nothing half-made, nothing left on the host`, async () => {
  assert.ok((await residue(2, victims)).some((l) => l.startsWith('links')), 'node 2 killed -9 should leave its sandboxes running until it restarts')
  await ctl('start', 2)
  assert.deepEqual(await onNode(nodes[1]), [])
  let left
  for (let i = 0; i < 50; i++) {
    left = await residue(2, victims)
    if (left.length === 0) break
    await sleep(100)
  }
  assert.deepEqual(left, [], 'node 2 reconciled but left on the host')
  for (const id of victims) assert.equal(await status(id), 404)
  assert.deepEqual(await listed(), [...live.keys()].sort())
  const made = await createN(6)
  const on2 = await onNode(nodes[1])
  assert.ok(on2.length > 0, 'no create placed on the restarted node 2')
  await works(made.find((s) => on2.includes(s.sandboxId)))
})

test(`${runtime}: the API front killed -9 and started again: nothing lost`, async () => {
  const before = await listed()
  await ctl('kill', 0)
  await assert.rejects(Sandbox.list({ query: { metadata: { suite: tag } } }).nextItems())
  await ctl('start', 0)
  assert.deepEqual(await listed(), before)
  for (const url of nodes) await works(live.get((await onNode(url))[0]))
  const [s] = await createN(1)
  await works(s)
  assert.deepEqual(await listed(), [...live.keys()].sort())
})
