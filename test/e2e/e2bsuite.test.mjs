// End-to-end: E2B's own SDK tests (e2b-dev/E2B packages/js-sdk/tests and
// e2b-dev/code-interpreter js/tests), ported with their assertions unchanged
// and run with the official SDKs against a real `sbx serve`
// (test/e2e/daemon/run.sh). Each test names the E2B test file it ports; a
// test here groups that file's cases on one sandbox where they do not
// interfere. Cases other suites here already cover are left out.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import path from 'node:path'
import {
  Sandbox, FilesystemEventType, NotFoundError, FileNotFoundError, SandboxError,
  CommandExitError, TimeoutError,
} from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'

import { runtime, created, wait, make } from './e2bfixture.mjs'

const origin = new URL(process.env.E2B_API_URL)

const dec = new TextDecoder()

test(`${runtime}: pty (ptyCreate, ptyConnect, resize, sendInput, kill)`, async () => {
  const sandbox = await make()
  // ptyCreate.test.ts
  let output = ''
  let terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: (d) => { output += dec.decode(d) }, envs: { ABC: '123' } })
  await sandbox.pty.sendInput(terminal.pid, new TextEncoder().encode('echo $ABC\nexit\n'))
  await terminal.wait()
  assert.equal(terminal.exitCode, 0)
  assert.ok(output.includes('123'), output)
  // ptyConnect.test.ts
  let output1 = ''
  let output2 = ''
  terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: (d) => { output1 += dec.decode(d) }, envs: { FOO: 'bar' } })
  await sandbox.pty.sendInput(terminal.pid, new Uint8Array(Buffer.from('echo $FOO\n')))
  await wait(300)
  await terminal.disconnect()
  const reconnectHandle = await sandbox.pty.connect(terminal.pid, { onData: (d) => { output2 += dec.decode(d) } })
  await sandbox.pty.sendInput(terminal.pid, new Uint8Array(Buffer.from('echo $FOO\nexit\n')))
  await reconnectHandle.wait()
  assert.equal(terminal.pid, reconnectHandle.pid)
  assert.equal(reconnectHandle.exitCode, 0)
  assert.ok(output1.includes('bar'), output1)
  assert.ok(output2.includes('bar'), output2)
  // resize.test.ts
  output = ''
  terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: (d) => { output += dec.decode(d) } })
  await sandbox.pty.sendInput(terminal.pid, new TextEncoder().encode('tput cols\nexit\n'))
  await terminal.wait()
  assert.equal(terminal.exitCode, 0)
  assert.ok(output.includes('80'), output)
  output = ''
  terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: (d) => { output += dec.decode(d) } })
  await sandbox.pty.resize(terminal.pid, { cols: 100, rows: 24 })
  await sandbox.pty.sendInput(terminal.pid, new TextEncoder().encode('tput cols\nexit\n'))
  await terminal.wait()
  assert.equal(terminal.exitCode, 0)
  assert.ok(output.includes('100'), output)
  // sendInput.test.ts (its pty.sendStdin and handle.sendStdin cases need
  // an SDK newer than 2.51.0, which has sendInput only)
  terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: () => null })
  await sandbox.pty.sendInput(terminal.pid, new Uint8Array(Buffer.from('exit\n')))
  await terminal.wait()
  assert.equal(terminal.exitCode, 0)
  // kill.test.ts
  terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: () => {} })
  assert.equal(await sandbox.pty.kill(terminal.pid), true)
  const gone = await sandbox.commands.run(`for i in $(seq 1 50); do kill -0 ${terminal.pid} 2>/dev/null || exit 0; sleep 0.1; done; exit 1`)
  assert.equal(gone.exitCode, 0)
  assert.equal(await sandbox.pty.kill(999999), false)
})

