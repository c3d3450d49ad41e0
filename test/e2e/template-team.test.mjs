// End-to-end: "bring your own environment" as a team writes it with the
// official e2b SDK's Template builder, against a real `sbx serve`, offline:
// an app template on the built-in base (copyItems with user and mode,
// makeDir, makeSymlink, rename, remove, gitClone of a repository on a file
// path, setEnvs, setWorkdir, setUser, runCmd as root, a start command with
// waitForPort, cpuCount/memoryMB), a child of it built with fromTemplate that
// sets no start command (it inherits the parent's, as on E2B), a child that
// sets its own (waitForTimeout), a worker whose start command is waited for
// with waitForProcess and waitForFile, a ready command alone (setReadyCmd),
// waitForURL, tags with skipCache, fromDockerfile and fromImage. Then
// Sandbox.create(alias) and what a team checks: env, user, workdir, files,
// the start command running. Run through
//   test/e2e/daemon/run.sh runsc test/e2e/template-team.test.mjs
// It starts test/e2e/registry (SBX_E2E_REGISTRY_BIN: a prebuilt binary of
// it, else `go run`). aptInstall/npmInstall need egress: SBX_E2E_EGRESS=1 with
// SBX_E2E_SERVE_FLAGS='--uplink auto'. SBX_E2E_VERBOSE=1 prints every build
// log entry.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Template, Sandbox, BuildError, waitForPort, waitForFile, waitForProcess, waitForTimeout, waitForURL } from 'e2b'
import { startRegistry } from './registry/spawn.mjs'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const prefix = `team-${runtime}-${Date.now().toString(36)}`
const verbose = !!process.env.SBX_E2E_VERBOSE
const BUILD_MS = 4 * 60_000

const sandboxes = []
const built = new Set()
let ctx // the team's project directory: the build context
let registry // the loopback registry of test/e2e/registry, for fromImage and fromDockerfile

const SERVER = `import http.server, json, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"env": os.environ.get("APP_ENV"), "cwd": os.getcwd(), "uid": os.getuid()}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("0.0.0.0", 8080), H).serve_forever()
`

before(() => {
  ctx = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-team-ctx-'))
  mkdirSync(path.join(ctx, 'app'))
  mkdirSync(path.join(ctx, 'scripts'))
  writeFileSync(path.join(ctx, 'app/server.py'), SERVER)
  writeFileSync(path.join(ctx, 'app/config.json'), '{"name":"team-app"}\n')
  writeFileSync(path.join(ctx, 'app/README.tmp'), 'readme\n')
  writeFileSync(path.join(ctx, 'scripts/healthcheck.sh'), '#!/bin/sh\necho healthy\n')
})

before(async () => { registry = await startRegistry({ verbose }) }, { timeout: 660_000 })

after(async () => {
  for (const s of sandboxes) await s.kill().catch(() => {})
  for (const n of [...built].reverse()) await Sandbox.deleteSnapshot(n).catch(() => {}) // DELETE /templates/{name}
  if (ctx) rmSync(ctx, { recursive: true, force: true })
  await registry?.stop()
})

async function build(template, name, opts = {}) {
  built.add(name)
  const logs = []
  try {
    const info = await Template.build(template, name, {
      onBuildLogs: (e) => {
        logs.push(e)
        if (verbose) console.log(`[${name}] ${e.level} ${e.message}`)
      },
      ...opts,
    })
    return { info, logs }
  } catch (e) {
    throw new Error(`build of ${name} failed: ${e.name}: ${e.message}\n${logs.map((l) => `  ${l.message}`).join('\n')}`, { cause: e })
  }
}

async function create(name) {
  const sbx = await Sandbox.create(name, { timeoutMs: 300_000 })
  sandboxes.push(sbx)
  return sbx
}

async function sh(sbx, cmd, opts) {
  try {
    return (await sbx.commands.run(cmd, opts)).stdout
  } catch (e) {
    if (e.exitCode === undefined) throw e
    throw new Error(`\`${cmd}\` exited ${e.exitCode}: ${e.stdout} ${e.stderr}`, { cause: e })
  }
}

