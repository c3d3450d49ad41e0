// Runs sbx bench and the SDK TTI script in a short mode against the daemon
// started by test/e2e/daemon/run.sh, so the benchmarks cannot rot: every
// phase names its runtime and the runtime's floor is measured in the same
// run (bare `<runtime> run` of the base rootfs; needs root, as the suite
// does). The figures of record are in docs/BENCHMARKS.md.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'

const rootfs = `${process.env.SBX_DATA_DIR || '/var/lib/sbx'}/templates/base/rootfs`

test('sbx bench (short)', () => {
  const out = execFileSync('bin/sbx', ['bench', '--n', '3', '--stagger', '3', '--every', '20ms', '--burst', '3', '--rtt', '5', '--idle', '5',
    '--floor', '3', '--floor-rootfs', rootfs, '--json', '--url', process.env.E2B_API_URL, '--api-key', process.env.E2B_API_KEY], { encoding: 'utf8' })
  const res = JSON.parse(out)
  assert.ok(['crun', 'runc', 'runsc'].includes(res.runtime), `runtime ${res.runtime}`)
  assert.equal(res.floor.error, undefined, res.floor.error)
  assert.ok(res.floor.p50_ms > 0 && res.floor.runtime === res.runtime, 'floor measured on the same runtime')
  for (const p of res.phases) {
    assert.equal(p.errors, 0, `${p.name}: ${p.first_error}`)
    assert.equal(p.runtime, res.runtime)
    assert.ok(p.p50_floor_ratio > 0, `${p.name}: ratio to the floor`)
  }
  assert.ok(res.phases.some(p => p.name === 'bash -l -c true round trip'), 'shell round trip measured')
  assert.equal(res.idle.started, 5, res.idle.first_error)
  assert.ok(res.idle.cgroup_mib_per_sandbox > 0, 'idle memory measured')
})

test('SDK TTI script (short)', () => {
  const out = execFileSync('node', ['test/e2e/bench/tti.mjs', '5'], { encoding: 'utf8', env: { ...process.env, SBX_BENCH_FLOOR: '3' } })
  const res = JSON.parse(out)
  assert.equal(res.errors, 0)
  assert.ok(res.runtime && res.floor_p50_ms > 0 && res.tti_p50_floor_ratio > 0, out)
})

test('the runsc floor leaves nothing mounted or behind', async () => {
  const { readFileSync, readdirSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const before = readdirSync(tmpdir()).filter(n => n.startsWith('sbx-floor-')).length
  const out = execFileSync('bin/sbx', ['bench', '--floor-only', '--runtime', 'runsc', '--floor', '2', '--floor-rootfs', rootfs, '--json'], { encoding: 'utf8' })
  assert.ok(JSON.parse(out).floor.p50_ms > 0, out)
  assert.ok(!readFileSync('/proc/self/mounts', 'utf8').includes('sbx-floor-'), 'a floor run left a mount (runsc pins a null netns in its --root)')
  assert.equal(readdirSync(tmpdir()).filter(n => n.startsWith('sbx-floor-')).length, before, 'a floor run left its directory')
})
