// End-to-end: E2B's Secret class and network.rules through the official
// SDK, against a real upstream in a network namespace (run by
// test/e2e/secrets/run.sh, which sets SBX_E2E_UPSTREAM_IP). A sandbox calls
// https://api.test with no key; the daemon injects the rule's header with
// the secret, which never enters the sandbox and never goes elsewhere.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, Secret, SecretNotFoundError } from 'e2b'

const VALUE = 'sk-e2e-SECRET-9c1d-canary'
const created = []
const secrets = ['e2e-a', 'e2e-b', 'e2e-c', 'api-key']

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
  for (const n of secrets) await Secret.destroy(n).catch(() => {})
})

test('Secret: create, getInfo, exists, list pages, update, destroy; values never returned', async () => {
  const a = await Secret.create('E2E-A', 'value-a', { metadata: { team: 'x' } })
  assert.equal(a.name, 'e2e-a')
  assert.equal(a.version, 1)
  assert.deepEqual(a.metadata, { team: 'x' })
  assert.ok(a.secretId.startsWith('sec_'))
  assert.ok(a.createdAt instanceof Date && !Number.isNaN(a.createdAt.getTime()))
  await Secret.create('e2e-b', 'value-b')
  await Secret.create('e2e-c', 'value-c')
  await assert.rejects(Secret.create('e2e-a', 'again'))
  assert.equal((await Secret.getInfo(a.secretId)).name, 'e2e-a')
  assert.equal((await Secret.getInfo('e2e-a')).secretId, a.secretId)
  assert.equal(await Secret.exists('e2e-b'), true)
  assert.equal(await Secret.exists('nope'), false)
  await assert.rejects(Secret.getInfo('nope'), SecretNotFoundError)
  await assert.rejects(Secret.update('nope', 'x'), SecretNotFoundError)
  const p = Secret.list({ limit: 2 })
  const names = []
  let pages = 0
  while (p.hasNext) { names.push(...(await p.nextItems()).map((s) => s.name)); pages++ }
  assert.deepEqual(names.filter((n) => n.startsWith('e2e-')), ['e2e-a', 'e2e-b', 'e2e-c'])
  assert.ok(pages >= 2)
  const u = await Secret.update('e2e-a', 'value-a2')
  assert.equal(u.version, 2)
  assert.deepEqual(u.metadata, { team: 'x' })
  assert.ok(!JSON.stringify([a, u, names]).includes('value-a'))
  assert.equal(await Secret.destroy('e2e-b'), true)
  assert.equal(await Secret.destroy('e2e-b'), false)
  assert.equal(Secret.fill('api-key'), '${e2b.secrets.api-key}')
})