const app = `${prefix}-app`
const appTemplate = () => Template({ fileContextPath: ctx })
  .fromTemplate('base')
  .setEnvs({ APP_ENV: 'production', APP_HOME: '/app' })
  // a repository the team vendors, served from a file path (no internet)
  .runCmd('git init -q -b main /tmp/upstream && cd /tmp/upstream && echo v1 > VERSION && git add VERSION && git -c user.email=t@e -c user.name=t commit -qm v1')
  .makeDir('/app', { user: 'root' })
  .runCmd('chown user:user /app', { user: 'root' })
  .copyItems([
    { src: 'app/', dest: '/app/' },
    { src: 'scripts/healthcheck.sh', dest: '/usr/local/bin/healthcheck', user: 'root', mode: 0o755 },
  ])
  .makeDir(['/app/data', '/app/logs'], { mode: 0o750 })
  .gitClone('file:///tmp/upstream', '/app/vendor', { branch: 'main', depth: 1 })
  .makeSymlink('/app/config.json', '/home/user/config.json')
  .rename('/app/README.tmp', '/app/README.md')
  .runCmd('mkdir -p /app/junk && touch /app/junk/x')
  .remove('/app/junk', { recursive: true, force: true })
  .setWorkdir('/app')
  .runCmd('echo "$APP_ENV $(whoami) $(pwd)" > /app/built-with')
  .setStartCmd('python3 /app/server.py > /app/logs/server.log 2>&1', waitForPort(8080))

test(`${runtime}: a team's app template: files, env, user, workdir, start command`, { timeout: BUILD_MS }, async () => {
  const { info, logs } = await build(appTemplate(), app, { cpuCount: 2, memoryMB: 1024 })
  assert.ok(info.templateId && info.buildId, JSON.stringify(info))
  assert.ok(logs.length > 5, 'few build logs')
  assert.equal(await Template.exists(app), true)
  assert.equal(await Template.aliasExists(app), true)
  assert.equal((await Template.getBuildStatus(info)).status, 'ready')

  const sbx = await create(app)
  const inf = await sbx.getInfo()
  assert.equal(inf.templateId, info.templateId)
  assert.equal(inf.cpuCount, 2)
  assert.equal(inf.memoryMB, 1024)
  // the start command is up at create
  const res = JSON.parse(await sh(sbx, 'curl -sS --max-time 5 http://localhost:8080/'))
  assert.deepEqual([res.env, res.cwd, res.uid], ['production', '/app', 1000])
  assert.equal(await sh(sbx, 'whoami; pwd; echo $APP_ENV $APP_HOME'), 'user\n/app\nproduction /app\n')
  assert.equal(await sh(sbx, 'cat /app/built-with'), 'production user /app\n')
  assert.equal(await sh(sbx, 'cat /app/config.json /home/user/config.json'), '{"name":"team-app"}\n'.repeat(2))
  assert.equal(await sh(sbx, 'readlink /home/user/config.json'), '/app/config.json\n')
  assert.equal(await sh(sbx, 'cat /app/README.md; test ! -e /app/README.tmp && test ! -e /app/junk && echo gone'), 'readme\ngone\n')
  assert.equal(await sh(sbx, 'stat -c "%U %a" /app/server.py /app/data /app/logs /usr/local/bin/healthcheck'),
    'user 644\nuser 750\nuser 750\nroot 755\n')
  assert.equal(await sh(sbx, 'healthcheck'), 'healthy\n')
  assert.equal(await sh(sbx, 'cat /app/vendor/VERSION; git -C /app/vendor rev-parse --abbrev-ref HEAD'), 'v1\nmain\n')
  assert.match(await sh(sbx, 'ps -eo user,args'), /^user\s+python3 \/app\/server.py$/m)
})

