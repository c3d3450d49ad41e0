// Template build and template TTI benchmark through the official e2b SDK
// (Template builder, Sandbox), against a daemon started by
// test/e2e/daemon/run.sh (or any daemon: E2B_API_URL/E2B_SANDBOX_URL/E2B_API_KEY)
// and the loopback test registry (test/e2e/registry).
//   node test/e2e/bench/template.mjs [--quick] [--n N] [--rebuilds R]
// Measures, client side (Template.build / Sandbox.create wall time):
//   a. a first build of fromImage(<reg>/sbx-test/debian:bookworm) + 3 small
//      steps (runCmd; setEnvs + runCmd; copy of a small file from the build
//      context), whether the image's layer was pulled or already in the daemon's
//      layer store (the build log says which), then a second template with 3
//      different small steps from the now-cached image (the target row);
//   b. R rebuilds of that unchanged second template, every step cached (median);
//   c. TTI, Sandbox.create → commands.run('echo ok') output received, from the
//      custom template and from 'base', interleaved, N each after one untimed
//      warm-up create of each, p50/p95 and the ratio custom / base.
// Every step carries a per-run nonce, so (a) never hits the step cache of an
// earlier run. N defaults to 20, R to 10; --quick is N=3, R=2 (CI).
// Env: SBX_BENCH_REGISTRY the registry's host:port (default 127.0.0.1:5077);
// with SBX_E2E_REGISTRY_BIN set this script starts that binary on it (rootfs
// SBX_E2E_REGISTRY_ROOTFS, default <SBX_DATA_DIR or /var/lib/sbx>/templates/base/rootfs),
// else the registry must already serve there. SBX_E2E_RUNTIME names the
// daemon's default runtime in the report (run.sh sets it).
// Prints human lines, then one JSON line (the last line of stdout). Exits 1
// on any error; every sandbox it made is killed and the templates deleted.
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Template, Sandbox } from 'e2b'
import { startRegistry } from '../registry/spawn.mjs'

const argv = process.argv.slice(2)
const flag = (f) => argv.includes(f)
const opt = (f, d) => {
  const i = argv.indexOf(f)
  return i >= 0 && argv[i + 1] !== undefined ? Number(argv[i + 1]) : d
}
const quick = flag('--quick')
const N = opt('--n', quick ? 3 : 20)
const R = opt('--rebuilds', quick ? 2 : 10)
let REG = process.env.SBX_BENCH_REGISTRY || '127.0.0.1:5077'
const API = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const runtime = process.env.SBX_E2E_RUNTIME || 'unknown (the daemon default; SBX_E2E_RUNTIME unset)'
const nonce = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const say = (s) => console.log(s)

const sandboxes = new Set()
const names = new Set()
let registry
let ctx

// ---- helpers ----------------------------------------------------------------

const q = (a, p) => {
  const s = [...a].sort((x, y) => x - y)
  return s.length ? +s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1) : null
}
const ms = (x) => (x === null ? 'n/a' : `${x.toFixed(1)} ms`)

// attachRegistry starts SBX_E2E_REGISTRY_BIN on REG (registry/spawn.mjs), or
// checks that a registry already serves there.
async function attachRegistry() {
  if (process.env.SBX_E2E_REGISTRY_BIN) {
    process.env.SBX_E2E_REGISTRY_ADDR = REG
    registry = await startRegistry()
    REG = registry.addr
    return
  }
  const r = await fetch(`http://${REG}/v2/`).catch((e) => e)
  if (r instanceof Error || r.status >= 500) {
    throw new Error(`no registry at ${REG} (${r.message || r.status}): start bin/sbx-test-registry --addr ${REG}, or set SBX_E2E_REGISTRY_BIN`)
  }
}

function api(p, init = {}) {
  return fetch(API + p, { ...init, headers: { 'X-API-Key': KEY, ...(init.headers || {}) } })
}

// build runs Template.build and returns its wall time and the log entries.
async function build(t, name) {
  names.add(name)
  const logs = []
  const t0 = performance.now()
  try {
    const info = await Template.build(t, name, { onBuildLogs: (e) => logs.push(e) })
    return { info, logs, ms: performance.now() - t0 }
  } catch (e) {
    const tail = logs.slice(-30).map((x) => `  [${x.level}] ${x.message}`).join('\n')
    throw new Error(`build of ${name} failed after ${(performance.now() - t0).toFixed(0)} ms: ${e.message}\n${tail}`, { cause: e })
  }
}

// imageState says from the server's log whether the base image was pulled.
function imageState(logs) {
  const m = logs.map((e) => e.message)
  if (m.some((x) => /\bpulling sha256:/.test(x))) return 'pulled'
  if (m.some((x) => /\bcached sha256:/.test(x))) return 'cached'
  return 'unknown'
}
const stepsCached = (logs) => logs.filter((e) => /cache/i.test(e.message) && !/^(Build started|Requesting|Template created|Uploaded|Skipping|All file|Starting|Waiting|Build finished)/.test(e.message)).length

// tti creates a sandbox of name and runs `echo ok`: the time until its output
// arrived. The sandbox is killed afterwards (not timed).
async function tti(name) {
  const t0 = performance.now()
  const sbx = await Sandbox.create(name, { timeoutMs: 120_000, metadata: { bench: `template-${nonce}` } })
  sandboxes.add(sbx)
  try {
    const r = await sbx.commands.run('echo ok')
    const dt = performance.now() - t0
    if (r.stdout !== 'ok\n') throw new Error(`${name}: echo ok printed ${JSON.stringify(r.stdout)}`)
    return dt
  } finally {
    await sbx.kill().catch(() => {})
    sandboxes.delete(sbx)
  }
}

