// End-to-end: a fourth round of E2B's own SDK tests (e2b-dev/E2B
// packages/js-sdk/tests and packages/python-sdk/tests, e2b-dev/code-interpreter
// js/tests), ported with their assertions unchanged where the target is local,
// and run with the official SDKs against a real `sbx serve`
// (test/e2e/daemon/run.sh). E2B's mock-server tests (emptyBodyStatus,
// listMetadataEncoding) are run here against the real API: what they pin is
// the SDK's answer to the API's status for each call, which sbx must give.
// Left out: cases that need the internet (internetAccess, network allow/deny of
// 1.1.1.1 and 8.8.8.8, the httpbin transform), Template.list and the resumable
// command streams (newer than the SDK pinned in package.json), template builds
// from Docker Hub images (fromBaseImage, ubuntu:22.04: template.test.mjs builds
// from a loopback registry), and the SDK-internal unit tests (writeQueue,
// abortSignal, configPropagation, resumableStream), which need no sandbox.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import {
  Sandbox, Template, SandboxNotFoundError, FilesystemEventType, waitForTimeout,
} from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'

import { runtime, created, wait, make } from './e2bfixture.mjs'

const origin = new URL(process.env.E2B_API_URL)

// get sends GET / to the daemon with the given Host.
function get(host) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: origin.hostname, port: origin.port, path: '/', headers: { Host: host } }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

test(`${runtime}: every API call on a missing sandbox id (emptyBodyStatus.test.ts, fork.test.ts)`, async () => {
  const sandboxId = 'missing-sandbox-id'
  assert.equal(await Sandbox.kill(sandboxId), false)
  assert.equal(await Sandbox.deleteSnapshot('missing-snapshot-id'), false)
  for (const f of [() => Sandbox.getInfo(sandboxId), () => Sandbox.getMetrics(sandboxId),
    () => Sandbox.setTimeout(sandboxId, 60_000), () => Sandbox.updateNetwork(sandboxId, {}),
    () => Sandbox.createSnapshot(sandboxId), () => Sandbox.connect(sandboxId), () => Sandbox.fork(sandboxId),
    () => Sandbox.pause(sandboxId)]) {
    await assert.rejects(f(), SandboxNotFoundError, f.toString())
  }
  // fork with count lower than 1 fails: E2B's newer SDK checks it before the
  // request (InvalidArgumentError); the pinned one leaves it to the API, whose
  // 400 it reports as a SandboxError, on a missing id too (E2B's API checks
  // the body before it looks the sandbox up), as a snapshot's bad name
  for (const f of [() => Sandbox.fork(sandboxId, { count: 0 }), () => Sandbox.fork('aaaaaaaaaaaaaaaaaaaa', { count: 0 })]) {
    await assert.rejects(f(), (e) => !(e instanceof SandboxNotFoundError) && e.statusCode === 400 && /count must be between 1/.test(e.message), f.toString())
  }
  await assert.rejects(Sandbox.createSnapshot('aaaaaaaaaaaaaaaaaaaa', { name: 'Not A Name!' }),
    (e) => !(e instanceof SandboxNotFoundError) && e.statusCode === 400)
  const live = await make()
  await assert.rejects(live.fork({ count: 0 }), /400: .*count must be between 1/)
  // fork a killed sandbox fails; pause of a paused one is false
  const killed = await make()
  await killed.kill()
  await assert.rejects(killed.fork(), SandboxNotFoundError)
  const paused = await make()
  assert.equal(await Sandbox.pause(paused.sandboxId), true)
  assert.equal(await Sandbox.pause(paused.sandboxId), false)
})

test(`${runtime}: fork by id with the static method (fork.test.ts)`, async () => {
  const sandbox = await make()
  await sandbox.files.write('/home/user/state.txt', 'state before fork')
  const forks = await Sandbox.fork(sandbox.sandboxId)
  assert.equal(forks.length, 1)
  const [fork] = forks
  assert.ok(fork instanceof Sandbox, String(fork))
  created.push(fork)
  assert.notEqual(fork.sandboxId, sandbox.sandboxId)
  assert.equal(await fork.isRunning(), true)
  assert.equal(await sandbox.isRunning(), true)
  assert.equal(await fork.files.read('/home/user/state.txt'), 'state before fork')
  await fork.files.write('/home/user/state.txt', 'modified in fork')
  assert.equal(await sandbox.files.read('/home/user/state.txt'), 'state before fork')
  await fork.kill()
})