test(`${runtime}: a child built fromTemplate(app) with no start command inherits the parent's (as E2B)`, { timeout: BUILD_MS }, async () => {
  const child = `${prefix}-child`
  await build(Template().fromTemplate(app).runCmd('echo child > /app/child.txt').setEnvs({ ROLE: 'child' }).setWorkdir('/tmp'), child)
  const sbx = await create(child)
  assert.equal(await sh(sbx, 'cat /app/child.txt; whoami; pwd; echo $APP_ENV $ROLE'), 'child\nuser\n/tmp\nproduction child\n')
  // the inherited start command runs in the parent's workdir, not the child's
  const res = JSON.parse(await sh(sbx, 'curl -sS --max-time 5 http://localhost:8080/'))
  assert.deepEqual([res.env, res.cwd, res.uid], ['production', '/app', 1000])
  assert.match(await sh(sbx, 'ps -eo user,args'), /^user\s+python3 \/app\/server.py$/m)

  // a grandchild that sets its own start command runs that one, not the parent's
  const own = `${prefix}-own`
  await build(Template().fromTemplate(child).setStartCmd('python3 -m http.server 9090 --directory /app', waitForTimeout(1_000)), own)
  const sbx2 = await create(own)
  await new Promise((r) => setTimeout(r, 1000))
  assert.match(await sh(sbx2, 'curl -sS --max-time 5 http://localhost:9090/child.txt'), /^child$/m)
  assert.doesNotMatch(await sh(sbx2, 'ps -eo args'), /server\.py/)
})

test(`${runtime}: a worker: a start command waited for with waitForProcess (sudo inside), waitForFile`, { timeout: BUILD_MS }, async () => {
  const worker = `${prefix}-worker`
  const t = Template().fromTemplate('base')
    .setUser('root')
    .runCmd('cp /bin/sleep /usr/local/bin/queue-worker')
    .setWorkdir('/srv')
    .setUser('user')
    .setStartCmd('sudo sh -c "echo started > /srv/worker.state; exec queue-worker infinity"', waitForProcess('queue-worker'))
  await build(t, worker)
  const sbx = await create(worker)
  assert.match(await sh(sbx, 'pgrep -a queue-worker'), /queue-worker infinity/)
  assert.equal(await sh(sbx, 'cat /srv/worker.state; pwd; whoami'), 'started\n/srv\nuser\n')

  const filed = `${prefix}-filed`
  await build(Template().fromTemplate('base')
    .setStartCmd('sleep 1 && echo ok > /tmp/ready && sleep infinity', waitForFile('/tmp/ready')), filed)
  const sbx2 = await create(filed)
  assert.equal(await sh(sbx2, 'cat /tmp/ready'), 'ok\n') // ready at create
})

test(`${runtime}: tags and skipCache on a child: app-child:v1, :v2, create from each`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-tagged`
  const t = (v) => Template().fromTemplate(app).runCmd(`echo ${v} > /app/version`)
  const v1 = await build(t('v1'), `${name}:v1`)
  assert.ok(v1.info.tags.includes('v1'), JSON.stringify(v1.info))
  const v2 = await build(t('v2').skipCache(), `${name}:v2`)
  assert.notEqual(v2.info.buildId, v1.info.buildId)
  assert.equal(v2.info.templateId, v1.info.templateId)
  const tags = (await Template.getTags(name)).map((x) => x.tag).sort()
  assert.ok(tags.includes('v1') && tags.includes('v2'), `tags ${tags}`)
  for (const v of ['v1', 'v2']) {
    const sbx = await create(`${name}:${v}`)
    assert.equal(await sh(sbx, 'cat /app/version'), `${v}\n`)
    assert.equal(JSON.parse(await sh(sbx, 'curl -sS --max-time 5 http://localhost:8080/')).env, 'production')
  }
})

test(`${runtime}: setReadyCmd alone, and waitForURL`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-ready`
  await build(Template().fromTemplate('base').runCmd('echo ok > /tmp/flag').setReadyCmd(waitForFile('/tmp/flag')), name)
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'cat /tmp/flag'), 'ok\n')
  const url = `${prefix}-url`
  await build(Template().fromTemplate('base')
    .setStartCmd('mkdir -p /tmp/www && echo up > /tmp/www/health && cd /tmp/www && python3 -m http.server 7000', waitForURL('http://localhost:7000/health')), url)
  const sbx2 = await create(url)
  assert.equal(await sh(sbx2, 'curl -sS --max-time 5 http://localhost:7000/health'), 'up\n')
})

