// End-to-end: template builds with the official e2b SDK's Template builder
// against a real `sbx serve`, from images on a loopback registry. Run through
//   test/e2e/daemon/run.sh <runtime> test/e2e/template.test.mjs
// which starts the daemon and sets E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY.
// This file starts the test registry (test/e2e/registry/spawn.mjs: images
// made from the base template's rootfs; SBX_E2E_REGISTRY_BIN,
// SBX_E2E_REGISTRY_ADDR and SBX_E2E_REGISTRY_ROOTFS as it says).
// SBX_E2E_VERBOSE=1 prints every build log entry; SBX_E2E_ONLY=<regexp> runs
// only the tests whose name matches.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Template, Sandbox, BuildError, waitForPort } from 'e2b'
import { startRegistry } from './registry/spawn.mjs'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const prefix = `e2e-${runtime}-${Date.now()}`
// the registry's host:port (startRegistry: by default a free port, for
// concurrent runs on one host)
let REG
const API = process.env.E2B_API_URL
const KEY = process.env.E2B_API_KEY
const verbose = !!process.env.SBX_E2E_VERBOSE
const HELLO = 'hello from the build context\n'

const BUILD_MS = 6 * 60_000 // one build on gVisor takes 30-90 s; some tests build three times
const FAIL_MS = 120_000 // a failing build must fail at least this quickly

const sandboxes = []
const names = new Set()
let registry // startRegistry's { addr, stop, stderr() }
let ctx // the build context: fixtures/hello.txt, hello.txt

// ---- helpers ------------------------------------------------------------------

function fmtLogs(logs) {
  return logs.map((e) => `  [${e.level}] ${e.message}`).join('\n')
}