test(`${runtime}: commands (run, sendStdin, envVars, connect, kill, list)`, async () => {
  const sandbox = await make()
  // run.test.ts
  for (const text of ['Hello, World!', '!@#$%^&*()_+', 'Hello,\nWorld!']) {
    const cmd = await sandbox.commands.run(`echo "${text}"`)
    assert.equal(cmd.exitCode, 0)
    assert.equal(cmd.stdout, `${text}\n`)
  }
  assert.equal((await sandbox.commands.run('echo "Hello, World!"', { timeoutMs: 4000 })).exitCode, 0)
  await assert.rejects(sandbox.commands.run('sleep 10', { timeoutMs: 1000 }))
  // sendStdin.test.ts
  for (const text of ['Hello, World!', '', '!@#$%^&*()_+', 'Hello,\nWorld!']) {
    const cmd = await sandbox.commands.run('cat', { background: true, stdin: true })
    await sandbox.commands.sendStdin(cmd.pid, text)
    for (let i = 0; i < 5 && text !== ''; i++) {
      if (cmd.stdout === text) break
      await wait(500)
    }
    await cmd.kill()
    assert.equal(cmd.stdout, text)
  }
  // envVars.test.ts
  let cmd = await sandbox.commands.run('echo $FOO', { envs: { FOO: 'bar' } })
  assert.equal(cmd.exitCode, 0)
  assert.equal(cmd.stdout.trim(), 'bar')
  cmd = await sandbox.commands.run('sudo echo "$FOO"')
  assert.equal(cmd.exitCode, 0)
  assert.equal(cmd.stdout.trim(), '')
  cmd = await sandbox.commands.run('python3 -c "import os; print(os.environ[\'FOO\'])"', { envs: { FOO: 'bar' } })
  assert.equal(cmd.stdout.trim(), 'bar')
  // connect.test.ts
  const bg = await sandbox.commands.run('sleep 10', { background: true })
  const processInfo = await sandbox.commands.connect(bg.pid)
  assert.equal(typeof processInfo, 'object')
  assert.equal(processInfo.pid, bg.pid)
  await assert.rejects(sandbox.commands.connect(999999))
  // kill.test.ts
  await sandbox.commands.kill(bg.pid)
  await assert.rejects(sandbox.commands.run(`kill -0 ${bg.pid}`), CommandExitError)
  assert.equal(await sandbox.commands.kill(999999), false)
  // list.test.ts
  await sandbox.commands.run('sleep 10', { background: true })
  await sandbox.commands.run('sleep 10', { background: true })
  const processes = await sandbox.commands.list()
  assert.ok(Array.isArray(processes) && processes.length >= 2)
  for (const p of processes) assert.ok('pid' in p)
})

test(`${runtime}: sandbox global env vars (envVars.test.ts)`, async () => {
  const sandbox = await make({ envs: { FOO: 'bar' } })
  const cmd = await sandbox.commands.run('echo $FOO')
  assert.equal(cmd.exitCode, 0)
  assert.equal(cmd.stdout.trim(), 'bar')
})

test(`${runtime}: files write (write.test.ts, contentEncoding.test.ts)`, async () => {
  const sandbox = await make()
  const filename = 'test_write.txt'
  const content = 'This is a test file.'
  await assert.rejects(sandbox.files.write(undefined, content), /Path or files are required/)
  let info = await sandbox.files.write(filename, content)
  assert.equal(Array.isArray(info), false)
  assert.equal(info.name, filename)
  assert.equal(info.type, 'file')
  assert.equal(info.path, `/home/user/${filename}`)
  assert.equal(await sandbox.files.exists(filename), true)
  assert.equal(await sandbox.files.read(filename), content)
  const emptyInfo = await sandbox.files.write([])
  assert.ok(Array.isArray(emptyInfo) && emptyInfo.length === 0)
  info = await sandbox.files.write([{ path: 'one_test_file.txt', data: 'This is a test file.' }])
  assert.ok(Array.isArray(info))
  assert.deepEqual([info[0].name, info[0].type, info[0].path], ['one_test_file.txt', 'file', '/home/user/one_test_file.txt'])
  // E2B writes half of these at /<i>/, where only root may create a
  // directory; sbx's user cannot (docs/ARCHITECTURE.md, Agent): /tmp/<i>.
  const files = []
  for (let i = 0; i < 10; i++) {
    files.push({ path: i % 2 === 0 ? `/tmp/${i}/multi_test_file${i}.txt` : `/home/user/multi_test_file${i}.txt`, data: `This is a test file ${i}.` })
  }
  const infos = await sandbox.files.write(files)
  assert.equal(infos.length, files.length)
  for (let i = 0; i < files.length; i++) {
    assert.equal(infos[i].name, path.basename(files[i].path))
    assert.equal(infos[i].path, files[i].path)
    assert.equal(infos[i].type, 'file')
    assert.equal(await sandbox.files.exists(files[i].path), true)
    assert.equal(await sandbox.files.read(files[i].path), files[i].data)
  }
  await sandbox.files.write('test_overwrite.txt', 'Initial content.')
  await sandbox.files.write('test_overwrite.txt', 'New content.')
  assert.equal(await sandbox.files.read('test_overwrite.txt'), 'New content.')
  await sandbox.files.write('non_existing_dir/test_write.txt', 'This should succeed too.')
  assert.equal(await sandbox.files.read('non_existing_dir/test_write.txt'), 'This should succeed too.')
  // contentEncoding.test.ts
  info = await sandbox.files.write('test_gzip_write.txt', 'gz', { gzip: true })
  assert.deepEqual([info.name, info.type, info.path], ['test_gzip_write.txt', 'file', '/home/user/test_gzip_write.txt'])
  assert.equal(await sandbox.files.read('test_gzip_write.txt', { gzip: true }), 'gz')
  assert.equal(await sandbox.files.read('test_gzip_write.txt'), 'gz')
  const gzFiles = [1, 2, 3].map((i) => ({ path: `gzip_multi_${i}.txt`, data: `File ${i} content` }))
  assert.equal((await sandbox.files.writeFiles(gzFiles, { gzip: true })).length, 3)
  for (const f of gzFiles) assert.equal(await sandbox.files.read(f.path), f.data)
  const bytes = await sandbox.files.read('test_gzip_write.txt', { format: 'bytes', gzip: true })
  assert.ok(bytes instanceof Uint8Array)
  assert.equal(dec.decode(bytes), 'gz')
})

