// What a sandbox's first command costs against its later ones, in the
// sandbox's own CPU time (its cgroup's usage: Sentry, gofer and app under
// runsc; the processes under crun), which a loaded machine distorts far
// less than wall time. Run on the daemon's machine as root:
//   node test/e2e/bench/firstcmd.mjs [N]   (E2B_API_URL/E2B_SANDBOX_URL/E2B_API_KEY set)
// Each of N sandboxes: create → commands.run('true') (first) → 5 more
// (later) → kill. Prints medians of CPU ms and wall ms per command.
import { Sandbox } from 'e2b'
import { readFileSync } from 'node:fs'

const n = Number(process.argv[2] || 8)
// usage is the sandbox cgroup's CPU time in ms (cgroup v1 or v2).
function usage (id) {
  try {
    return Number(readFileSync(`/sys/fs/cgroup/cpuacct/sbx/${id}/cpuacct.usage`, 'utf8')) / 1e6
  } catch {
    const stat = readFileSync(`/sys/fs/cgroup/sbx/${id}/cpu.stat`, 'utf8')
    return Number(/usage_usec (\d+)/.exec(stat)[1]) / 1e3
  }
}
const med = a => Number([...a].sort((x, y) => x - y)[Math.floor(a.length / 2)].toFixed(1))
const cpu = { first: [], later: [] }
const wall = { first: [], later: [] }
async function timed (sbx, kind) {
  const u = usage(sbx.sandboxId); const t = performance.now()
  await sbx.commands.run('true')
  wall[kind].push(performance.now() - t); cpu[kind].push(usage(sbx.sandboxId) - u)
}
for (let i = 0; i < n; i++) {
  const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })
  await timed(sbx, 'first')
  for (let k = 0; k < 5; k++) await timed(sbx, 'later')
  await sbx.kill()
  await new Promise(resolve => setTimeout(resolve, 300)) // let the pool refill
}
console.log(JSON.stringify({ n, first_cpu_ms: med(cpu.first), later_cpu_ms: med(cpu.later), first_wall_ms: med(wall.first), later_wall_ms: med(wall.later) }))