// the entries onBuildLogs gets from the SDK itself, not from the server
const sdkEntry = /^(Build started|Requesting build for template|Template created with ID|Uploaded '|Skipping upload of|All file uploads completed|Starting building|Waiting for logs|Build finished)/
const serverLogs = (logs) => logs.filter((e) => !sdkEntry.test(e.message))
// the server accepted the build request (POST /v3/templates): a failure after
// that is the build's, not a missing endpoint's
const accepted = (logs) => logs.some((e) => /^Template created with ID/.test(e.message))

// build runs Template.build as a user would and keeps the log entries; on a
// failure the error gets .logs and .ms.
async function build(template, name, opts = {}) {
  names.add(name.split(':')[0])
  const logs = []
  const t0 = Date.now()
  try {
    const info = await Template.build(template, name, {
      onBuildLogs: (e) => {
        logs.push(e)
        if (verbose) console.log(`[${name}] ${e.level} ${e.message}`)
      },
      ...opts,
    })
    return { info, logs, ms: Date.now() - t0 }
  } catch (e) {
    e.logs = logs
    e.ms = Date.now() - t0
    throw e
  }
}

// mustBuild is build for a build that has to succeed: its error says why.
async function mustBuild(template, name, opts) {
  try {
    return await build(template, name, opts)
  } catch (e) {
    if (!e.logs) throw e
    throw new Error(`build of ${name} failed after ${e.ms} ms: ${e.name}: ${e.message}\n${fmtLogs(e.logs)}`, { cause: e })
  }
}

// expectBuildError: the build fails quickly with a BuildError whose message
// (or, failing that, its logs) matches re.
async function expectBuildError(template, name, re, maxMs = FAIL_MS) {
  let err
  try {
    const r = await build(template, name)
    assert.fail(`${name} built (${r.info.buildId}) but should have failed:\n${fmtLogs(r.logs)}`)
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e
    err = e
  }
  assert.ok(err instanceof BuildError, `want a BuildError, got ${err?.name}: ${err?.stack}`)
  assert.ok(err.ms < maxMs, `the failure took ${err.ms} ms`)
  assert.ok(accepted(err.logs), `the build request itself failed: ${err.message}`)
  assert.ok(err.message && err.message !== 'Unknown error', `unhelpful message ${JSON.stringify(err.message)}`)
  const text = `${err.message}\n${fmtLogs(serverLogs(err.logs))}`
  assert.match(text, re, `message and logs do not match ${re}:\n${text}`)
  return err
}

async function create(name, opts = {}) {
  const sbx = await Sandbox.create(name, { timeoutMs: 300_000, metadata: { suite: prefix }, ...opts })
  sandboxes.push(sbx)
  return sbx
}

// sh runs cmd in sbx and returns its stdout; a failure says what ran and
// what it printed.
async function sh(sbx, cmd, opts) {
  try {
    return (await sbx.commands.run(cmd, opts)).stdout
  } catch (e) {
    if (e.exitCode === undefined) throw e
    throw new Error(`\`${cmd}\` exited ${e.exitCode}: stdout ${JSON.stringify(e.stdout)} stderr ${JSON.stringify(e.stderr)}`, { cause: e })
  }
}

function api(p, init = {}) {
  return fetch(API + p, { ...init, headers: { 'X-API-Key': KEY, ...(init.headers || {}) } })
}

// templateID resolves a template name through the alias endpoint (null: none).
async function templateID(name) {
  const res = await api(`/templates/aliases/${encodeURIComponent(name)}`)
  if (res.status !== 200) return null
  return (await res.json()).templateID ?? null
}

// assertSudo: user has passwordless sudo in the image (sudoers.d/user) and
// it works, as on E2B (no_new_privs is off; the root it reaches is the
// sandbox's own: docs/SECURITY.md "sudo inside sandboxes").
async function assertSudo(sbx) {
  assert.match(await sh(sbx, 'cat /etc/sudoers.d/user', { user: 'root' }), /^user\s+ALL=\(ALL(:ALL)?\)\s*NOPASSWD:\s*ALL$/m)
  assert.equal(await sh(sbx, 'sudo -n id -u', { user: 'user' }), '0\n')
}

async function daemonStillWorks() {
  const sbx = await create('base')
  assert.equal(await sh(sbx, 'echo alive'), 'alive\n')
  await sbx.kill()
}

function debian(opts) {
  return Template({ fileContextPath: ctx, ...opts }).fromImage(`${REG}/sbx-test/debian:bookworm`)
}

// ---- the registry -----------------------------------------------------------------

before(async () => {
  ctx = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-template-ctx-'))
  mkdirSync(path.join(ctx, 'fixtures'))
  writeFileSync(path.join(ctx, 'fixtures/hello.txt'), HELLO)
  writeFileSync(path.join(ctx, 'hello.txt'), HELLO)
  registry = await startRegistry({ verbose })
  REG = registry.addr
}, { timeout: 660_000 })

after(async () => {
  for (const s of sandboxes) await s.kill().catch(() => {})
  for (const n of names) {
    const id = await templateID(n).catch(() => null)
    if (id) await api(`/templates/${id}`, { method: 'DELETE' }).catch(() => {})
  }
  if (registry) await registry.stop()
  if (ctx) rmSync(ctx, { recursive: true, force: true })
})

// tst is test, skipped unless its name matches SBX_E2E_ONLY (when set).
const only = process.env.SBX_E2E_ONLY ? new RegExp(process.env.SBX_E2E_ONLY) : null
function tst(name, opts, fn) {
  if (only && !only.test(name)) opts = { ...opts, skip: 'not in SBX_E2E_ONLY' }
  return test(name, opts, fn)
}

// ---- tests --------------------------------------------------------------------------

tst(`${runtime}: fromImage + runCmd, setEnvs, setWorkdir, copy, setUser: the sandbox has all of it`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-a`
  const t = debian()
    .runCmd('echo "$(whoami) $(pwd)" > /tmp/default-ctx')
    .runCmd('echo hi > /opt/a && pip --version || true', { user: 'root' })
    .setEnvs({ FOO: 'bar' })
    .runCmd('echo "$FOO" > /tmp/foo-at-build')
    .setWorkdir('/srv')
    .copy('fixtures/hello.txt', '/srv/hello.txt')
    .setUser('user')
    .runCmd('whoami > /tmp/who; pwd > /tmp/where')
  const { info, logs } = await mustBuild(t, name)
  assert.equal(info.name, name)
  assert.ok(info.templateId && info.buildId, JSON.stringify(info))
  const status = await Template.getBuildStatus(info)
  assert.equal(status.status, 'ready')
  assert.equal(status.buildID, info.buildId)
  assert.ok(status.logEntries.length > 0, 'the server sent no build log entries')
  assert.ok(logs.length > status.logEntries.length, 'onBuildLogs saw fewer entries than the server has')
  assert.equal(await Template.exists(name), true)

  const sbx = await create(name)
  assert.equal(await sh(sbx, 'cat /opt/a'), 'hi\n')
  assert.equal(await sh(sbx, 'echo $FOO'), 'bar\n')
  assert.equal(await sh(sbx, 'cat /tmp/foo-at-build'), 'bar\n')
  assert.equal(await sh(sbx, 'pwd'), '/srv\n')
  assert.equal(await sh(sbx, 'cat /srv/hello.txt'), HELLO)
  assert.equal(await sh(sbx, 'whoami; id -u'), 'user\n1000\n')
  assert.equal(await sh(sbx, 'cat /tmp/who /tmp/where'), 'user\n/srv\n')
  // before setUser/setWorkdir a step runs as E2B documents it (user in
  // /home/user, not the image's user in its WorkingDir as Docker would)
  assert.equal(await sh(sbx, 'cat /tmp/default-ctx'), 'user /home/user\n')
  await assertSudo(sbx)
  assert.equal(await sh(sbx, 'whoami', { user: 'root' }), 'root\n')
})

tst(`${runtime}: an unchanged rebuild is all cached; skipCache() runs the steps again`, { timeout: 3 * BUILD_MS }, async () => {
  const name = `${prefix}-b`
  const make = (skip) => {
    const t = Template({ fileContextPath: ctx })
    return (skip ? t.skipCache() : t).fromImage(`${REG}/sbx-test/debian:bookworm`)
      .runCmd('date +%s%N > /opt/stamp', { user: 'root' })
      .copy('hello.txt', '/opt/hello.txt', { user: 'root' })
      .runCmd('cat /opt/stamp /opt/hello.txt > /opt/both', { user: 'root' })
  }
  const stamp = async () => {
    const sbx = await create(name)
    const s = await sh(sbx, 'cat /opt/stamp')
    assert.equal(await sh(sbx, 'cat /opt/both'), s + HELLO)
    await sbx.kill()
    return s
  }
  const first = await mustBuild(make(false), name)
  const s1 = await stamp()

  const second = await mustBuild(make(false), name)
  assert.notEqual(second.info.buildId, first.info.buildId)
  const s2 = await stamp()
  assert.equal(s2, s1, 'the rebuild ran `date` again: its step was not cached')
  const server = (await Template.getBuildStatus(second.info)).logEntries
  const cached = server.filter((e) => /cache/i.test(e.message))
  // loose: the server says so in its log, or the build was much quicker
  assert.ok(cached.length > 0 || second.ms < first.ms / 2,
    `no log entry mentions the cache and the rebuild took ${second.ms} ms (first ${first.ms} ms):\n${fmtLogs(server)}`)

  const third = await mustBuild(make(true), name)
  const s3 = await stamp()
  assert.notEqual(s3, s1, `skipCache() rebuild reused the cached step:\n${fmtLogs(third.logs)}`)
})

tst(`${runtime}: fromImage without a user: the build adds user (uid 1000, /home/user, sudo)`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-c`
  await mustBuild(Template().fromImage(`${REG}/sbx-test/debian-nouser:1`), name)
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'whoami; id -u; id -u user'), 'user\n1000\n1000\n')
  assert.equal(await sh(sbx, 'getent passwd user | cut -d: -f6; test -d /home/user && echo dir'), '/home/user\ndir\n')
  assert.equal(await sh(sbx, 'pwd'), '/home/user\n')
  await assertSudo(sbx)
})