test(`${runtime}: files metadata (metadata.test.ts)`, async () => {
  const sandbox = await make()
  const metadata = { author: 'mish', purpose: 'upload' }
  let info = await sandbox.files.write('test_metadata.txt', 'x', { metadata })
  assert.deepEqual(info.metadata, metadata)
  assert.deepEqual((await sandbox.files.getInfo('test_metadata.txt')).metadata, metadata)
  info = await sandbox.files.write('test_metadata_octet.txt', 'x', { metadata, useOctetStream: true })
  assert.deepEqual(info.metadata, metadata)
  assert.deepEqual((await sandbox.files.getInfo('test_metadata_octet.txt')).metadata, metadata)
  info = await sandbox.files.write('test_no_metadata.txt', 'no metadata here')
  assert.equal(info.metadata, undefined)
  assert.equal((await sandbox.files.getInfo('test_no_metadata.txt')).metadata, undefined)
  const infos = await sandbox.files.writeFiles([{ path: 'metadata_multi_1.txt', data: '1' }, { path: 'metadata_multi_2.txt', data: '2' }], { metadata: { source: 'test-suite' } })
  for (const i of infos) {
    assert.deepEqual(i.metadata, { source: 'test-suite' })
    assert.deepEqual((await sandbox.files.getInfo(i.path)).metadata, { source: 'test-suite' })
  }
  await sandbox.files.makeDir('metadata_list_dir')
  await sandbox.files.write('metadata_list_dir/listed.txt', 'content', { metadata: { tag: 'listed' } })
  const entry = (await sandbox.files.list('metadata_list_dir')).find((e) => e.name === 'listed.txt')
  assert.deepEqual(entry?.metadata, { tag: 'listed' })
  await sandbox.files.write('metadata_rename_old.txt', 'content', { metadata: { stage: 'renamed' } })
  assert.deepEqual((await sandbox.files.rename('metadata_rename_old.txt', 'metadata_rename_new.txt')).metadata, { stage: 'renamed' })
  await sandbox.files.write('metadata_overwrite.txt', 'first', { metadata: { author: 'mish' } })
  info = await sandbox.files.write('metadata_overwrite.txt', 'second')
  assert.equal(info.metadata, undefined)
  assert.equal((await sandbox.files.getInfo('metadata_overwrite.txt')).metadata, undefined)
})

