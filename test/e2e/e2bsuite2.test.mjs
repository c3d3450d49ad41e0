// End-to-end: more of E2B's own SDK tests (e2b-dev/E2B packages/js-sdk/tests:
// template/exists, template/aliasExists, template/tags, sandbox/pause,
// sandbox/network), ported with their assertions unchanged where the
// target is local, and run with the official SDK against a real `sbx serve`
// (test/e2e/daemon/run.sh). E2B's network tests curl 1.1.1.1 and 8.8.8.8;
// here the daemon runs with `--uplink none`, so the cases that need a
// reachable internet host keep only their sandbox-side assertions (a denied
// host fails the command) and the info the SDK reads back. Template builds
// are in template.test.mjs (they need the loopback registry). Also ported:
// the Python SDK's test_snapshot.py, test_snapshot_api.py, test_create.py
// (auto-pause), test_run.py and test_write.py cases the JS suite lacks, and
// the git/*.test.ts cases that need no host (a repo and a git daemon inside
// the sandbox).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { randomUUID } from 'node:crypto'
import { Sandbox, Template, CommandExitError } from 'e2b'

import { runtime, created, wait, make } from './e2bfixture.mjs'

const origin = new URL(process.env.E2B_API_URL)

// get sends GET / to the daemon with the given Host and headers.
function get(host, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: origin.hostname, port: origin.port, path: '/', headers: { Host: host, ...headers } }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

// waitForStatus is network.test.ts's: poll until the status is the one wanted.
async function waitForStatus(host, status, headers) {
  let last
  for (let i = 0; i < 40; i++) {
    last = await get(host, headers)
    if (last.status === status) return
    await wait(500)
  }
  assert.equal(last.status, status, last.body)
}

test(`${runtime}: Template.exists and aliasExists (exists.test.ts, aliasExists.test.ts)`, async () => {
  assert.equal(await Template.exists('base'), true)
  assert.equal(await Template.exists(`nonexistent-${randomUUID()}`), false)
  assert.equal(await Template.aliasExists('base'), true)
  assert.equal(await Template.aliasExists(`nonexistent-${randomUUID()}`), false)
})

test(`${runtime}: removeTags of a missing template is an error (tags.test.ts)`, async () => {
  await assert.rejects(Template.removeTags('nonexistent', ['tag']))
})

test(`${runtime}: pause returns true, then false; a connect by apiKey pauses (pause.test.ts)`, async () => {
  const sandbox = await make()
  const savedApiKey = process.env.E2B_API_KEY
  delete process.env.E2B_API_KEY
  try {
    const connected = await Sandbox.connect(sandbox.sandboxId, { apiKey: savedApiKey })
    assert.equal(await connected.pause(), true)
    assert.equal(await connected.isRunning(), false)
  } finally {
    process.env.E2B_API_KEY = savedApiKey
  }
  const sandbox2 = await make()
  assert.equal(await sandbox2.pause(), true)
  assert.equal(await sandbox2.pause(), false)
  const sandbox3 = await make()
  const connected = await Sandbox.connect(sandbox3.sandboxId, { apiKey: process.env.E2B_API_KEY })
  assert.equal(await sandbox3.isRunning(), true)
  assert.equal(await connected.pause(), true)
  assert.equal(await connected.isRunning(), false)
})

test(`${runtime}: network deny all, allowPublicTraffic, updateNetwork (network.test.ts)`, async () => {
  const denied = await make({ network: { denyOut: ({ allTraffic }) => [allTraffic], allowOut: ['1.1.1.1'] } })
  await assert.rejects(
    denied.commands.run('curl --connect-timeout 3 --max-time 5 -Is https://8.8.8.8'),
    (e) => e instanceof CommandExitError)
  // the omitted fields clear the rules (no internet here to reach after)
  await denied.updateNetwork({})
  await denied.updateNetwork({ denyOut: ['8.8.8.8'] })
  await assert.rejects(
    denied.commands.run('curl --connect-timeout 3 --max-time 5 -Is https://8.8.8.8'),
    (e) => e instanceof CommandExitError)

  const priv = await make({ network: { allowPublicTraffic: false } })
  assert.ok(priv.trafficAccessToken)
  priv.commands.run('python3 -m http.server 8080', { background: true })
  await waitForStatus(priv.getHost(8080), 403)
  await waitForStatus(priv.getHost(8080), 200, { 'e2b-traffic-access-token': priv.trafficAccessToken })

  const pub = await make({ network: { allowPublicTraffic: true } })
  pub.commands.run('python3 -m http.server 8080', { background: true })
  await waitForStatus(pub.getHost(8080), 200)
})