tst(`${runtime}: busybox (no bash, no python, no user): a working sandbox or a clear BuildError`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-d`
  assert.ok(!registry.stderr().includes('no sbx-test/busybox:1'), `the registry has no busybox image (apt-get install -y busybox-static):\n${registry.stderr()}`)
  const t = Template().fromImage(`${REG}/sbx-test/busybox:1`).runCmd('echo built > /built', { user: 'root' })
  let r
  try {
    r = await build(t, name)
  } catch (e) {
    assert.ok(e instanceof BuildError, `want a BuildError, got ${e?.stack}`)
    assert.ok(accepted(e.logs), `the build request itself failed: ${e.message}`)
    assert.ok(e.ms < 5 * 60_000, `took ${e.ms} ms`)
    // sbx documents: a template needs /bin/bash (commands.run uses it)
    assert.match(e.message, /bash|shell/i, `unhelpful message ${JSON.stringify(e.message)}`)
    console.log(`busybox build failed (accepted): ${e.message}`)
    await daemonStillWorks()
    return
  }
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'echo ok'), 'ok\n')
  assert.equal(await sh(sbx, 'cat /built'), 'built\n')
  assert.match(await sh(sbx, 'readlink /bin/sh'), /busybox/)
  console.log(`busybox build succeeded in ${r.ms} ms`)
})

tst(`${runtime}: fromTemplate('base') in the background: getBuildStatus, the layer and base's tools`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-e`
  names.add(name)
  const t = Template().fromTemplate('base').runCmd('echo layered > /layered', { user: 'root' })
  const info = await Template.buildInBackground(t, name)
  assert.ok(info.templateId && info.buildId, JSON.stringify(info))
  const seen = new Set()
  const logs = []
  let st
  for (const deadline = Date.now() + BUILD_MS - 60_000; ;) {
    st = await Template.getBuildStatus(info, { logsOffset: logs.length })
    seen.add(st.status)
    logs.push(...st.logEntries)
    if (st.status === 'ready' || st.status === 'error') break
    assert.ok(Date.now() < deadline, `still ${st.status} after polling:\n${fmtLogs(logs)}`)
    await new Promise((r) => setTimeout(r, 500))
  }
  assert.equal(st.status, 'ready', `${st.reason?.message}\n${fmtLogs(logs)}`)
  for (const s of seen) assert.ok(['waiting', 'building', 'ready'].includes(s), `status ${s}`)
  assert.ok(logs.length > 0, 'no log entries through logsOffset paging')
  const all = await Template.getBuildStatus(info)
  assert.ok(all.logEntries.length >= logs.length, `offset 0 has ${all.logEntries.length} entries, paging gave ${logs.length}`)

  const sbx = await create(name)
  assert.equal(await sh(sbx, 'cat /layered'), 'layered\n')
  assert.match(await sh(sbx, 'python3 -c "print(6*7)"; node -e "console.log(1+1)"; whoami'), /^42\n2\nuser\n$/)
})

