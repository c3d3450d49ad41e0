// runCode round trip in a warm python context through the daemon, with the
// official @e2b/code-interpreter SDK (issue 14's "runCode round trip, warm
// context" row). Against a running daemon (E2B_API_URL, E2B_SANDBOX_URL,
// E2B_API_KEY); the daemon's default runtime is what the SDK gets.
//   node test/e2e/bench/runcode.mjs [N]
import { Sandbox } from '@e2b/code-interpreter'

const n = Number(process.argv[2] || 100)
const sbx = await Sandbox.create('code-interpreter-v1', { timeoutMs: 300_000 })
try {
  await sbx.runCode('x = 1') // the context is warm from here on
  const t = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    const r = await sbx.runCode('1+1')
    t.push(performance.now() - t0)
    if (r.text !== '2') throw new Error(`runCode("1+1") gave ${JSON.stringify(r)}`)
  }
  t.sort((a, b) => a - b)
  const q = (p) => t[Math.min(n - 1, Math.floor(n * p))].toFixed(1)
  console.log(JSON.stringify({ n, p50_ms: Number(q(0.5)), p95_ms: Number(q(0.95)) }))
} finally {
  await sbx.kill()
}
