// End-to-end: files.read of a character device with the official e2b SDK
// against a real `sbx serve` (test/e2e/daemon/run.sh): /dev/zero and
// /dev/urandom read as /dev/null does, empty, as envd answers (lseek says
// they hold nothing), gzip-encoded or not, and a signed download URL with
// a Range header answers as an empty file's. Before, a gzip read of
// /dev/zero or /dev/urandom streamed forever. A procfs or sysfs file reads
// whole (before: 500 "seeker can't seek" for /proc files, and a sysfs file's
// Content-Length of 4096 cut its read short).
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'

const created = []
after(async () => { for (const s of created) await s.kill().catch(() => {}) })

test('files.read of /dev/null, /dev/zero and /dev/urandom ends, empty, in every encoding', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000, secure: true })
  created.push(sbx)
  for (const p of ['/dev/null', '/dev/zero', '/dev/urandom']) {
    for (const gzip of [false, true]) {
      const got = await sbx.files.read(p, { format: 'bytes', gzip, requestTimeoutMs: 10_000 })
      assert.equal(got.length, 0, `${p} gzip=${gzip}`)
    }
    const url = await sbx.downloadUrl(p, { useSignatureExpiration: 60 })
    for (const headers of [{}, { Range: 'bytes=0-10' }, { 'Accept-Encoding': 'gzip' }]) {
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) })
      const body = Buffer.from(await res.arrayBuffer())
      assert.equal(res.status, 200, `${p} ${JSON.stringify(headers)}`)
      assert.equal(body.length, 0, `${p} ${JSON.stringify(headers)}`)
    }
  }
})

test('files.read of /proc and /sys files gives their content, in every encoding', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000 })
  created.push(sbx)
  for (const p of ['/proc/version', '/proc/self/mounts', '/sys/devices/system/cpu/online']) {
    const want = (await sbx.commands.run(`cat ${p}`)).stdout
    assert.ok(want.length > 0, p)
    for (const gzip of [false, true]) {
      const got = await sbx.files.read(p, { gzip, requestTimeoutMs: 10_000 })
      if (p === '/proc/self/mounts') assert.match(got, /^\S+ \/ /m, `${p} gzip=${gzip}`) // the agent's own view
      else assert.equal(got, want, `${p} gzip=${gzip}`)
    }
    if (p === '/proc/self/mounts') continue
    // fetch asks for gzip unless told otherwise: identity is the plain path
    const url = await sbx.downloadUrl(p, { useSignatureExpiration: 60 })
    for (const headers of [{ 'Accept-Encoding': 'identity' }, { 'Accept-Encoding': 'identity', Range: 'bytes=0-3' }]) {
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) })
      assert.equal(res.status, 200, `${p} ${JSON.stringify(headers)}`)
      assert.equal(await res.text(), want, `${p} ${JSON.stringify(headers)}`)
    }
  }
})
