// TTI through the official e2b SDK, the way the public sandbox benchmarks
// measure it: Sandbox.create() until the first command's output arrived,
// then kill. Usage (daemon running, E2B_API_URL/E2B_SANDBOX_URL/E2B_API_KEY set):
//   node test/e2e/bench/tti.mjs [N] [command]
import { Sandbox } from 'e2b'

const n = Number(process.argv[2] || 20)
const cmd = process.argv[3] || 'true'
const tti = []
const kills = []
let errors = 0
for (let i = 0; i < n; i++) {
  const t0 = performance.now()
  try {
    const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })
    await sbx.commands.run(cmd)
    tti.push(performance.now() - t0)
    const t1 = performance.now()
    await sbx.kill()
    kills.push(performance.now() - t1)
  } catch (e) {
    errors++
    console.error(e.message)
  }
}
const q = (a, p) => {
  const s = [...a].sort((x, y) => x - y)
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1) : 'n/a'
}
console.log(JSON.stringify({ n, cmd, errors, tti_p50_ms: q(tti, 0.5), tti_p95_ms: q(tti, 0.95), kill_p50_ms: q(kills, 0.5) }))
process.exit(errors ? 1 : 0)