tst(`${runtime}: setStartCmd + waitForPort: the server already answers right after create`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-f`
  const t = debian().setStartCmd('python3 -m http.server 8000', waitForPort(8000))
  await mustBuild(t, name)
  const sbx = await create(name)
  const diag = async () => sh(sbx, 'ps -eo pid,user,args; ss -tlnp', { user: 'root' }).catch((e) => e.message)
  const get = (what) => sbx.commands.run('curl -sS --max-time 5 http://localhost:8000/').then((r) => r.stdout,
    async (e) => assert.fail(`${what}: curl exited ${e.exitCode}: ${e.stderr}\n${await diag()}`))
  assert.match(await get('right after create'), /Directory listing/)
  await new Promise((r) => setTimeout(r, 3000)) // and it keeps running
  assert.match(await get('3 s after create'), /Directory listing/)
  assert.match(await sh(sbx, 'ps -eo user,args'), /^user\s+python3 -m http.server 8000$/m)
})

tst(`${runtime}: fromDockerfile (FROM the registry, RUN, ENV, WORKDIR, COPY)`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-g`
  const dockerfile = [
    `FROM ${REG}/sbx-test/debian:bookworm`,
    'RUN echo docker > /opt/d && id -u > /opt/run-uid',
    'ENV BAR=baz',
    'WORKDIR /app',
    'COPY hello.txt /app/hello.txt',
    'RUN cat /app/hello.txt > /app/copy-seen-by-run && echo "$BAR" > /app/bar-at-build',
  ].join('\n')
  await mustBuild(Template({ fileContextPath: ctx }).fromDockerfile(dockerfile), name)
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'cat /opt/d /opt/run-uid'), 'docker\n0\n') // a Dockerfile's RUN is root
  assert.equal(await sh(sbx, 'cat /app/hello.txt'), HELLO)
  assert.equal(await sh(sbx, 'cat /app/copy-seen-by-run /app/bar-at-build'), HELLO + 'baz\n')
  assert.equal(await sh(sbx, 'echo $BAR; pwd; whoami'), 'baz\n/app\nuser\n') // the SDK ends with USER user
})