test(`${runtime}: files list, info, read, rename, makeDir, exists (list/info/read/rename/makeDir.test.ts)`, async () => {
  const sandbox = await make()
  const parentDirName = 'test_directory'
  for (const d of ['', '/subdir1', '/subdir2', '/subdir1/subdir1_1', '/subdir1/subdir1_2', '/subdir2/subdir2_1', '/subdir2/subdir2_2']) {
    await sandbox.files.makeDir(`${parentDirName}${d}`)
  }
  await sandbox.files.write(`${parentDirName}/file1.txt`, 'Hello, world!')
  const base = `/home/user/${parentDirName}`
  const one = [['file1.txt', 'file', `${base}/file1.txt`], ['subdir1', 'dir', `${base}/subdir1`], ['subdir2', 'dir', `${base}/subdir2`]]
  const two = [one[0], one[1], ['subdir1_1', 'dir', `${base}/subdir1/subdir1_1`], ['subdir1_2', 'dir', `${base}/subdir1/subdir1_2`],
    one[2], ['subdir2_1', 'dir', `${base}/subdir2/subdir2_1`], ['subdir2_2', 'dir', `${base}/subdir2/subdir2_2`]]
  for (const [depth, want] of [[undefined, one], [1, one], [2, two], [3, two]]) {
    const files = await sandbox.files.list(parentDirName, depth !== undefined ? { depth } : undefined)
    assert.deepEqual(files.map((f) => [f.name, f.type, f.path]), want, `depth ${depth}`)
  }
  await assert.rejects(sandbox.files.list(parentDirName, { depth: -1 }), /depth should be at least one/)
  await sandbox.files.makeDir('test-mixed-entries/subdir')
  await sandbox.files.write('test-mixed-entries/test.txt', 'Hello, World!')
  const entries = new Map((await sandbox.files.list('test-mixed-entries', { depth: 1 })).map((e) => [e.name, e]))
  const d = entries.get('subdir')
  assert.deepEqual([d.path, d.type, d.mode, d.permissions, d.owner, d.group, !!d.modifiedTime],
    ['/home/user/test-mixed-entries/subdir', 'dir', 0o755, 'drwxr-xr-x', 'user', 'user', true])
  const f = entries.get('test.txt')
  assert.deepEqual([f.path, f.type, f.mode, f.permissions, f.owner, f.group, f.size, !!f.modifiedTime, f.symlinkTarget],
    ['/home/user/test-mixed-entries/test.txt', 'file', 0o644, '-rw-r--r--', 'user', 'user', 13, true, undefined])
  // info.test.ts
  await sandbox.files.write('test_file.txt', 'test')
  const currentPath = (await sandbox.commands.run('pwd')).stdout
  let info = await sandbox.files.getInfo('test_file.txt')
  assert.deepEqual([info.name, info.type, info.path, info.size, info.mode, info.permissions, info.owner, info.group, 'modifiedTime' in info],
    ['test_file.txt', 'file', `${currentPath.trim()}/test_file.txt`, 4, 0o644, '-rw-r--r--', 'user', 'user', true])
  await assert.rejects(sandbox.files.getInfo('test_does_not_exist.txt'), NotFoundError)
  await sandbox.files.makeDir('test_dir')
  info = await sandbox.files.getInfo('test_dir')
  assert.deepEqual([info.name, info.type, info.path, info.size > 0, info.mode, info.permissions, info.owner, info.group],
    ['test_dir', 'dir', `${currentPath.trim()}/test_dir`, true, 0o755, 'drwxr-xr-x', 'user', 'user'])
  await assert.rejects(sandbox.files.getInfo('test_does_not_exist_dir'), NotFoundError)
  // read.test.ts
  await assert.rejects(sandbox.files.read('non_existing_file.txt'), NotFoundError)
  await sandbox.commands.run('touch empty-file.txt')
  assert.equal(await sandbox.files.read('empty-file.txt'), '')
  // rename.test.ts
  await sandbox.files.write('test_rename_old.txt', 'This file will be renamed.')
  info = await sandbox.files.rename('test_rename_old.txt', 'test_rename_new.txt')
  assert.deepEqual([info.name, info.type, info.path], ['test_rename_new.txt', 'file', '/home/user/test_rename_new.txt'])
  assert.equal(await sandbox.files.exists('test_rename_old.txt'), false)
  assert.equal(await sandbox.files.exists('test_rename_new.txt'), true)
  await assert.rejects(sandbox.files.rename('non_existing_file.txt', 'new_non_existing_file.txt'), NotFoundError)
  // makeDir.test.ts
  assert.equal(await sandbox.files.makeDir('test_directory2'), true)
  assert.equal(await sandbox.files.makeDir('test_directory2'), false)
  await sandbox.files.makeDir('test_directory3/nested_directory')
  assert.equal(await sandbox.files.exists('test_directory3/nested_directory'), true)
})

test(`${runtime}: files watchDir (watch.test.ts)`, async () => {
  const sandbox = await make()
  const within = (p) => Promise.race([p, wait(10_000).then(() => { throw new Error('no event in 10 s') })])
  await sandbox.files.makeDir('test_watch_dir')
  await sandbox.files.write('test_watch_dir/test_watch.txt', 'This file will be watched.')
  let trigger
  let got = new Promise((r) => { trigger = r })
  let handle = await sandbox.files.watchDir('test_watch_dir', async (event) => {
    if (event.type === FilesystemEventType.WRITE && event.name === 'test_watch.txt') trigger()
  })
  await sandbox.files.write('test_watch_dir/test_watch.txt', 'This file has been modified.')
  await within(got)
  await handle.stop()
  // recursive
  await sandbox.files.makeDir('test_recursive_watch_dir/test_nested_watch_dir')
  await sandbox.files.write('test_recursive_watch_dir/test_nested_watch_dir/test_watch.txt', 'x')
  got = new Promise((r) => { trigger = r })
  handle = await sandbox.files.watchDir('test_recursive_watch_dir', async (event) => {
    if (event.type === FilesystemEventType.WRITE && event.name === 'test_nested_watch_dir/test_watch.txt') trigger()
  }, { recursive: true })
  await sandbox.files.write('test_recursive_watch_dir/test_nested_watch_dir/test_watch.txt', 'y')
  await within(got)
  await handle.stop()
  // recursive, after a nested folder is added
  await sandbox.files.makeDir('test_recursive_watch_dir_add')
  let triggerFile
  let triggerFolder
  const fileEv = new Promise((r) => { triggerFile = r })
  const folderEv = new Promise((r) => { triggerFolder = r })
  handle = await sandbox.files.watchDir('test_recursive_watch_dir_add', async (event) => {
    if (event.type === FilesystemEventType.WRITE && event.name === 'test_nested_watch_dir/test_watch.txt') triggerFile()
    else if (event.type === FilesystemEventType.CREATE && event.name === 'test_nested_watch_dir') triggerFolder()
  }, { recursive: true })
  await sandbox.files.makeDir('test_recursive_watch_dir_add/test_nested_watch_dir')
  await within(folderEv)
  await sandbox.files.write('test_recursive_watch_dir_add/test_nested_watch_dir/test_watch.txt', 'z')
  await within(fileEv)
  await handle.stop()
  await assert.rejects(sandbox.files.watchDir('non_existing_watch_dir', () => {}), FileNotFoundError)
  await sandbox.files.write('test_watch.txt', 'x')
  await assert.rejects(sandbox.files.watchDir('test_watch.txt', () => {}), SandboxError)
})

