// TLS host routing end-to-end: the official SDK configured only by
// E2B_DOMAIN (as against E2B's cloud) talks to sbx over HTTPS: the API at
// https://api.<domain>, envd at https://49983-<id>.<domain>, and a server in
// the sandbox at https://${sbx.getHost(port)}, with and without the traffic
// token (allowPublicTraffic: false). Run by test/e2e/tls/run.sh, which makes
// the private CA, the wildcard certificate and the resolver.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Sandbox } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const domain = process.env.SBX_E2E_TLS_DOMAIN
const tlsDir = process.env.SBX_E2E_TLS_DIR
assert.ok(domain && tlsDir, 'run through test/e2e/tls/run.sh')

// Only E2B_DOMAIN (and the key): the SDK builds every URL itself, https.
delete process.env.E2B_API_URL
delete process.env.E2B_SANDBOX_URL
process.env.E2B_DOMAIN = domain

const created = []
after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

async function make(opts = {}) {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000, ...opts })
  created.push(sbx)
  return sbx
}

async function httpServer(sbx) {
  await sbx.files.write('/home/user/www/hello.txt', 'hello over https')
  await sbx.commands.run('cd /home/user/www && python3 -m http.server 8000', { background: true })
  for (let i = 0; i < 100; i++) {
    const r = await sbx.commands.run(`python3 -c "import socket; socket.create_connection(('127.0.0.1', 8000))"`).catch(() => null)
    if (r) return
    await new Promise((res) => setTimeout(res, 100))
  }
  throw new Error('nothing listens on 8000')
}

test(`${runtime}: the SDK over HTTPS by E2B_DOMAIN: API, commands, files`, async () => {
  const sbx = await make()
  assert.equal(sbx.sandboxDomain, domain, 'the API answers its domain (with the HTTPS port)')
  const out = await sbx.commands.run('echo hi; whoami')
  assert.equal(out.stdout, 'hi\nuser\n')
  await sbx.files.write('/home/user/tls.txt', 'over tls')
  assert.equal(await sbx.files.read('/home/user/tls.txt'), 'over tls')
  assert.ok((await sbx.files.list('/home/user')).some((e) => e.name === 'tls.txt'))
  const list = await Sandbox.list().nextItems()
  assert.ok(list.some((s) => s.sandboxId === sbx.sandboxId), 'listed through https://api.<domain>')
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  // The API is really behind TLS: plain HTTP to the same port is refused.
  const api = new URL(`https://api.${domain}/health`)
  const plain = await fetch(`http://127.0.0.1:${api.port}/health`).then((r) => r.status).catch(() => 'refused')
  assert.notEqual(plain, 200)
  assert.equal((await fetch(api)).status, 200)
})

test(`${runtime}: https://getHost(port) reaches a server in the sandbox`, async () => {
  const sbx = await make()
  await httpServer(sbx)
  const host = sbx.getHost(8000)
  assert.equal(host, `8000-${sbx.sandboxId}.${domain}`)
  const r = await fetch(`https://${host}/hello.txt`)
  assert.equal(r.status, 200)
  assert.equal(await r.text(), 'hello over https')
  const closed = await fetch(`https://${sbx.getHost(8009)}/`)
  assert.equal(closed.status, 502, 'a port nothing listens on is a 502')
})

test(`${runtime}: allowPublicTraffic: false over HTTPS needs the traffic token`, async () => {
  const sbx = await make({ network: { allowPublicTraffic: false } })
  assert.ok(sbx.trafficAccessToken, 'the SDK got a traffic access token')
  await httpServer(sbx)
  const url = `https://${sbx.getHost(8000)}/hello.txt`
  const denied = await fetch(url)
  assert.equal(denied.status, 403)
  assert.equal((await denied.json()).code, 403)
  const wrong = await fetch(url, { headers: { 'e2b-traffic-access-token': 'x'.repeat(40) } })
  assert.equal(wrong.status, 403)
  const ok = await fetch(url, { headers: { 'e2b-traffic-access-token': sbx.trafficAccessToken } })
  assert.equal(ok.status, 200)
  assert.equal(await ok.text(), 'hello over https')
})

// serveFails starts `sbx serve` with args and returns its exit code and stderr.
function serveFails(args) {
  const data = mkdtempSync(path.join(tmpdir(), 'sbx-tls-bad-'))
  return new Promise((resolve) => {
    execFile(process.env.SBX_E2E_BIN, ['serve', '--data-dir', data, '--listen', '127.0.0.1:0', ...args],
      { timeout: 20_000, env: { ...process.env, SBX_API_KEY: 'e2b_' + '0'.repeat(40) } }, (err, _out, stderr) => {
        rmSync(data, { recursive: true, force: true })
        resolve({ code: err ? err.code : 0, stderr })
      })
  })
}

test('bad TLS input is a clear startup error', async () => {
  const t = (f) => path.join(tlsDir, f)
  const cases = [
    [['--tls-cert', t('tls.pem')], /--tls-cert and --tls-key must be given together/],
    [['--tls-cert', t('missing.pem'), '--tls-key', t('tls.key')], /missing\.pem.*no such file/],
    [['--tls-cert', t('tls.pem'), '--tls-key', t('other.key')], /private key does not match/],
    [['--tls-cert', t('other.pem'), '--tls-key', t('other.key'), '--domain', 'sbx.test'], /does not cover api\.sbx\.test/],
  ]
  for (const [args, want] of cases) {
    const r = await serveFails(args)
    assert.equal(r.code, 1, `${args.join(' ')}: exit ${r.code}\n${r.stderr}`)
    assert.match(r.stderr, want)
  }
})