test('network.rules: the header reaches api.test with the secret, nothing leaks, updates and deletes apply per request', async () => {
  assert.ok(process.env.SBX_E2E_UPSTREAM_IP, 'run through test/e2e/secrets/run.sh')
  await Secret.create('api-key', VALUE)
  const rules = { 'api.test': [{ transform: { headers: { Authorization: `Bearer ${Secret.fill('api-key')}` } } }] }
  await assert.rejects(Sandbox.create('base', {
    network: { allowOut: ['api.test'], rules: { 'api.test': [{ transform: { headers: { 'X-K': Secret.fill('missing') } } }] } },
  }), /missing/)
  const sbx = await Sandbox.create('base', { network: { allowOut: ({ rules }) => [...rules.keys(), 'evil.test'], rules } })
  created.push(sbx)
  const sh = async (cmd) => (await sbx.commands.run(cmd, { timeoutMs: 30_000 }).catch((e) => e)).stdout ?? ''
  // Before any request: the value is nowhere in the sandbox.
  const env = await sh("env; tr '\\0' '\\n' </proc/1/environ; grep -rlsF -D skip \"$(echo c2stZTJlLVNFQ1JFVC05YzFkLWNhbmFyeQ== | base64 -d)\" /etc /home /tmp /usr/local; true")
  assert.ok(!env.includes(VALUE), env)
  const echo = JSON.parse(await sh('curl -sS -m 5 https://api.test/echo'))
  assert.equal(echo.auth, `Bearer ${VALUE}`)
  assert.equal(echo.proto, 'HTTP/1.1')
  assert.equal(JSON.parse(await sh('curl -sS -m 5 http://api.test/echo')).auth, `Bearer ${VALUE}`)
  const py = await sh(`python3 -c "import urllib.request as u, json; print(json.load(u.urlopen('https://api.test/echo'))['auth'])"`)
  assert.equal(py.trim(), `Bearer ${VALUE}`)
  // requests verifies with REQUESTS_CA_BUNDLE (not certifi's own bundle) when it is set: the
  // same file through Python's ssl (requests is not in the templates); Node with its bundled
  // roots (not the system's) plus NODE_EXTRA_CA_CERTS.
  for (const [what, tool] of [
    ['REQUESTS_CA_BUNDLE', `python3 -c "import os, ssl, json, urllib.request as u; c = ssl.create_default_context(cafile=os.environ['REQUESTS_CA_BUNDLE']); print(json.load(u.urlopen('https://api.test/echo', context=c))['auth'])"`],
    ['node', `node --use-bundled-ca -e "fetch('https://api.test/echo').then(r => r.json()).then(j => console.log(j.auth))"`]]) {
    const out = await sbx.commands.run(tool, { timeoutMs: 30_000 }).catch((e) => e)
    assert.equal(out.stdout.trim(), `Bearer ${VALUE}`, `${what}: ${out.stderr}`)
  }
  const sse = await sh('curl -sS -N -m 5 https://api.test/sse')
  assert.match(sse, /data: one\n\ndata: two/)
  // and each event as it is sent (two is sent 500 ms after one): nothing holds one back
  const stamped = await sh("curl -sS -N -m 5 https://api.test/sse | while IFS= read -r l; do [ -n \"$l\" ] && echo \"$(date +%s%3N) $l\"; done")
  const at = Object.fromEntries(stamped.trim().split('\n').map((l) => l.split(' ')).map(([t, , ev]) => [ev, Number(t)]))
  assert.ok(at.two - at.one >= 300, `events one and two arrived ${at.two - at.one} ms apart: ${stamped}`)
  assert.equal((await sh('curl -sS -m 10 https://api.test/big | wc -c')).trim(), String(8 << 20))
  // Wrong places: a lying Host, a name without rules, a redirect followed to it.
  const lies = await sh("curl -sS -m 5 -H 'Host: evil.test' https://api.test/echo")
  assert.match(lies, /this connection is for api\.test/)
  const other = await sh('curl -sS -m 5 -k https://evil.test/echo')
  assert.equal(JSON.parse(other).auth, '')
  assert.equal(JSON.parse(other).proto, 'HTTP/1.1') // curl -k: not intercepted, the upstream's own TLS
  const redirected = await sh('curl -sS -m 5 -k -L https://api.test/redirect')
  assert.equal(JSON.parse(redirected).host, 'evil.test')
  for (const out of [lies, other, redirected]) assert.ok(!out.includes(VALUE), out)
  // getInfo shows the rules with the placeholder.
  const info = await Sandbox.getInfo(sbx.sandboxId)
  assert.deepEqual(info.network.rules, rules)
  // updateNetwork applies to the next request; a destroyed secret fails it closed.
  await sbx.updateNetwork({ allowOut: ['api.test'], rules: { 'api.test': [{ transform: { headers: { 'X-Api-Key': Secret.fill('api-key') } } }] } })
  const upd = JSON.parse(await sh('curl -sS -m 5 https://api.test/echo'))
  assert.equal(upd.xkey, VALUE)
  assert.equal(upd.auth, '')
  await Secret.destroy('api-key')
  assert.equal((await sh("curl -sS -m 5 -o /dev/null -w '%{http_code}' https://api.test/echo")).trim(), '502')
})