// fetchText fetches url as E2B's tests do (global fetch): status and body.
async function fetchText(url, init) {
  const res = await fetch(url, init)
  return { status: res.status, body: await res.text() }
}

test(`${runtime}: signed file URLs of a secure sandbox (signing.test.ts, secure.test.ts)`, async () => {
  const sandbox = await make({ secure: true })
  await sandbox.files.write('hello.txt', 'hello world')
  let r = await fetchText(await sandbox.downloadUrl('hello.txt', { useSignatureExpiration: -10_000 }))
  assert.equal(r.status, 401)
  assert.deepEqual(JSON.parse(r.body), { code: 401, message: 'signature is already expired' })
  r = await fetchText(await sandbox.downloadUrl('hello.txt', { useSignatureExpiration: 10_000 }))
  assert.deepEqual([r.status, r.body], [200, 'hello world'])
  r = await fetchText(await sandbox.downloadUrl('hello.txt'))
  assert.deepEqual([r.status, r.body], [200, 'hello world'])
  await sandbox.files.write('hello.txt', 'hello world', { user: 'root' })
  r = await fetchText(await sandbox.downloadUrl('hello.txt', { user: 'root', useSignatureExpiration: 10_000 }))
  assert.deepEqual([r.status, r.body], [200, 'hello world'])
  const upload = async (url) => {
    const form = new FormData()
    form.append('file', 'file content')
    return fetchText(url, { method: 'POST', body: form })
  }
  r = await upload(await sandbox.uploadUrl('hello.txt', { useSignatureExpiration: 10_000 }))
  assert.equal(r.status, 200, r.body)
  assert.deepEqual(JSON.parse(r.body), [{ name: 'hello.txt', path: '/home/user/hello.txt', type: 'file' }])
  r = await upload(await sandbox.uploadUrl('hello.txt', { user: 'root', useSignatureExpiration: 10_000 }))
  assert.equal(r.status, 200, r.body)
  assert.deepEqual(JSON.parse(r.body), [{ name: 'hello.txt', path: '/root/hello.txt', type: 'file' }])
  r = await upload(await sandbox.uploadUrl('hello.txt', { useSignatureExpiration: -100_000 }))
  assert.equal(r.status, 401)
  assert.deepEqual(JSON.parse(r.body), { code: 401, message: 'signature is already expired' })
  // Not in E2B's suite: a tampered signature gets envd's 401, as it would
  // from the sandbox's envd on E2B (the URL names no sandbox here).
  const tampered = new URL(await sandbox.downloadUrl('hello.txt', { useSignatureExpiration: 10_000 }))
  tampered.searchParams.set('signature', 'v1_' + 'A'.repeat(43))
  r = await fetchText(tampered)
  assert.equal(r.status, 401)
  assert.deepEqual(JSON.parse(r.body), { code: 401, message: 'invalid signature' })
  assert.equal((await sandbox.commands.run('echo Hello World!')).stdout, 'Hello World!\n')
  const sbxReconnect = await Sandbox.connect(sandbox.sandboxId)
  await sbxReconnect.files.write('hello.txt', 'hello world')
})

// get sends GET / to the daemon with the given Host and headers.
function get(host, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: origin.hostname, port: origin.port, path: '/', headers: { Host: host, ...headers } }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body, type: res.headers['content-type'] }))
    })
    req.on('error', reject)
    req.end()
  })
}

