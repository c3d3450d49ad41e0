// Runs sbx bench and the SDK TTI script in a short mode against the daemon
// started by test/e2e/daemon/run.sh, so the benchmarks cannot rot. The
// figures of record are in docs/BENCHMARKS.md.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'

test('sbx bench (short)', () => {
  const out = execFileSync('bin/sbx', ['bench', '--n', '3', '--stagger', '3', '--every', '20ms', '--burst', '3', '--rtt', '5', '--idle', '5', '--json',
    '--url', process.env.E2B_API_URL, '--api-key', process.env.E2B_API_KEY], { encoding: 'utf8' })
  const res = JSON.parse(out)
  for (const p of res.phases) assert.equal(p.errors, 0, `${p.name}: ${p.first_error}`)
  assert.equal(res.idle.started, 5, res.idle.first_error)
  assert.ok(res.idle.cgroup_mib_per_sandbox > 0, 'idle memory measured')
})

test('SDK TTI script (short)', () => {
  const out = execFileSync('node', ['test/e2e/bench/tti.mjs', '5'], { encoding: 'utf8' })
  assert.equal(JSON.parse(out).errors, 0)
})