test(`${runtime}: betaPause then connect resumes the same sandbox (python test_snapshot.py)`, async () => {
  const sandbox = await make()
  assert.equal(await sandbox.isRunning(), true)
  await sandbox.betaPause()
  assert.equal(await sandbox.isRunning(), false)
  const resumed = await sandbox.connect()
  assert.equal(await sandbox.isRunning(), true)
  assert.equal(await resumed.isRunning(), true)
  assert.equal(resumed.sandboxId, sandbox.sandboxId)
})

test(`${runtime}: snapshots: create, list, by name, from it, delete (python test_snapshot_api.py)`, async () => {
  const sandbox = await make()
  const testId = `t${Math.random().toString(36).slice(2)}`
  await sandbox.files.makeDir('/home/user/app')
  await sandbox.files.write('/home/user/app/config.json', '{"env": "test"}')
  await sandbox.files.write('/home/user/shared.txt', 'shared snapshot content')
  // test_create_snapshot, test_create_snapshot_class_method
  let snapshot = await sandbox.createSnapshot()
  assert.ok(snapshot.snapshotId.length > 0)
  assert.equal(await Sandbox.deleteSnapshot(snapshot.snapshotId), true)
  snapshot = await Sandbox.createSnapshot(sandbox.sandboxId)
  assert.ok(snapshot.snapshotId.length > 0)
  // test_delete_snapshot
  assert.equal(await Sandbox.deleteSnapshot(snapshot.snapshotId), true)
  assert.equal(await Sandbox.deleteSnapshot(snapshot.snapshotId), false)
  // test_create_named_snapshot, test_list_snapshots_filtered_by_name
  const name = `snap-filter-${testId}`
  snapshot = await sandbox.createSnapshot({ name })
  try {
    assert.ok(Array.isArray(snapshot.names) && snapshot.names.length > 0, JSON.stringify(snapshot))
    assert.ok(snapshot.names.some((n) => n.includes(name)), JSON.stringify(snapshot))
    const all = Sandbox.listSnapshots()
    assert.equal(all.hasNext, true)
    assert.ok((await all.nextItems()).some((s) => s.snapshotId === snapshot.snapshotId))
    const mine = await Sandbox.listSnapshots({ sandboxId: sandbox.sandboxId }).nextItems()
    assert.ok(mine.some((s) => s.snapshotId === snapshot.snapshotId))
    const byName = await Sandbox.listSnapshots({ name }).nextItems()
    assert.ok(byName.some((s) => s.snapshotId === snapshot.snapshotId), JSON.stringify(byName))
    assert.deepEqual(await Sandbox.listSnapshots({ name: `${name}-does-not-exist` }).nextItems(), [])
    // test_create_multiple_sandboxes_from_snapshot, test_snapshot_preserves_filesystem
    const sandbox1 = await Sandbox.create(snapshot.snapshotId)
    const sandbox2 = await Sandbox.create(snapshot.snapshotId)
    created.push(sandbox1, sandbox2)
    assert.equal(await sandbox1.files.read('/home/user/shared.txt'), 'shared snapshot content')
    assert.equal(await sandbox2.files.read('/home/user/shared.txt'), 'shared snapshot content')
    await sandbox1.files.write('/home/user/shared.txt', 'modified in sandbox1')
    assert.equal(await sandbox1.files.read('/home/user/shared.txt'), 'modified in sandbox1')
    assert.equal(await sandbox2.files.read('/home/user/shared.txt'), 'shared snapshot content')
    assert.equal(await sandbox2.files.exists('/home/user/app'), true)
    assert.equal(await sandbox2.files.read('/home/user/app/config.json'), '{"env": "test"}')
    await sandbox1.kill()
    await sandbox2.kill()
  } finally {
    await Sandbox.deleteSnapshot(snapshot.snapshotId)
  }
})