// ---- run --------------------------------------------------------------------

const out = { runtime, registry: REG, nonce, quick, n: N, rebuilds: R }
let failed = false
try {
  if (!API || !KEY) throw new Error('E2B_API_URL and E2B_API_KEY must be set (test/e2e/daemon/run.sh sets them)')
  ctx = mkdtempSync(path.join(tmpdir(), 'sbx-bench-template-ctx-'))
  writeFileSync(path.join(ctx, 'small-a.txt'), `a ${nonce}\n`)
  writeFileSync(path.join(ctx, 'small-b.txt'), `b ${nonce}\n`)
  await attachRegistry()
  out.registry = REG
  const image = `${REG}/sbx-test/debian:bookworm`
  say(`runtime ${runtime}, registry ${REG}, N=${N}, rebuilds=${R}, nonce ${nonce}`)

  // (a) first build, then a second template with other steps from the cached image
  const nameA = `bench-tpl-${nonce}-a`
  const tA = Template({ fileContextPath: ctx }).fromImage(image)
    .runCmd(`echo ${nonce} > /opt/bench-a`, { user: 'root' })
    .setEnvs({ BENCH_A: nonce }).runCmd('echo "$BENCH_A" > /tmp/bench-a-env')
    .copy('small-a.txt', '/tmp/small-a.txt')
  const a = await build(tA, nameA)
  out.first_build_ms = +a.ms.toFixed(0)
  out.first_build_image = imageState(a.logs)
  say(`first build, fromImage + 3 steps (image ${out.first_build_image}): ${(a.ms / 1000).toFixed(2)} s`)

  const nameB = `bench-tpl-${nonce}-b`
  const makeB = () => Template({ fileContextPath: ctx }).fromImage(image)
    .runCmd(`echo ${nonce} > /opt/bench-b`, { user: 'root' })
    .setEnvs({ BENCH_B: nonce }).runCmd('echo "$BENCH_B" > /tmp/bench-b-env')
    .copy('small-b.txt', '/tmp/small-b.txt')
  const b = await build(makeB(), nameB)
  out.cached_image_build_ms = +b.ms.toFixed(0)
  out.cached_image_build_image = imageState(b.logs)
  say(`build from the cached image + 3 other steps (image ${out.cached_image_build_image}): ${(b.ms / 1000).toFixed(2)} s (target ≤ 15 s)`)

  // (b) unchanged rebuilds
  const rebuilds = []
  for (let i = 0; i < R; i++) {
    const r = await build(makeB(), nameB)
    if (i === 0) out.rebuild_cache_log_entries = stepsCached(r.logs)
    rebuilds.push(r.ms)
  }
  out.rebuild_ms = rebuilds.map((x) => +x.toFixed(0))
  out.rebuild_p50_ms = q(rebuilds, 0.5)
  say(`unchanged rebuild, all cached, p50 of ${R}: ${ms(out.rebuild_p50_ms)} (min ${ms(Math.min(...rebuilds))}, max ${ms(Math.max(...rebuilds))}) (target ≤ 1 s)`)

  // (c) TTI custom vs base, interleaved, after one warm-up each
  out.warmup_custom_ms = +(await tti(nameB)).toFixed(1)
  out.warmup_base_ms = +(await tti('base')).toFixed(1)
  const custom = []
  const base = []
  for (let i = 0; i < N; i++) {
    if (i % 2 === 0) { custom.push(await tti(nameB)); base.push(await tti('base')) }
    else { base.push(await tti('base')); custom.push(await tti(nameB)) }
  }
  out.tti_custom_p50_ms = q(custom, 0.5)
  out.tti_custom_p95_ms = q(custom, 0.95)
  out.tti_base_p50_ms = q(base, 0.5)
  out.tti_base_p95_ms = q(base, 0.95)
  out.tti_ratio_p50 = +(out.tti_custom_p50_ms / out.tti_base_p50_ms).toFixed(3)
  say(`first create (warm-up, untimed below): custom ${ms(out.warmup_custom_ms)}, base ${ms(out.warmup_base_ms)}`)
  say(`TTI create → 'echo ok' output, ${N} each, interleaved: custom p50 ${ms(out.tti_custom_p50_ms)} p95 ${ms(out.tti_custom_p95_ms)}; base p50 ${ms(out.tti_base_p50_ms)} p95 ${ms(out.tti_base_p95_ms)}; custom/base p50 ${out.tti_ratio_p50}× (target within 10 %)`)
} catch (e) {
  failed = true
  out.error = e.message
  console.error(e.stack || e.message)
} finally {
  for (const s of sandboxes) await s.kill().catch(() => {})
  for (const n of names) {
    try {
      const r = await api(`/templates/aliases/${encodeURIComponent(n)}`)
      const id = r.status === 200 ? (await r.json()).templateID : null
      if (id) await api(`/templates/${id}`, { method: 'DELETE' })
    } catch {}
  }
  await registry?.stop()
  if (ctx) rmSync(ctx, { recursive: true, force: true })
}
console.log(JSON.stringify(out))
process.exit(failed ? 1 : 0)