test(`${runtime}: fromDockerfile as E2B converts it: RUN as root, COPY ownership, USER, WORKDIR, ENV, CMD as the start command`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-docker`
  const dockerfile = [
    `FROM ${registry.addr}/sbx-test/debian:bookworm`,
    'ENV APP_PORT=8081 MODE=docker',
    'RUN mkdir -p /srv/app && id -un > /srv/app/run-as',
    'COPY app/config.json /srv/app/config.json',
    'COPY --chown=user:user app/README.tmp /srv/app/README',
    'WORKDIR /srv/app',
    'USER user',
    'COPY app/server.py /srv/app/server.py',
    'CMD ["python3", "-m", "http.server", "8081"]',
  ].join('\n')
  await build(Template({ fileContextPath: ctx }).fromDockerfile(dockerfile), name)
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'whoami; pwd; echo $APP_PORT $MODE; cat run-as'), 'user\n/srv/app\n8081 docker\nroot\n')
  // E2B's conversion starts with USER root: a COPY before USER user is
  // root's, one after it user's (E2B's COPY owner is the current user)
  assert.equal(await sh(sbx, 'stat -c %U config.json README server.py'), 'root\nuser\nuser\n')
  assert.match(await sh(sbx, 'curl -sS --max-time 5 http://localhost:8081/'), /server\.py/)
})

test(`${runtime}: fromImage of the registry: a plain Debian image gets user, sudo and the app`, { timeout: BUILD_MS }, async () => {
  const name = `${prefix}-image`
  await build(Template({ fileContextPath: ctx }).fromImage(`${registry.addr}/sbx-test/debian-nouser:1`)
    .copy('app/config.json', '/home/user/config.json')
    .runCmd('sudo -n true && echo sudo-ok > /home/user/sudo'), name, { memoryMB: 768 })
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'whoami; stat -c %U /home/user/config.json; cat /home/user/sudo'), 'user\nuser\nsudo-ok\n')
  assert.equal((await sbx.getInfo()).memoryMB, 768)
})

test(`${runtime}: fromBaseImage() (Docker Hub's e2bdev/base) without Docker Hub: a quick BuildError naming fromTemplate('base')`, { timeout: BUILD_MS }, async () => {
  const t0 = Date.now()
  const err = await Template.build(Template().fromBaseImage().runCmd('true'), `${prefix}-hub`).then(() => null, (e) => e)
  built.add(`${prefix}-hub`)
  if (err === null) return // this host reaches Docker Hub: E2B's own base image built
  assert.ok(err instanceof BuildError, `${err?.stack}`)
  assert.match(err.message, /fromTemplate\('base'\)/)
  assert.ok(Date.now() - t0 < 60_000, `took ${Date.now() - t0} ms`)
})

// aptInstall and npmInstall need the Debian mirror and the npm registry:
// with SBX_E2E_EGRESS=1 and a daemon given egress
// (SBX_E2E_SERVE_FLAGS='--uplink auto'); pipInstall needs PyPI.
const egress = process.env.SBX_E2E_EGRESS === '1' ? false : 'needs SBX_E2E_EGRESS=1 and SBX_E2E_SERVE_FLAGS=--uplink auto'

test(`${runtime}: aptInstall, npmInstall (global and in the workdir) with egress`, { timeout: 2 * BUILD_MS, skip: egress }, async () => {
  const name = `${prefix}-pkgs`
  await build(Template().fromTemplate('base')
    .aptInstall(['jq'], { noInstallRecommends: true })
    .setWorkdir('/home/user/proj')
    .runCmd('npm init -y >/dev/null')
    .npmInstall(['left-pad'])
    .npmInstall(['is-number'], { g: true }), name)
  const sbx = await create(name)
  assert.equal(await sh(sbx, 'echo \'{"a":7}\' | jq .a'), '7\n')
  assert.equal(await sh(sbx, 'node -e "console.log(require(\'left-pad\')(\'x\', 3))"'), '  x\n')
  assert.equal(await sh(sbx, 'stat -c %U node_modules/left-pad/package.json; pwd'), 'user\n/home/user/proj\n')
  assert.equal(await sh(sbx, 'node -e "console.log(require(\'is-number\')(5))"', { envs: { NODE_PATH: '/usr/local/lib/node_modules:/usr/lib/node_modules' } }), 'true\n')
})