test(`${runtime}: list by metadata whose keys and values need encoding (listMetadataEncoding.test.ts)`, async () => {
  const metadata = { 'team/slug!': 'hello & 100% 😀', version: `v=2-${randomUUID()}` }
  const sbx = await make({ metadata })
  const found = await Sandbox.list({ query: { metadata } }).nextItems()
  assert.deepEqual(found.map((s) => s.sandboxId), [sbx.sandboxId])
  assert.deepEqual(found[0].metadata, metadata)
  const none = await Sandbox.list({ query: { metadata: { ...metadata, 'team/slug!': 'hello & 100%' } } }).nextItems()
  assert.deepEqual(none, [])
})

test(`${runtime}: create with mcp leaves no sandbox behind; onTimeout null starts (create.test.ts, test_create.py)`, async () => {
  const metadata = { mcpGatewayCleanupTestId: randomUUID() }
  const query = { state: ['running'], metadata }
  await assert.rejects(Sandbox.create('base', { timeoutMs: 60_000, metadata, mcp: { invalid_server: {} } }))
  assert.deepEqual(await Sandbox.list({ query }).nextItems(), [])
  const sbx = await make({ timeoutMs: 10_000, lifecycle: { onTimeout: null } })
  assert.equal(await sbx.isRunning(), true)
  assert.equal((await sbx.getInfo()).lifecycle?.onTimeout, 'kill')
})

test(`${runtime}: pause and resume: env vars, a running and a finished process, an http server (snapshot.test.ts)`, async () => {
  const sandbox = await make({ envs: { TEST_VAR: 'sfisback' } })
  assert.equal((await sandbox.commands.run('echo "$TEST_VAR"')).stdout.trim(), 'sfisback')
  const cmd = await sandbox.commands.run('sleep 3600', { background: true })
  const expectedPid = cmd.pid
  const filename = 'test_long_running.txt'
  await sandbox.commands.run(`sleep 2 && echo "done" > /home/user/${filename}`, { background: true })
  assert.equal(await sandbox.files.exists(filename), false)
  await sandbox.commands.run('python3 -m http.server 8000', { background: true })
  let res
  for (let i = 0; i < 40 && res?.status !== 200; i++) {
    if (i) await wait(250)
    res = await get(sandbox.getHost(8000))
  }
  assert.equal(res.status, 200)

  await sandbox.pause()
  assert.equal(await sandbox.isRunning(), false)
  const resumed = await sandbox.connect()
  assert.equal(resumed.sandboxId, sandbox.sandboxId)
  assert.equal(await sandbox.isRunning(), true)
  assert.equal((await sandbox.commands.run('echo "$TEST_VAR"')).stdout.trim(), 'sfisback')
  const list = await sandbox.commands.list()
  assert.ok(list.some((c) => c.pid === expectedPid), JSON.stringify(list))
  const processInfo = await sandbox.commands.connect(expectedPid)
  assert.equal(typeof processInfo, 'object')
  assert.equal(processInfo.pid, expectedPid)
  await wait(2000)
  assert.equal(await sandbox.files.exists(filename), true)
  assert.equal((await sandbox.files.read(filename)).trim(), 'done')
  assert.equal((await get(sandbox.getHost(8000))).status, 200)
})

