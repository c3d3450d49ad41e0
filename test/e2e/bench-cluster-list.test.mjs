// Listing many sandboxes across the three nodes of test/e2e/cluster/run.sh:
//   SBX_BENCH_LIST_N=999 test/e2e/cluster/run.sh crun test/e2e/bench-cluster-list.test.mjs
// Creates N real sandboxes through the front (default 30, so CI runs it
// quickly and it cannot rot), then times, 20 times each: the SDK's
// Sandbox.list paginator through the front until the last page (pages of
// 100), one page of 100 through the front, one page of 100 from a node
// directly, and the unpaged GET /sandboxes through the front. Prints the
// p50s; kills them all.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'

const nodes = process.env.SBX_E2E_NODE_URLS.split(' ')
const front = process.env.E2B_API_URL
const key = process.env.E2B_API_KEY
const n = Number(process.env.SBX_BENCH_LIST_N || 30)
const tag = `list-${Date.now()}`
const p50 = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]

async function create() {
  const r = await fetch(`${front}/sandboxes`, {
    method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ templateID: 'base', timeout: 1800, metadata: { suite: tag } }),
  })
  const j = await r.json()
  assert.equal(r.status, 201, JSON.stringify(j))
  return j.sandboxID
}

async function listAll() {
  const p = Sandbox.list({ query: { metadata: { suite: tag } }, limit: 100 })
  const ids = []
  while (p.hasNext) ids.push(...(await p.nextItems()).map((s) => s.sandboxId))
  return ids
}

async function page(url) {
  const r = await fetch(`${url}/v2/sandboxes?limit=100`, { headers: { 'X-API-Key': key } })
  const j = await r.json()
  assert.equal(r.status, 200)
  return j.length
}

// unpaged is the deprecated GET /sandboxes: every sandbox in one answer.
async function unpaged(url) {
  const r = await fetch(`${url}/sandboxes`, { headers: { 'X-API-Key': key } })
  const j = await r.json()
  assert.equal(r.status, 200)
  return j.length
}

async function timed(fn, times = 20) {
  const out = []
  for (let i = 0; i < times; i++) {
    const t0 = performance.now()
    await fn()
    out.push(performance.now() - t0)
  }
  return p50(out)
}

test(`list ${n} sandboxes across ${nodes.length} nodes through the front (p50)`, { timeout: 1_800_000 }, async () => {
  const ids = []
  try {
    const t0 = performance.now()
    for (let i = 0; i < n; i += 8) ids.push(...await Promise.all(Array.from({ length: Math.min(8, n - i) }, create)))
    const made = performance.now() - t0
    const all = await listAll()
    assert.deepEqual([...all].sort(), [...ids].sort())
    const full = await timed(listAll)
    const one = await timed(() => page(front))
    const direct = await timed(() => page(nodes[0]))
    assert.ok(await unpaged(front) >= n)
    const v1 = await timed(() => unpaged(front))
    console.log(`${n} sandboxes (made in ${(made / 1000).toFixed(1)} s): Sandbox.list to the last page through the front p50 ${full.toFixed(1)} ms ` +
      `(${Math.ceil(n / 100)} pages); one page of 100 through the front ${one.toFixed(1)} ms, from one node directly ${direct.toFixed(1)} ms; ` +
      `GET /sandboxes (all in one answer) through the front ${v1.toFixed(1)} ms`)
  } finally {
    for (let i = 0; i < ids.length; i += 8) {
      await Promise.all(ids.slice(i, i + 8).map((id) => fetch(`${front}/sandboxes/${id}`, { method: 'DELETE', headers: { 'X-API-Key': key } })))
    }
  }
})
