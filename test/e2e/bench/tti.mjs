// TTI through the official e2b SDK, the way the public sandbox benchmarks
// measure it: Sandbox.create() until the first command's output arrived,
// then kill. Usage (daemon running, E2B_API_URL/E2B_SANDBOX_URL/E2B_API_KEY set):
//   node test/e2e/bench/tti.mjs [N] [command]
// It reports the runtime the sandboxes ran on (sbx's GET /sandboxes/{id})
// and, measured in the same run on this machine, that runtime's floor
// (`sbx bench --floor-only`: bare `<runtime> run` of the template's rootfs,
// `bash -l -c true` from a running shell) with the TTI's ratios to it.
// SBX_BENCH_FLOOR=0 skips the floor (a daemon on another machine).
import { Sandbox } from 'e2b'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const n = Number(process.argv[2] || 20)
const cmd = process.argv[3] || 'true'
const floorRuns = Number(process.env.SBX_BENCH_FLOOR ?? 15)
const tti = []
const kills = []
let errors = 0
let runtime
for (let i = 0; i < n; i++) {
  const t0 = performance.now()
  try {
    const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })
    await sbx.commands.run(cmd)
    tti.push(performance.now() - t0)
    runtime ??= await runtimeOf(sbx.sandboxId)
    const t1 = performance.now()
    await sbx.kill()
    kills.push(performance.now() - t1)
  } catch (e) {
    errors++
    console.error(e.message)
  }
}

// runtimeOf asks the daemon which runtime a sandbox runs on (sbx extension).
async function runtimeOf (id) {
  const res = await fetch(`${process.env.E2B_API_URL}/sandboxes/${id}`, { headers: { 'X-API-Key': process.env.E2B_API_KEY } })
  return (await res.json()).runtime
}

// floor measures the runtime's floor with the sbx CLI of this checkout.
function floor (rt) {
  if (!rt || floorRuns <= 0) return undefined
  const sbx = fileURLToPath(new URL('../../../bin/sbx', import.meta.url))
  const out = execFileSync(sbx, ['bench', '--floor-only', '--runtime', rt, '--floor', String(floorRuns), '--json'], { encoding: 'utf8' })
  return JSON.parse(out).floor
}

const q = (a, p) => {
  const s = [...a].sort((x, y) => x - y)
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN
}
const fl = floor(runtime)
const r = v => Number(v.toFixed(1))
const ratio = (v, f) => Math.round(v / f * 100) / 100
const res = { n, cmd, runtime, errors, tti_p50_ms: r(q(tti, 0.5)), tti_p95_ms: r(q(tti, 0.95)), kill_p50_ms: r(q(kills, 0.5)) }
if (fl) {
  Object.assign(res, { floor_p50_ms: fl.p50_ms, tti_p50_floor_ratio: ratio(res.tti_p50_ms, fl.p50_ms), tti_p95_floor_ratio: ratio(res.tti_p95_ms, fl.p50_ms) })
}
console.log(JSON.stringify(res))
process.exit(errors || (fl && fl.error) ? 1 : 0)
