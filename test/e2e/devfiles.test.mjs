// End-to-end: files.read of a character device with the official e2b SDK
// against a real `sbx serve` (test/e2e/daemon/run.sh): /dev/zero and
// /dev/urandom read as /dev/null does, empty, as envd answers (lseek says
// they hold nothing), gzip-encoded or not, and a signed download URL with
// a Range header answers as an empty file's. Before, a gzip read of
// /dev/zero or /dev/urandom streamed forever.
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