const bootId = async (s) => (await s.files.read('/proc/sys/kernel/random/boot_id')).trim()
async function waitPaused(s) {
  for (let i = 0; i < 150 && (await s.isRunning()); i++) await wait(200)
  assert.equal(await s.isRunning(), false)
}

test(`${runtime}: auto-pause with and without memory, autoResume (python test_create.py)`, async () => {
  // test_filesystem_only_auto_pause_rejects_auto_resume, test_keep_memory_not_allowed_with_kill
  await assert.rejects(Sandbox.create('base', { timeoutMs: 3000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false }, autoResume: true } }),
    (e) => e.name === 'InvalidArgumentError')
  await assert.rejects(Sandbox.create('base', { timeoutMs: 3000, lifecycle: { onTimeout: { action: 'kill', keepMemory: false } } }),
    (e) => e.name === 'InvalidArgumentError')
  // test_keep_memory_none_defaults_to_full_memory
  const full = await make({ timeoutMs: 60_000, lifecycle: { onTimeout: { action: 'pause', keepMemory: undefined } } })
  const fullBoot = await bootId(full)
  await full.setTimeout(0)
  await waitPaused(full)
  let resumed = await full.connect()
  assert.equal(resumed.sandboxId, full.sandboxId)
  assert.equal(await bootId(resumed), fullBoot)
  // test_auto_pause_filesystem_only_reboots
  const fsOnly = await make({ timeoutMs: 3000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } })
  await fsOnly.files.write('/home/user/auto-pause-marker.txt', 'auto-pause-fs-only')
  const fsBoot = await bootId(fsOnly)
  await wait(5000)
  assert.equal((await fsOnly.getInfo()).state, 'paused')
  resumed = await fsOnly.connect()
  assert.equal((await resumed.files.read('/home/user/auto-pause-marker.txt')).trim(), 'auto-pause-fs-only')
  assert.notEqual(await bootId(resumed), fsBoot)
  // test_auto_pause_without_auto_resume_requires_connect
  const manual = await make({ timeoutMs: 3000, lifecycle: { onTimeout: 'pause', autoResume: false } })
  await wait(5000)
  assert.equal((await manual.getInfo()).state, 'paused')
  assert.equal(await manual.isRunning(), false)
  await manual.connect()
  assert.equal((await manual.getInfo()).state, 'running')
  assert.equal(await manual.isRunning(), true)
  // test_auto_resume_wakes_on_http_request
  const auto = await make({ timeoutMs: 3000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  await auto.commands.run('python3 -m http.server 8000', { background: true })
  await wait(5000)
  const res = await get(auto.getHost(8000))
  assert.equal(res.status, 200, res.body)
  assert.equal((await auto.getInfo()).state, 'running')
  assert.equal(await auto.isRunning(), true)
  // pause({ keepMemory: false }) (Sandbox.pause's own option)
  const cold = await make()
  const coldBoot = await bootId(cold)
  assert.equal(await cold.pause({ keepMemory: false }), true)
  await cold.connect()
  assert.notEqual(await bootId(cold), coldBoot)
})