test(`${runtime}: a closed port is E2B's 502, as JSON and to a browser (closed_port.test.ts)`, async () => {
  const sbx = await make()
  await sbx.commands.run('python3 -m http.server 8000', { background: true })
  let res2 = await get(sbx.getHost(8000))
  for (let i = 0; i < 20 && res2.status !== 200; i++) {
    await wait(500)
    res2 = await get(sbx.getHost(8000))
  }
  assert.equal(res2.status, 200)
  const res = await get(sbx.getHost(3000))
  assert.equal(res.status, 502)
  const resp = JSON.parse(res.body)
  assert.equal(resp.message, 'The sandbox is running but port is not open')
  assert.equal(resp.sandboxId, sbx.sandboxId.split('-')[0])
  assert.equal(resp.port, 3000)
  const browser = await get(sbx.getHost(3000), {
    'User-Agent': 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/91.0.4472.124 Safari/537.36',
  })
  assert.equal(browser.status, 502)
  assert.ok(browser.body.includes('<title>Closed Port Error</title>'), browser.body)
})

test(`${runtime}: traffic for a killed sandbox is E2B's 502 (host.test.ts)`, async () => {
  const sandbox = await make()
  const host = sandbox.getHost(3000)
  await sandbox.kill()
  const res = await get(host)
  assert.equal(res.status, 502)
  const json = JSON.parse(res.body)
  assert.equal(json.message, 'The sandbox was not found')
  assert.ok(sandbox.sandboxId.startsWith(json.sandboxId))
  assert.equal(json.code, 502)
})

test(`${runtime}: sandbox lifecycle (connect, create, kill, timeout, info tests)`, async () => {
  // connect.test.ts
  const sbx = await Sandbox.create('base', { timeoutMs: 10_000 })
  created.push(sbx)
  assert.equal(await sbx.isRunning(), true)
  assert.equal(await (await Sandbox.connect(sbx.sandboxId)).isRunning(), true)
  const long = await make({ timeoutMs: 300_000 })
  const infoBefore = await Sandbox.getInfo(long.sandboxId)
  await Sandbox.connect(long.sandboxId, { timeoutMs: 10_000 })
  assert.equal((await long.getInfo()).endAt.getTime(), infoBefore.endAt.getTime(), 'connect must not shorten the timeout')
  await long.connect({ timeoutMs: 600_000 })
  assert.ok((await long.getInfo()).endAt.getTime() > infoBefore.endAt.getTime(), 'connect extends the timeout')
  await sbx.kill()
  await assert.rejects(Sandbox.connect(sbx.sandboxId), (e) => e.name === 'NotFoundError' || e instanceof NotFoundError || /not found/i.test(e.message))
  // create.test.ts
  const md = await Sandbox.create('base', { timeoutMs: 5_000, metadata: { 'test-key': 'test-value' } })
  created.push(md)
  assert.ok(md.envdApi?.version ?? true)
  const listedMd = (await Sandbox.list().nextItems()).find((s) => s.sandboxId === md.sandboxId)
  assert.deepEqual(listedMd?.metadata, { 'test-key': 'test-value' })
  // api/kill.test.ts
  await Sandbox.kill(md.sandboxId)
  const left = await Sandbox.list({ query: { state: ['running'], metadata: { 'test-key': 'test-value' } } }).nextItems()
  assert.ok(!left.map((s) => s.sandboxId).includes(md.sandboxId))
  assert.equal(await Sandbox.kill('non-existing-sandbox'), false)
  // api/info.test.ts
  assert.equal((await Sandbox.getInfo(long.sandboxId)).sandboxId, long.sandboxId)
  // timeout.test.ts
  assert.ok((await long.getInfo()).endAt instanceof Date)
  await long.setTimeout(5000)
  await wait(1000)
  await long.setTimeout(10000)
  await wait(6000)
  assert.equal(await long.isRunning(), true)
  await long.setTimeout(2000)
  await wait(3500)
  assert.ok(!(await long.isRunning({ requestTimeoutMs: 1000 })))
})