test(`${runtime}: a new file's watch events are CREATE, CHMOD, WRITE (python test_watch.py)`, async () => {
  const sandbox = await make()
  const dirname = 'test_watch_dir'
  const filename = 'test_watch.txt'
  await sandbox.files.makeDir(dirname)
  const events = []
  const handle = await sandbox.files.watchDir(dirname, (e) => events.push(e))
  await sandbox.files.write(`${dirname}/${filename}`, 'This file will be watched.')
  for (let i = 0; i < 50 && events.length < 3; i++) await wait(100)
  await wait(300)
  await handle.stop()
  assert.deepEqual(events.map((e) => [e.type, e.name]), [
    [FilesystemEventType.CREATE, filename], [FilesystemEventType.CHMOD, filename], [FilesystemEventType.WRITE, filename],
  ])
  // recursive: the first event names the file under its subdirectory
  await sandbox.files.makeDir('test_recursive_watch_dir/test_nested_watch_dir')
  const nested = []
  const h2 = await sandbox.files.watchDir('test_recursive_watch_dir', (e) => nested.push(e), { recursive: true })
  await sandbox.files.write('test_recursive_watch_dir/test_nested_watch_dir/test_watch.txt', 'x')
  for (let i = 0; i < 50 && nested.length < 3; i++) await wait(100)
  await wait(300)
  await h2.stop()
  assert.equal(nested.length, 3, JSON.stringify(nested))
  assert.deepEqual([nested[0].type, nested[0].name], [FilesystemEventType.CREATE, 'test_nested_watch_dir/test_watch.txt'])
})

test(`${runtime}: runCode works again after its kernel is killed (supervision.test.ts, adapted)`, async () => {
  const sandbox = await make({}, CodeSandbox, 'code-interpreter-v1')
  assert.equal((await sandbox.runCode('x = 1; x')).text, '1')
  // E2B kills its jupyter server; sbx has none (its agent drives the kernels:
  // docs/ARCHITECTURE.md, Code interpreter), so the python kernel is killed.
  const kill = await sandbox.commands.run("pkill -9 -f '[i]pykernel'", { user: 'root' })
  assert.equal(kill.exitCode, 0)
  let recovered = false
  for (let i = 0; i < 60 && !recovered; i++) {
    try {
      recovered = (await sandbox.runCode('x = 1; x')).text === '1'
    } catch {
      // still restarting
    }
    if (!recovered) await wait(500)
  }
  assert.ok(recovered, 'runCode never worked again')
})

test(`${runtime}: build with a tag, assign tags, refuse bad ones (tagsBuild.test.ts, tags.test.ts)`, async () => {
  // E2B builds Template().fromBaseImage() (Docker Hub's e2bdev/base); offline,
  // its local counterpart is the built-in base template.
  const templateName = `e2b-tags-test-${Date.now().toString(36)}`
  const initialTag = `${templateName}:v1-${randomUUID()}`
  const buildInfo = await Template.build(Template().fromTemplate('base'), initialTag)
  assert.ok(buildInfo.buildId)
  assert.ok(buildInfo.templateId)
  let tagInfo = await Template.assignTags(initialTag, ['production', 'latest'])
  assert.ok(tagInfo.buildId)
  assert.ok(tagInfo.tags.includes('production') && tagInfo.tags.includes('latest'), JSON.stringify(tagInfo))
  tagInfo = await Template.assignTags(initialTag, 'stable')
  assert.ok(tagInfo.buildId)
  assert.ok(tagInfo.tags.includes('stable'))
  await assert.rejects(Template.assignTags(initialTag, ':invalid-tag'))
  await assert.rejects(Template.assignTags(initialTag, `${templateName}:`))
  // E2B's API (id.ValidateAndDeduplicateTags, DeleteTemplatesTags): tags are
  // trimmed, lowercased and deduplicated; the default tag cannot be removed,
  // nor a tag given in the name.
  tagInfo = await Template.assignTags(initialTag, ['Canary', ' canary '])
  assert.deepEqual(tagInfo.tags, ['canary'])
  await assert.rejects(Template.removeTags(templateName, 'latest'), /latest/)
  await assert.rejects(Template.removeTags(initialTag, 'stable'), /should not contain a tag/)
  await assert.rejects(Template.removeTags(templateName, []), /at least one tag/)
  await Template.removeTags(templateName, ['STABLE', 'canary'])
  // getTags names the default tag as E2B's server does, "default"; sbx's
  // "latest" (assigned above) is that same tag
  const tags = (await Template.getTags(buildInfo.templateId)).map((t) => t.tag).sort()
  assert.deepEqual(tags, ['default', 'production', initialTag.split(':')[1]].sort())
  const sbx = await make({}, Sandbox, templateName)
  assert.equal((await sbx.commands.run('echo ok')).stdout, 'ok\n')
  // E2B's default tag is "default" (infra id.DefaultTag): name:default is the
  // bare name and cannot be removed; sbx stores it as "latest", takes both
  // names and shows E2B's on the tag endpoints
  const sbxDefault = await make({}, Sandbox, `${templateName}:default`)
  assert.equal((await sbxDefault.commands.run('echo ok')).stdout, 'ok\n')
  await assert.rejects(Template.removeTags(templateName, 'default'), /cannot delete/)
  await Sandbox.deleteSnapshot(buildInfo.templateId)
})