test(`${runtime}: commands and files.write as the python suite checks (test_run.py, test_write.py)`, async () => {
  const sandbox = await make()
  // test_run_with_special_characters, test_run_with_broken_utf8
  let cmd = await sandbox.commands.run('echo "!@#$%^&*()_+"')
  assert.equal(cmd.stdout, '!@#$%^&*()_+\n')
  cmd = await sandbox.commands.run(`printf "${'a'.repeat(8191)}\\xe2"`)
  assert.equal(cmd.exitCode, 0)
  assert.equal(cmd.stdout, 'a'.repeat(8191) + '\ufffd')
  cmd = await sandbox.commands.run('echo "Hello,\nWorld!"')
  assert.equal(cmd.stdout, 'Hello,\nWorld!\n')
  // test_write_file
  assert.deepEqual(await sandbox.files.write([]), [])
  let infos = await sandbox.files.write([{ path: 'one_test_file.txt', data: 'This is a test file.' }])
  assert.equal(infos.length, 1)
  assert.equal(infos[0].path, '/home/user/one_test_file.txt')
  assert.equal(await sandbox.files.read(infos[0].path), 'This is a test file.')
  const files = Array.from({ length: 10 }, (_, i) => ({ path: `test_write_${i}.txt`, data: `This is a test file ${i}.` }))
  infos = await sandbox.files.write(files)
  assert.equal(infos.length, files.length)
  for (const [i, info] of infos.entries()) {
    assert.equal(info.path, `/home/user/test_write_${i}.txt`)
    assert.equal(await sandbox.files.read(info.path), files[i].data)
  }
  // test_overwrite_file, test_write_to_non_existing_directory
  await sandbox.files.write([{ path: 'test_overwrite.txt', data: 'Initial content.' }])
  await sandbox.files.write([{ path: 'test_overwrite.txt', data: 'New content.' }])
  assert.equal(await sandbox.files.read('test_overwrite.txt'), 'New content.')
  await sandbox.files.write([{ path: 'non_existing_dir/test_write.txt', data: 'This should succeed too.' }])
  assert.equal(await sandbox.files.exists('non_existing_dir/test_write.txt'), true)
  assert.equal(await sandbox.files.read('non_existing_dir/test_write.txt'), 'This should succeed too.')
})

test(`${runtime}: git helpers on a repo and a git daemon in the sandbox (git/*.test.ts)`, async () => {
  const sandbox = await make()
  // helpers.ts
  const baseDir = `/tmp/test-git/${randomUUID()}`
  await sandbox.commands.run(`rm -rf "${baseDir}" && mkdir -p "${baseDir}"`)
  const createRepo = async (name = 'repo') => {
    const repoPath = `${baseDir}/${name}`
    await sandbox.git.init(repoPath, { initialBranch: 'main' })
    return repoPath
  }
  // status.test.ts
  const repoPath = await createRepo()
  await sandbox.files.write(`${repoPath}/README.md`, 'hello\n')
  const status = await sandbox.git.status(repoPath)
  assert.equal(status.fileStatus.find((f) => f.name === 'README.md')?.status, 'untracked')
  assert.equal(status.isClean, false)
  await sandbox.git.add(repoPath)
  await sandbox.git.commit(repoPath, 'Initial commit', { authorName: 'Sandbox Bot', authorEmail: 'sandbox@example.com' })
  // branches.test.ts
  await sandbox.commands.run(`git -C "${repoPath}" branch feature`)
  let branches = await sandbox.git.branches(repoPath)
  assert.equal(branches.currentBranch, 'main')
  assert.ok(branches.branches.includes('main') && branches.branches.includes('feature'))
  await sandbox.git.checkoutBranch(repoPath, 'feature')
  assert.equal((await sandbox.commands.run(`git -C "${repoPath}" rev-parse --abbrev-ref HEAD`)).stdout.trim(), 'feature')
  await sandbox.git.checkoutBranch(repoPath, 'main')
  await sandbox.git.deleteBranch(repoPath, 'feature', { force: true })
  assert.equal((await sandbox.commands.run(`git -C "${repoPath}" branch --list feature`)).stdout.trim(), '')
  await sandbox.git.createBranch(repoPath, 'feature2')
  branches = await sandbox.git.branches(repoPath)
  assert.equal(branches.currentBranch, 'feature2')
  await sandbox.git.checkoutBranch(repoPath, 'main')
  // push.test.ts (helpers.ts startGitDaemon)
  const remotePath = `${baseDir}/remote.git`
  await sandbox.commands.run(`git init --bare --initial-branch=main "${remotePath}"`)
  const port = 9418 + Math.floor(Math.random() * 1000)
  const daemon = await sandbox.commands.run(
    `git daemon --reuseaddr --base-path="${baseDir}" --export-all ` +
      `--enable=receive-pack --informative-errors --listen=127.0.0.1 --port=${port}`,
    { background: true })
  await sandbox.commands.run('sleep 1')
  try {
    await sandbox.git.remoteAdd(repoPath, 'origin', `git://127.0.0.1:${port}/remote.git`)
    assert.equal(await sandbox.git.remoteGet(repoPath, 'origin'), `git://127.0.0.1:${port}/remote.git`)
    await assert.rejects(sandbox.git.push(repoPath, { setUpstream: false }), /no upstream branch is configured/i)
    await sandbox.git.push(repoPath, { remote: 'origin', branch: 'main' })
    assert.equal((await sandbox.commands.run(`git --git-dir="${remotePath}" log -1 --pretty=%B`)).stdout.trim(), 'Initial commit')
    // clone.test.ts, pull.test.ts: a clone by URL sees a later push
    await sandbox.git.clone(`git://127.0.0.1:${port}/remote.git`, { path: `${baseDir}/clone` })
    assert.equal(await sandbox.files.read(`${baseDir}/clone/README.md`), 'hello\n')
    await sandbox.files.write(`${repoPath}/second.txt`, 'two\n')
    await sandbox.git.add(repoPath)
    await sandbox.git.commit(repoPath, 'Second', { authorName: 'Sandbox Bot', authorEmail: 'sandbox@example.com' })
    await sandbox.git.push(repoPath, { remote: 'origin', branch: 'main' })
    await sandbox.git.pull(`${baseDir}/clone`)
    assert.equal(await sandbox.files.read(`${baseDir}/clone/second.txt`), 'two\n')
  } finally {
    await daemon.kill()
  }
  // config.test.ts
  await sandbox.git.configureUser('Sandbox Bot', 'sandbox@example.com')
  assert.equal(await sandbox.git.getConfig('user.name'), 'Sandbox Bot')
  await sandbox.commands.run(`rm -rf "${baseDir}"`)
})