tst(`${runtime}: exists, tags: assignTags, create from name:tag, removeTags`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-h`
  assert.equal(await Template.exists('base'), true)
  assert.equal(await Template.exists(`${prefix}-nope-${Math.random().toString(36).slice(2)}`), false)
  assert.equal(await Template.exists(name), false)
  const { info } = await mustBuild(Template().fromTemplate('base').runCmd('echo v1 > /version', { user: 'root' }), `${name}:v1`)
  assert.equal(info.name, `${name}:v1`)
  assert.ok(info.tags.includes('v1'), `tags ${info.tags}`)
  assert.equal(await Template.exists(name), true)

  const assigned = await Template.assignTags(`${name}:v1`, ['prod'])
  assert.equal(assigned.buildId, info.buildId)
  assert.ok(assigned.tags.includes('prod'), `tags ${assigned.tags}`)
  const tags = (await Template.getTags(info.templateId)).map((x) => x.tag)
  assert.ok(tags.includes('v1') && tags.includes('prod'), `getTags: ${tags}`)
  const sbx = await create(`${name}:prod`)
  assert.equal(await sh(sbx, 'cat /version'), 'v1\n')
  assert.equal((await sbx.getInfo()).templateId, info.templateId)

  await Template.removeTags(name, ['prod'])
  assert.ok(!(await Template.getTags(info.templateId)).some((x) => x.tag === 'prod'), 'prod still listed')
  await assert.rejects(create(`${name}:prod`))
  const again = await create(`${name}:v1`)
  assert.equal(await sh(again, 'cat /version'), 'v1\n')
})

tst(`${runtime}: a tag missing from the registry fails clearly and quickly`, { timeout: BUILD_MS }, async () => {
  await expectBuildError(Template().fromImage(`${REG}/sbx-test/debian:no-such-tag`), `${prefix}-i-tag`,
    /no-such-tag|not found|unknown/i)
  await daemonStillWorks()
})

tst(`${runtime}: an image for another platform only fails clearly`, { timeout: BUILD_MS }, async () => {
  await expectBuildError(Template().fromImage(`${REG}/sbx-test/arm64only:1`), `${prefix}-i-arm`,
    /platform|arm64|amd64|architecture/i)
  await daemonStillWorks()
})

tst(`${runtime}: a private image needs credentials: without them a clear error, with them it builds`, { timeout: 2 * BUILD_MS }, async () => {
  const ref = `${REG}/private/debian:1`
  await expectBuildError(Template().fromImage(ref), `${prefix}-i-priv`,
    /unauthori[sz]ed|401|auth|credential|denied/i)
  await expectBuildError(Template().fromImage(ref, { username: 'u', password: 'wrong' }), `${prefix}-i-priv`,
    /unauthori[sz]ed|401|auth|credential|denied/i)
  const name = `${prefix}-i-priv-ok`
  await mustBuild(Template().fromImage(ref, { username: 'u', password: 'p' }).runCmd('echo private > /opt/p', { user: 'root' }), name)
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'cat /opt/p; whoami'), 'private\nuser\n')
})

tst(`${runtime}: a failing step fails the build with its exit code, and the daemon keeps working`, { timeout: BUILD_MS }, async () => {
  const t = debian().runCmd('echo step-one', { user: 'root' }).runCmd('echo about to fail; exit 7')
  const err = await expectBuildError(t, `${prefix}-i-exit`, /\b7\b/)
  assert.doesNotMatch(err.message, /^Unknown/)
  await daemonStillWorks()
})

// the daemon's --build-step-timeout, when run.sh was given one
// (SBX_E2E_SERVE_FLAGS): only then is a runaway step's bound short enough to test
const stepTimeout = (() => {
  const m = /--build-step-timeout[= ](\d+)(ms|s|m)\b/.exec(process.env.SBX_E2E_SERVE_ARGS || '')
  return m ? Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[m[2]] : 0
})()

tst(`${runtime}: a step that never ends is stopped at --build-step-timeout`, {
  timeout: BUILD_MS,
  skip: stepTimeout > 0 && stepTimeout <= 120_000 ? false : 'needs sbx serve --build-step-timeout <= 2m (SBX_E2E_SERVE_FLAGS)',
}, async () => {
  const t = debian().runCmd('echo sleeping; sleep 100000', { user: 'root' })
  await expectBuildError(t, `${prefix}-i-forever`, /did not finish|time(d)? ?out/i, stepTimeout + 90_000)
  await daemonStillWorks()
})

tst(`${runtime}: a multi-layer image: layer order, whiteouts and opaque directories`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-k`
  await mustBuild(Template().fromImage(`${REG}/sbx-test/multi:1`), name)
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'cat /opt/marker'), 'top\n')
  assert.equal(await sh(sbx, 'ls -A /opt/dir'), 'c\n')
  assert.equal(await sh(sbx, 'test -e /opt/gone || echo no-gone; test -e /etc/motd || echo no-motd'), 'no-gone\nno-motd\n')
  assert.equal(await sh(sbx, 'test -f /etc/debian_version && whoami'), 'user\n')
})