test(`${runtime}: runCmd as root, as a missing user; makeSymlink (methods/runCmd.test.ts, methods/makeSymlink.test.ts)`, async () => {
  // E2B's start from ubuntu:22.04 (Docker Hub); offline, from the built-in base.
  const name = () => `e2b-methods-${randomUUID()}`
  // template/user-and-workdir docs: a step runs as user in /home/user
  const logs = []
  await Template.build(Template().fromTemplate('base').skipCache()
    .runCmd('whoami')
    .runCmd('pwd')
    .runCmd('ls -l')
    .runCmd('test "$(whoami)" = "root"', { user: 'root' })
    .makeSymlink('.bashrc', '.bashrc.local')
    .runCmd('test "$(readlink .bashrc.local)" = ".bashrc"')
    .makeSymlink('.bashrc', '.bashrc.local', { force: true })
    .runCmd('test "$(readlink .bashrc.local)" = ".bashrc"'), name(), { onBuildLogs: (l) => logs.push(l.message) })
  assert.ok(logs.includes('user') && logs.includes('/home/user'), logs.join('\n'))
  // runCmd.test.ts's message, E2B's build server's wording
  await assert.rejects(Template.build(Template().fromTemplate('base').skipCache().runCmd('whoami', { user: 'root123' }), name()),
    (e) => e.name === 'BuildError' && e.message === "failed to run command 'whoami': command failed: unauthenticated: invalid username: 'root123'")
  await assert.rejects(Template.build(Template().fromTemplate('base').skipCache().runCmd('exit 3'), name()),
    (e) => e.name === 'BuildError' && e.message === "failed to run command 'exit 3': command failed: exit status 3")
})

test(`${runtime}: setUser('guest') creates the account, steps and sandboxes run as guest in /home/guest (template/user-and-workdir docs)`, async () => {
  // E2B's build server (commands/user.go) runs `adduser -D -g ""` for a
  // missing user: home /home/guest owned by it, its own group, no sudo.
  const name = `e2b-guest-${randomUUID()}`
  const logs = []
  await Template.build(Template().fromTemplate('base').skipCache()
    .runCmd('whoami').runCmd('pwd')
    .setUser('guest')
    .runCmd('whoami').runCmd('pwd')
    .runCmd('test "$(stat -c %U:%G /home/guest)" = guest:guest && test "$(id -gn)" = guest && ! sudo -n true 2>/dev/null')
    .setWorkdir('/home/guest/a/b')
    .runCmd('test "$(stat -c %U /home/guest/a)$(stat -c %U /home/guest/a/b)" = guestguest'), name, { onBuildLogs: (l) => logs.push(l.message) })
  let k = -1 // the steps' output, in order
  for (const want of ['user', '/home/user', 'guest', '/home/guest']) {
    k = logs.indexOf(want, k + 1)
    assert.ok(k >= 0, `${want}:\n${logs.join('\n')}`)
  }
  const sbx = await make({}, Sandbox, name)
  assert.equal((await sbx.commands.run('whoami')).stdout, 'guest\n')
  assert.equal((await sbx.commands.run('pwd')).stdout, '/home/guest/a/b\n')
  await Sandbox.deleteSnapshot(name).catch(() => {})
  const sbx2Name = `e2b-guest2-${randomUUID()}`
  await Template.build(Template().fromTemplate('base').setUser('guest'), sbx2Name)
  const sbx2 = await make({}, Sandbox, sbx2Name)
  assert.equal((await sbx2.commands.run('whoami && pwd')).stdout, 'guest\n/home/guest\n')
  // a child's steps start as the parent's user, in its home
  const childLogs = []
  await Template.build(Template().fromTemplate(sbx2Name).skipCache().runCmd('echo "$(whoami) $(pwd)"'), `e2b-guest-child-${randomUUID()}`,
    { onBuildLogs: (l) => childLogs.push(l.message) })
  assert.ok(childLogs.includes('guest /home/guest'), childLogs.join('\n'))
  // a name adduser refuses fails the build at setUser
  await assert.rejects(Template.build(Template().fromTemplate('base').setUser('bad user'), `e2b-guest3-${randomUUID()}`),
    (e) => e.name === 'BuildError' && /failed to create user: invalid user name "bad user"/.test(e.message))
})

