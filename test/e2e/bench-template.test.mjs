// Runs the template benchmark (test/e2e/bench/template.mjs) against the daemon
// started by test/e2e/daemon/run.sh, in its quick mode by default, so it cannot
// rot: it must complete without error; timings are not asserted (the figures
// of record are in docs/BENCHMARKS.md).
//   test/e2e/daemon/run.sh runsc test/e2e/bench-template.test.mjs
// With SBX_E2E_REGISTRY_BIN set (scripts/test.sh sets it) the script starts the
// registry, on a free port unless SBX_BENCH_REGISTRY says otherwise.
// SBX_BENCH_TEMPLATE_ARGS replaces the arguments (default --quick), e.g. "--n 20"
// for the full run; the script's report is printed either way.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'

test('template benchmark (quick)', { timeout: 30 * 60_000 }, () => {
  const args = (process.env.SBX_BENCH_TEMPLATE_ARGS || '--quick').split(/\s+/).filter(Boolean)
  const env = { ...process.env }
  if (env.SBX_E2E_REGISTRY_BIN && !env.SBX_BENCH_REGISTRY) env.SBX_BENCH_REGISTRY = '127.0.0.1:0'
  const r = spawnSync('node', ['test/e2e/bench/template.mjs', ...args], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'] })
  process.stderr.write(r.stdout + r.stderr)
  assert.equal(r.status, 0, `template.mjs exited ${r.status}:\n${r.stderr}`)
  const lines = r.stdout.trim().split('\n')
  const res = JSON.parse(lines[lines.length - 1])
  assert.equal(res.error, undefined)
  for (const k of ['first_build_ms', 'cached_image_build_ms', 'rebuild_p50_ms', 'tti_custom_p50_ms', 'tti_base_p50_ms']) {
    assert.ok(res[k] > 0, `${k} measured: ${JSON.stringify(res)}`)
  }
})
