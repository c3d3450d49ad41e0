// The API front's overhead, measured through test/e2e/cluster/run.sh:
//   test/e2e/cluster/run.sh crun test/e2e/bench-cluster.test.mjs
// Creates alternate between a node directly and the front (16 pairs);
// GET /sandboxes/{id} and commands.run('true') alternate between the
// sandbox's node and the front. Prints the p50s; SBX_BENCH_ROUNDS scales
// the counts (default 1; CI runs the default so the script cannot rot).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'

const nodes = process.env.SBX_E2E_NODE_URLS.split(' ')
const front = process.env.E2B_API_URL
const key = process.env.E2B_API_KEY
const rounds = Number(process.env.SBX_BENCH_ROUNDS || 1)
const p50 = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]

async function timed(fn) {
  const t0 = performance.now()
  const v = await fn()
  return [performance.now() - t0, v]
}

async function create(url) {
  const r = await fetch(`${url}/sandboxes`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ templateID: 'base', timeout: 120 }) })
  const j = await r.json()
  assert.equal(r.status, 201, JSON.stringify(j))
  return j.sandboxID
}

async function get(url, id) {
  const r = await fetch(`${url}/sandboxes/${id}`, { headers: { 'X-API-Key': key } })
  await r.text()
  assert.equal(r.status, 200)
}

test('front overhead: create, API call, command round trip (p50)', async () => {
  const d = [], f = [], gd = [], gf = [], cd = [], cf = [], ids = []
  try {
    for (let i = 0; i < 16 * rounds; i++) {
      const [td, a] = await timed(() => create(nodes[i % 2])); d.push(td); ids.push(a)
      const [tf, b] = await timed(() => create(front)); f.push(tf); ids.push(b)
    }
    for (let i = 0; i < 200 * rounds; i++) {
      gd.push((await timed(() => get(nodes[0], ids[0])))[0])
      gf.push((await timed(() => get(front, ids[0])))[0])
    }
    const viaNode = await Sandbox.connect(ids[0], { apiUrl: nodes[0], sandboxUrl: nodes[0] })
    const viaFront = await Sandbox.connect(ids[0], { apiUrl: front, sandboxUrl: front })
    for (let i = 0; i < 35 * rounds; i++) {
      const [a] = await timed(() => viaNode.commands.run('true'))
      const [b] = await timed(() => viaFront.commands.run('true'))
      if (i >= 5) { cd.push(a); cf.push(b) } // the first few warm the connections
    }
    console.log(`create p50: node ${p50(d).toFixed(1)} ms, front ${p50(f).toFixed(1)} ms; ` +
      `GET /sandboxes/{id} p50: node ${p50(gd).toFixed(2)} ms, front ${p50(gf).toFixed(2)} ms; ` +
      `commands.run p50: node ${p50(cd).toFixed(2)} ms, front ${p50(cf).toFixed(2)} ms`)
  } finally {
    for (const id of ids) await fetch(`${front}/sandboxes/${id}`, { method: 'DELETE', headers: { 'X-API-Key': key } })
  }
})