tst(`${runtime}: DELETE /templates/{id}: 204, then it is gone`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-j`
  const { info } = await mustBuild(Template().fromTemplate('base').runCmd('echo j > /j', { user: 'root' }), name)
  const list = await (await api('/templates')).json()
  assert.ok(Array.isArray(list) && list.some((x) => x.templateID === info.templateId),
    `GET /templates lacks ${info.templateId}: ${JSON.stringify(list).slice(0, 500)}`)
  const one = await api(`/templates/${info.templateId}`)
  assert.equal(one.status, 200)

  const del = await api(`/templates/${info.templateId}`, { method: 'DELETE' })
  assert.equal(del.status, 204, await del.text())
  assert.equal(await Template.exists(name), false)
  await assert.rejects(create(name))
  assert.equal((await api(`/templates/${info.templateId}`)).status, 404)
  const listed = await (await api('/templates')).json()
  assert.ok(!listed.some((x) => x.templateID === info.templateId), 'still listed after DELETE')
})

tst(`${runtime}: runCmd runs with bash as on E2B; a step's stderr is an error-level build log entry`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-l`
  const t = Template().fromTemplate('base').skipCache()
    .runCmd('[[ -n "$BASH_VERSION" ]] && set -o pipefail && mkdir -p /opt/b/{x,y} && echo "$((2**5))" > /opt/b/n', { user: 'root' })
    .runCmd('echo to-stdout; echo to-stderr >&2')
  const { logs } = await mustBuild(t, name)
  const level = (m) => logs.find((e) => e.message.endsWith(m))?.level
  assert.equal(level('to-stdout'), 'info', fmtLogs(logs))
  assert.equal(level('to-stderr'), 'error', fmtLogs(logs))
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'ls /opt/b; cat /opt/b/n'), 'n\nx\ny\n32\n')
})
