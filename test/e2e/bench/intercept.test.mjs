// Throughput of HTTPS through the egress interceptor (a sandbox whose
// network.rules name api.test: the daemon ends TLS, injects the header and
// re-encrypts) against the same download not intercepted (the guard only
// splices the TCP stream), from curl inside the sandbox, upstream in its own
// netns. Issue 17's target: >= 0.7x. Run: test/e2e/secrets/run.sh runsc
// test/e2e/bench/intercept.test.mjs (prints one JSON line).
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'

const runs = Number(process.env.SBX_BENCH_RUNS || 7)
const made = []
after(async () => { for (const s of made) await s.kill().catch(() => {}) })

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

test('interceptor throughput vs a spliced stream (8 MiB, curl in the sandbox)', async () => {
  assert.ok(process.env.SBX_E2E_UPSTREAM_IP, 'run through test/e2e/secrets/run.sh')
  const rules = { 'api.test': [{ transform: { headers: { 'X-Bench': 'on' } } }] }
  const direct = await Sandbox.create('base', { network: { allowOut: ['api.test'] } })
  made.push(direct)
  const via = await Sandbox.create('base', { network: { allowOut: ['api.test'], rules } })
  made.push(via)
  const speed = async (sbx) => {
    const r = await sbx.commands.run("curl -sk -o /dev/null -w '%{http_code} %{size_download} %{speed_download}' https://api.test/big", { timeoutMs: 60_000 })
    const [code, size, bps] = r.stdout.trim().split(' ')
    assert.equal(code, '200', r.stdout)
    assert.equal(Number(size), 8 << 20, r.stdout)
    return Number(bps) / (1 << 20)
  }
  const d = [], v = []
  for (let i = 0; i < runs; i++) { d.push(await speed(direct)); v.push(await speed(via)) } // alternating
  const res = { runtime: process.env.SBX_E2E_RUNTIME, runs, direct_mib_s: +median(d).toFixed(1), intercepted_mib_s: +median(v).toFixed(1), ratio: +(median(v) / median(d)).toFixed(2) }
  console.log(JSON.stringify(res))
  assert.ok(res.direct_mib_s > 0 && res.intercepted_mib_s > 0)
})
