// End-to-end: E2B volumes with the official e2b SDK's Volume class (the
// /volumes API and the volume content API) and Sandbox.create's
// volumeMounts, against a real `sbx serve`. Run through
// test/e2e/daemon/run.sh <runtime> test/e2e/volume.test.mjs (it exports
// E2B_VOLUME_API_URL, where the SDK sends content calls).
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, Volume, VolumeError, VolumePathNotFoundError } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const suffix = `${runtime}-${Date.now()}`
const sandboxes = []
const volumes = []

async function make(opts = {}) {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000, ...opts })
  sandboxes.push(sbx)
  return sbx
}

async function volume(name) {
  const v = await Volume.create(`${name}-${suffix}`)
  volumes.push(v)
  return v
}

after(async () => {
  await Promise.allSettled(sandboxes.map((s) => s.kill()))
  await Promise.allSettled(volumes.map((v) => Volume.destroy(v.volumeId)))
})

test('create, list, getInfo, connect, destroy', async () => {
  const v = await volume('crud')
  assert.ok(v.volumeId && v.token)
  assert.equal(v.name, `crud-${suffix}`)
  const listed = await Volume.list()
  assert.ok(listed.some((x) => x.volumeId === v.volumeId && x.name === v.name))
  const info = await Volume.getInfo(v.volumeId)
  assert.equal(info.token, v.token)
  const again = await Volume.connect(v.volumeId)
  assert.equal(again.name, v.name)
  await assert.rejects(Volume.create(`crud-${suffix}`), VolumeError) // names are unique
  for (const bad of ['', 'vol name', 'vol.name', 'vol/a', '{x}']) {
    await assert.rejects(Volume.create(bad), (e) => e instanceof VolumeError || e.name === 'InvalidArgumentError', bad)
  }
  assert.equal(await Volume.destroy(v.volumeId), true)
  assert.equal(await Volume.destroy(v.volumeId), false)
  await assert.rejects(Volume.getInfo(v.volumeId), (e) => e.name === 'VolumeNotFoundError')
})

test('content API: write, read in every format, metadata, dirs, list, remove', async () => {
  const v = await volume('files')
  await v.writeFile('/test.txt', 'Hello, World!')
  assert.equal(await v.readFile('/test.txt'), 'Hello, World!')
  const bytes = new TextEncoder().encode('bytes content')
  await v.writeFile('/b.bin', bytes.buffer)
  assert.deepEqual(await v.readFile('/b.bin', { format: 'bytes' }), bytes)
  await v.writeFile('/blob.txt', new Blob(['blob content']))
  assert.equal(await (await v.readFile('/blob.txt', { format: 'blob' })).text(), 'blob content')
  await v.writeFile('/empty.txt', '')
  assert.equal(await v.readFile('/empty.txt'), '')
  await v.writeFile('/test.txt', 'New content', { force: true })
  assert.equal(await v.readFile('/test.txt'), 'New content')

  const meta = await v.writeFile('/meta.txt', 'm', { uid: 1000, gid: 1000, mode: 0o644 })
  assert.equal(meta.type, 'file')
  const info = await v.getInfo('/meta.txt')
  assert.deepEqual([info.uid, info.gid, info.mode, info.name, info.path], [1000, 1000, 0o644, 'meta.txt', '/meta.txt'])
  assert.ok(info.mtime instanceof Date)
  const upd = await v.updateMetadata('/meta.txt', { uid: 1001, gid: 1001, mode: 0o755 })
  assert.deepEqual([upd.uid, upd.gid, upd.mode], [1001, 1001, 0o755])
  await assert.rejects(v.updateMetadata('/nope.txt', { mode: 0o644 }), VolumePathNotFoundError)

  await v.makeDir('/info-dir')
  assert.equal((await v.getInfo('/info-dir')).type, 'directory')
  await assert.rejects(v.makeDir('/a/b/c'), VolumePathNotFoundError)
  await v.makeDir('/nested/deep/path', { force: true })
  await v.writeFile('/nested/deep/path/file.txt', 'nested')
  assert.equal(await v.readFile('/nested/deep/path/file.txt'), 'nested')
  const dir = await v.makeDir('/dm', { uid: 1000, gid: 1000, mode: 0o750 })
  assert.equal(dir.mode & 0o777, 0o750)

  const names = (await v.list('/')).map((e) => e.name)
  for (const n of ['test.txt', 'info-dir', 'nested']) assert.ok(names.includes(n), n)
  assert.ok((await v.list('/nested/deep/path')).some((e) => e.name === 'file.txt'))
  await assert.rejects(v.list('/non-existent'), VolumePathNotFoundError)
  assert.equal(await v.exists('/non-existent.txt'), false)
  assert.equal(await v.exists('/test.txt'), true)

  await v.remove('/nested')
  assert.equal(await v.exists('/nested'), false)
  await assert.rejects(v.remove('/non-existent.txt'), VolumePathNotFoundError)
  await assert.rejects(v.readFile('/non-existent.txt'), VolumePathNotFoundError)
})