// stacktrace.test.ts: a failed build's BuildError carries the stack of the
// step the API's reason.step names, so it points at the user's own call.
const fileContent = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8')
const nonExistentPath = 'nonexistent/path'

function callerMethod(stack) {
  const first = stack?.split('\n')[0]
  const m = first?.match(/:(\d+):(\d+)\)?$/)
  if (!m) return null
  const line = fileContent.split('\n')[Number(m[1]) - 1]
  return line?.slice(Number(m[2]) - 1).match(/^(\w+)\s*\(/)?.[1] ?? null
}

async function throwsAt(f, method) {
  const err = await f().then(() => null, (e) => e)
  assert.ok(err, `expected ${method} to fail the build`)
  assert.equal(callerMethod(err.stack), method, `${err.name}: ${err.message}\n${err.stack}`)
}

test(`${runtime}: a failed build's error points at the failing step (stacktrace.test.ts)`, async () => {
  // E2B starts from fromBaseImage() (Docker Hub); offline, from the built-in base.
  const build = (template) => Template.build(template, `e2b-trace-${randomUUID()}`)
  const base = () => Template().fromTemplate('base')
  // E2B's test mocks the API, which takes every build and fails it in its
  // status at reason.step; E2B's API takes a missing fromTemplate's build and
  // fails it at step "base" (setTemplateSource), as sbx now does.
  await throwsAt(() => build(Template().fromTemplate('this-template-does-not-exist')), 'fromTemplate')
  await assert.rejects(build(Template().fromTemplate('this-template-does-not-exist')),
    (e) => e.name === 'BuildError' && e.message === "base template 'this-template-does-not-exist' not found")
  let template = base().skipCache().copy(nonExistentPath, nonExistentPath)
  await throwsAt(() => build(template), 'copy')
  await throwsAt(async () => base().copy('/absolute/path', '/absolute/path'), 'copy')
  template = base().skipCache().remove(nonExistentPath)
  await throwsAt(() => build(template), 'remove')
  template = base().skipCache().rename(nonExistentPath, '/tmp/dest.txt')
  await throwsAt(() => build(template), 'rename')
  template = base().skipCache().makeDir('.bashrc')
  await throwsAt(() => build(template), 'makeDir')
  template = base().skipCache().makeSymlink('.bashrc', '.bashrc')
  await throwsAt(() => build(template), 'makeSymlink')
  template = base().skipCache().runCmd(`./${nonExistentPath}`)
  await throwsAt(() => build(template), 'runCmd')
  template = base().skipCache().setWorkdir('/root/.bashrc')
  await throwsAt(() => build(template), 'setWorkdir')
  // E2B's WORKDIR step is a `mkdir -p` as the template's user: a directory
  // user may not make fails the build there, with E2B's words, though a
  // later step is what needs it
  template = base().skipCache().setWorkdir('/opt/x').runCmd('true')
  await throwsAt(() => build(template), 'setWorkdir')
  await assert.rejects(build(template), (e) => e.name === 'BuildError' && e.message === 'failed to create workdir: exit status 1')
  // as root it is made, and what root makes stays root's
  const ok = `e2b-trace-${randomUUID()}`
  await Template.build(base().skipCache().setUser('root').setWorkdir('/opt/x').setUser('user').runCmd('test "$(stat -c %U /opt/x)" = root'), ok)
  await Sandbox.deleteSnapshot(ok).catch(() => {})
  template = base().skipCache().setUser('; exit 1')
  await throwsAt(() => build(template), 'setUser')
  template = base().setStartCmd(`./${nonExistentPath}`, waitForTimeout(10_000))
  await throwsAt(() => build(template), 'setStartCmd')
})