test(`${runtime}: list with metadata, state and paging (api/list.test.ts)`, async () => {
  const sandbox = await make()
  const sandboxTestId = sandbox.testId
  let sandboxes = await Sandbox.list({ query: { metadata: { sandboxTestId } } }).nextItems()
  assert.ok(sandboxes.some((s) => s.sandboxId === sandbox.sandboxId))
  const uniqueId = Date.now().toString()
  const extra = await Sandbox.create('base', { metadata: { uniqueId } })
  created.push(extra)
  sandboxes = await Sandbox.list({ query: { metadata: { uniqueId } } }).nextItems()
  assert.deepEqual(sandboxes.map((s) => s.sandboxId), [extra.sandboxId])
  await extra.kill()
  // paginate running sandboxes
  const extraSbx = await Sandbox.create('base', { metadata: { sandboxTestId } })
  created.push(extraSbx)
  let paginator = Sandbox.list({ limit: 1, query: { metadata: { sandboxTestId }, state: ['running'] } })
  sandboxes = await paginator.nextItems()
  assert.equal(sandboxes.length, 1)
  assert.equal(sandboxes[0].state, 'running')
  assert.equal(paginator.hasNext, true)
  assert.notEqual(paginator.nextToken, undefined)
  assert.equal(sandboxes[0].sandboxId, extraSbx.sandboxId)
  let sandboxes2 = await paginator.nextItems()
  assert.equal(sandboxes2.length, 1)
  assert.equal(paginator.hasNext, false)
  assert.equal(paginator.nextToken, undefined)
  assert.equal(sandboxes2[0].sandboxId, sandbox.sandboxId)
  // paginate running and paused sandboxes
  await extraSbx.betaPause()
  paginator = Sandbox.list({ limit: 1, query: { metadata: { sandboxTestId }, state: ['running', 'paused'] } })
  sandboxes = await paginator.nextItems()
  assert.deepEqual([sandboxes.length, sandboxes[0].state, paginator.hasNext], [1, 'paused', true])
  assert.ok(sandboxes[0].sandboxId.startsWith(extraSbx.sandboxId.split('-')[0]))
  sandboxes2 = await paginator.nextItems()
  assert.deepEqual([sandboxes2.length, sandboxes2[0].state, paginator.hasNext, paginator.nextToken], [1, 'running', false, undefined])
  assert.equal(sandboxes2[0].sandboxId, sandbox.sandboxId)
  // list paused sandboxes
  sandboxes = await Sandbox.list({ query: { metadata: { sandboxTestId }, state: ['paused'] } }).nextItems()
  assert.ok(sandboxes.some((s) => s.sandboxId.startsWith(extraSbx.sandboxId.split('-')[0]) && s.state === 'paused'))
  // paginate iterator
  paginator = Sandbox.list({ query: { metadata: { sandboxTestId } } })
  const all = []
  while (paginator.hasNext) all.push(...await paginator.nextItems())
  assert.ok(all.some((s) => s.sandboxId === sandbox.sandboxId))
})

test(`${runtime}: killing the sandbox during a command (sandboxKilledDuringRun.test.ts)`, async () => {
  const sandbox = await make()
  const cmd = await sandbox.commands.run('sleep 60', { background: true })
  await sandbox.kill()
  const err = await cmd.wait().catch((e) => e)
  assert.ok(err instanceof SandboxError, String(err))
  assert.ok(err.message.includes('sandbox was killed or reached its end of life'), err.message)
})

test(`${runtime}: metrics (metrics.test.ts)`, async () => {
  const sandbox = await make()
  const start = new Date()
  let metrics = []
  let end = new Date()
  for (let i = 0; i < 60; i++) {
    end = new Date()
    metrics = await sandbox.getMetrics({ start, end })
    if (metrics.length > 0) break
    await wait(500)
  }
  assert.ok(metrics.length > 0)
  for (const k of ['diskTotal', 'diskUsed', 'memTotal', 'memUsed', 'cpuUsedPct', 'cpuCount']) assert.notEqual(metrics[0][k], undefined, k)
  for (const m of metrics) {
    assert.ok(m.timestamp.getTime() >= start.getTime() - 10_000)
    assert.ok(m.timestamp.getTime() <= end.getTime() + 10_000)
  }
  const none = await sandbox.getMetrics({ start: new Date(start.getTime() - 3600_000), end: new Date(start.getTime() - 1800_000) })
  assert.equal(none.length, 0)
})

test(`${runtime}: code interpreter contexts, kernels, timeouts (code-interpreter js/tests)`, async () => {
  const sandbox = await make({}, CodeSandbox, 'code-interpreter-v1')
  // contexts.test.ts
  let context = await sandbox.createCodeContext()
  await wait(1000)
  let contexts = await sandbox.listCodeContexts()
  let lastContext = contexts[contexts.length - 1]
  assert.ok(lastContext.id)
  assert.equal(lastContext.language, context.language)
  assert.equal(lastContext.cwd, context.cwd)
  context = await sandbox.createCodeContext({ language: 'python', cwd: '/root' })
  await wait(1000)
  contexts = await sandbox.listCodeContexts()
  lastContext = contexts[contexts.length - 1]
  assert.equal(lastContext.language, context.language)
  assert.equal(lastContext.cwd, context.cwd)
  const removed = await sandbox.createCodeContext()
  await sandbox.removeCodeContext(removed.id)
  assert.ok(!(await sandbox.listCodeContexts()).map((c) => c.id).includes(removed.id))
  const langs = (await sandbox.listCodeContexts()).map((c) => c.language)
  assert.ok(langs.includes('python') && langs.includes('javascript'), langs.join())
  const rc = await sandbox.createCodeContext()
  await sandbox.runCode('x = 1', { context: rc })
  await sandbox.restartCodeContext(rc.id)
  const execution = await sandbox.runCode('x', { context: rc })
  assert.equal(execution.error?.name, 'NameError')
  assert.equal(execution.error?.value, "name 'x' is not defined")
  // defaultKernels.test.ts
  assert.deepEqual((await sandbox.runCode('console.log("Hello World!")', { language: 'js' })).logs.stdout, ['Hello World!\n'])
  assert.deepEqual((await sandbox.runCode('const message: string = "Hello World!"; console.log(message)', { language: 'ts' })).logs.stdout, ['Hello World!\n'])
  // timeout.test.ts
  const tc = await sandbox.createCodeContext()
  await assert.rejects(sandbox.runCode('import time; time.sleep(5)', { context: tc, timeoutMs: 2_000 }))
  assert.equal((await sandbox.runCode('x = 1; x', { context: tc, timeoutMs: 15_000 })).text, '1')
  // interrupt.test.ts
  await assert.rejects(sandbox.runCode('import time; time.sleep(30)', { timeoutMs: 3_000 }))
  await wait(5_000)
  assert.equal((await sandbox.runCode('1 + 1', { timeoutMs: 10_000 })).text, '2')
})