test('a mounted volume is shared by sandboxes, persists across them, and can be read-only', async () => {
  const v = await volume('mount')
  await v.writeFile('/seed.txt', 'from the volume API')
  const writer = await make({ volumeMounts: { '/mnt/data': v } })
  const info = await writer.getInfo()
  assert.deepEqual(info.volumeMounts, [{ name: v.name, path: '/mnt/data' }])
  assert.equal(await writer.files.read('/mnt/data/seed.txt'), 'from the volume API')
  await writer.files.write('/mnt/data/hello.txt', 'written by the writer')
  const r = await writer.commands.run('id -u; stat -c %u /mnt/data/hello.txt')
  assert.equal(r.stdout, '1000\n1000\n')

  // by name, at the same time as the writer
  const reader = await make({ volumeMounts: { '/home/user/vol': v.name } })
  assert.equal(await reader.files.read('/home/user/vol/hello.txt'), 'written by the writer')
  await reader.commands.run('echo back > /home/user/vol/back.txt')
  assert.equal(await writer.files.read('/mnt/data/back.txt'), 'back\n')
  assert.equal(await v.readFile('/back.txt'), 'back\n')

  await assert.rejects(Volume.destroy(v.volumeId), VolumeError) // in use: 409
  await writer.kill()
  await reader.kill()
  const later = await make({ volumeMounts: { '/mnt/data': v } })
  assert.equal(await later.files.read('/mnt/data/hello.txt'), 'written by the writer')
  await later.kill()

  // read-only (sbx extension readOnly on a mount; the SDK sends name and path only)
  const res = await fetch(`${process.env.E2B_API_URL}/v2/sandboxes`, {
    method: 'POST',
    headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ templateID: 'base', timeout: 120, volumeMounts: [{ name: v.name, path: '/ro', readOnly: true }] }),
  })
  assert.equal(res.status, 201)
  const ro = await Sandbox.connect((await res.json()).sandboxID)
  sandboxes.push(ro)
  assert.equal(await ro.files.read('/ro/hello.txt'), 'written by the writer')
  await assert.rejects(ro.commands.run('echo x > /ro/x.txt'), (e) => /Read-only/.test(e.stderr))
  await ro.kill()
  assert.equal(await Volume.destroy(v.volumeId), true)
})

test('bad volume mounts are 400s naming the problem', async () => {
  const v = await volume('bad')
  for (const [mounts, want] of [
    [{ '/mnt/x': `missing-${suffix}` }, /missing-.* not found/],
    [{ relative: v }, /absolute/],
    [{ '/': v }, /at \//],
    [{ '/proc/x': v }, /reserved/],
    [{ '/.sbx': v }, /reserved/],
    [{ '/a': v, '/a/b': v }, /overlap/],
  ]) {
    await assert.rejects(Sandbox.create('base', { volumeMounts: mounts }), (e) => want.test(e.message) && /400/.test(e.message), JSON.stringify(Object.keys(mounts)))
  }
})

test('a symlink planted in a volume by a sandbox never leads the content API out', async () => {
  const v = await volume('escape')
  const sbx = await make({ volumeMounts: { '/mnt/v': v } })
  await sbx.commands.run('ln -s /etc/hostname /mnt/v/leak; ln -s / /mnt/v/root; ln -s ../../../../.. /mnt/v/up', { user: 'root' })
  for (const p of ['/leak', '/root/etc/hostname', '/up/etc/passwd', '/../../../etc/passwd']) {
    await assert.rejects(v.readFile(p), VolumePathNotFoundError, p)
  }
  const st = await v.getInfo('/leak')
  assert.equal(st.type, 'symlink')
  assert.equal(st.target, '/etc/hostname')
  // a write through the link lands inside the volume, where the sandbox sees it
  await v.writeFile('/root/tmp/inside.txt', 'inside')
  assert.equal((await sbx.commands.run('cat /mnt/v/tmp/inside.txt')).stdout, 'inside')
  await v.remove('/root')
  assert.equal((await sbx.commands.run('test -d /etc && echo ok')).stdout, 'ok\n')
})