test(`${runtime}: maskRequestHost rewrites the Host header (network.test.ts)`, async () => {
  const sandbox = await make({ network: { maskRequestHost: 'custom-host.example.com:${PORT}' } })
  const outputFile = '/tmp/headers.txt'
  await sandbox.commands.run(`python3 -c "
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open('${outputFile}', 'w') as f:
            for k, v in self.headers.items():
                f.write(k + ': ' + v + chr(10))
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(('', 8080), H).handle_request()
"`, { background: true })
  await waitForStatus(sandbox.getHost(8080), 200)
  const headers = await sandbox.files.read(outputFile)
  assert.ok(headers.includes('Host:') && headers.includes('custom-host.example.com') && headers.includes('8080'), headers)
  assert.equal((await sandbox.getInfo()).network?.maskRequestHost, 'custom-host.example.com:${PORT}')
})

test(`${runtime}: httpsPorts: a port serving TLS is reached through the proxy (network.test.ts)`, async () => {
  const port = 8443
  const sandbox = await make({ network: { httpsPorts: [port] } })
  const keygen = await sandbox.commands.run(
    'openssl req -x509 -newkey rsa:2048 -keyout /tmp/https-backend-key.pem -out /tmp/https-backend-cert.pem -days 1 -nodes -subj "/CN=localhost"')
  assert.equal(keygen.exitCode, 0)
  sandbox.commands.run(`python3 -c "
import http.server, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'https backend')
    def log_message(self, *a): pass
server = http.server.ThreadingHTTPServer(('0.0.0.0', ${port}), H)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain('/tmp/https-backend-cert.pem', '/tmp/https-backend-key.pem')
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"`, { background: true })
  let response
  for (let i = 0; i < 15 && response?.status !== 200; i++) {
    if (i) await wait(1000)
    response = await get(sandbox.getHost(port))
  }
  assert.equal(response?.status, 200, response?.body)
  assert.equal(response?.body, 'https backend')
  assert.deepEqual((await sandbox.getInfo()).network?.httpsPorts, [port])
})