test(`${runtime}: runCode when the sandbox is killed during it (killedSandbox.test.ts)`, async () => {
  const sandbox = await make({}, CodeSandbox, 'code-interpreter-v1')
  const execution = sandbox.runCode('import time; time.sleep(60)')
  const assertion = Promise.all([
    assert.rejects(execution, /sandbox was killed while the request was in progress/),
    assert.rejects(execution, TimeoutError),
  ])
  await wait(2_000)
  await sandbox.kill()
  await assertion
})

test(`${runtime}: code interpreter callbacks, execution count, shell escapes, env vars (code-interpreter js/tests)`, async () => {
  const sandbox = await make({ envs: { FOO: 'bar', SBX: 'value', TEST_ENV_VAR: 'supertest' } }, CodeSandbox, 'code-interpreter-v1')
  // executionCount.test.ts, bash.test.ts
  await sandbox.runCode('!pwd')
  const result = await sandbox.runCode('!pwd')
  assert.equal(result.executionCount, 2)
  assert.equal(result.logs.stdout.join().trim(), '/home/user')
  // callbacks.test.ts
  const results = []
  let ex = await sandbox.runCode('x =1; x', { onResult: (r) => results.push(r) })
  assert.equal(results.length, 1)
  assert.equal(ex.results[0].text, '1')
  const errors = []
  ex = await sandbox.runCode('xyz', { onError: (e) => errors.push(e) })
  assert.equal(errors.length, 1)
  assert.equal(ex.error.name, 'NameError')
  const stdout = []
  ex = await sandbox.runCode('print("hello")', { onStdout: (o) => stdout.push(o) })
  assert.equal(stdout.length, 1)
  assert.deepEqual(ex.logs.stdout, ['hello\n'])
  const stderr = []
  ex = await sandbox.runCode('import sys;print("This is an error message", file=sys.stderr)', { onStderr: (o) => stderr.push(o) })
  assert.equal(stderr.length, 1)
  assert.deepEqual(ex.logs.stderr, ['This is an error message\n'])
  // envVars.test.ts
  assert.equal((await sandbox.runCode("import os; x = os.getenv('TEST_ENV_VAR'); x")).results[0].text.trim(), 'supertest')
  assert.equal((await sandbox.runCode("import os; os.getenv('FOO')", { envs: { FOO: 'baz' } })).results[0].text.trim(), 'baz')
  await sandbox.runCode("import os; os.environ['FOO'] = 'bar'; os.environ['RUNTIME_ENV'] = 'js_runtime'")
  assert.equal((await sandbox.runCode("import os; os.getenv('FOO')", { envs: { FOO: 'baz' } })).results[0].text.trim(), 'baz')
  assert.equal((await sandbox.runCode("import os; os.getenv('RUNTIME_ENV')")).results[0].text.trim(), 'js_runtime')
  assert.equal((await sandbox.runCode("import os; os.getenv('SBX')")).results[0].text.trim(), 'value')
  assert.equal((await sandbox.runCode("import os; os.getenv('FOO')")).results[0].text.trim(), 'bar')
})

test(`${runtime}: the list's next page goes on after a sandbox that ended since (not in E2B's suite)`, async () => {
  const tag = `p${Date.now()}`
  const made = []
  for (let i = 0; i < 3; i++) made.push(await make({ metadata: { tag } }))
  const paginator = Sandbox.list({ limit: 2, query: { metadata: { tag } } })
  const first = await paginator.nextItems()
  assert.deepEqual(first.map((s) => s.sandboxId), [made[2].sandboxId, made[1].sandboxId])
  await made[1].kill() // the page's last, which the token names
  const second = await paginator.nextItems()
  assert.deepEqual(second.map((s) => s.sandboxId), [made[0].sandboxId])
  assert.equal(paginator.hasNext, false)
})
