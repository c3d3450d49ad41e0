// network.egressProxy end-to-end with the official SDK: a sandbox's TCP
// reaches the world only through the SOCKS5 server this test runs on the
// host's loopback (the daemon runs with --egress-proxy-open 127.0.0.1/32 and
// --uplink none, so nothing could go out directly anyway). The proxy records
// every destination and sends each to a local HTTP upstream. Covers create,
// getInfo (no password), updateNetwork (wrong password fails closed, no
// proxy turns tunnelling off), and a refused proxy address. Run through
// test/e2e/daemon/run.sh.
import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import { Sandbox } from 'e2b'

const created = []
const user = 'e2e-user'
const pass = 'e2e-pass-4d7f'
const asked = [] // "host:port" the proxy was asked for
let upstream, proxy, proxyAddr

// socks5 is a minimal RFC 1928/1929 server: username/password required,
// CONNECT only, every destination served by the local upstream.
function socks5(upPort) {
  return net.createServer((c) => {
    let buf = Buffer.alloc(0)
    let stage = 'greet'
    const need = (n) => buf.length >= n
    const take = (n) => { const b = buf.subarray(0, n); buf = buf.subarray(n); return b }
    c.on('error', () => {})
    c.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      for (;;) {
        if (stage === 'greet') {
          if (!need(2) || !need(2 + buf[1])) return
          const methods = take(2 + buf[1]).subarray(2)
          if (!methods.includes(2)) { c.end(Buffer.from([5, 0xff])); return }
          c.write(Buffer.from([5, 2])); stage = 'auth'
        } else if (stage === 'auth') {
          if (!need(2) || !need(3 + buf[1]) || !need(3 + buf[1] + buf[2 + buf[1]])) return
          const ul = buf[1], u = buf.subarray(2, 2 + ul).toString(), pl = buf[2 + ul]
          const p = buf.subarray(3 + ul, 3 + ul + pl).toString(); take(3 + ul + pl)
          if (u !== user || p !== pass) { c.end(Buffer.from([1, 1])); return }
          c.write(Buffer.from([1, 0])); stage = 'req'
        } else if (stage === 'req') {
          if (!need(5)) return
          const atyp = buf[3]
          const alen = atyp === 1 ? 4 : atyp === 4 ? 16 : 1 + buf[4]
          if (!need(4 + alen + 2)) return
          const r = take(4 + alen + 2)
          const host = atyp === 1 ? [...r.subarray(4, 8)].join('.') : atyp === 3 ? r.subarray(5, 5 + r[4]).toString() : 'v6'
          asked.push(`${host}:${r.readUInt16BE(4 + alen)}`)
          stage = 'pipe'
          const up = net.connect(upPort, '127.0.0.1', () => {
            c.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]))
            if (buf.length) up.write(buf)
            c.removeAllListeners('data'); c.pipe(up); up.pipe(c)
          })
          up.on('error', () => c.destroy())
          return
        } else return
      }
    })
  })
}

const listen = (srv) => new Promise((res) => srv.listen(0, '127.0.0.1', () => res(srv.address().port)))

before(async () => {
  upstream = http.createServer((req, res) => res.end(`upstream saw ${req.headers.host}${req.url}`))
  const upPort = await listen(upstream)
  proxy = socks5(upPort)
  proxyAddr = `127.0.0.1:${await listen(proxy)}`
})

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
  proxy?.close(); upstream?.close()
})

async function make(network) {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000, network })
  created.push(sbx)
  return sbx
}

const curl = (sbx, url) => sbx.commands.run(`curl -sS -m 5 ${url}`).then((r) => r.stdout, (e) => { throw e })

test('egressProxy: traffic goes through the proxy; getInfo hides the password', async () => {
  const sbx = await make({ egressProxy: { address: proxyAddr, username: user, password: pass } })
  assert.equal(await curl(sbx, 'http://11.213.0.7/hello'), 'upstream saw 11.213.0.7/hello')
  assert.ok(asked.includes('11.213.0.7:80'), `proxy asked for ${asked}`)
  const info = await sbx.getInfo()
  assert.deepEqual(info.network.egressProxy, { address: proxyAddr, username: user })
  const raw = await fetch(`${process.env.E2B_API_URL}/sandboxes/${sbx.sandboxId}`, { headers: { 'X-API-Key': process.env.E2B_API_KEY } })
  assert.ok(!(await raw.text()).includes(pass), 'getInfo returned the password')
})

test('updateNetwork: a wrong password fails closed; no egressProxy stops tunnelling', async () => {
  const sbx = await make({ egressProxy: { address: proxyAddr, username: user, password: pass } })
  await sbx.updateNetwork({ egressProxy: { address: proxyAddr, username: user, password: 'wrong' } })
  let n = asked.length
  // curl 56 "Connection reset by peer"; 7 or 55 when the RST beats connect()
  // or getpeername()
  await assert.rejects(curl(sbx, 'http://11.213.0.8/'), (e) => [7, 55, 56].includes(e.exitCode) && /reset|connect/i.test(e.stderr))
  assert.equal(asked.length, n, 'a refused handshake reached CONNECT')
  await sbx.updateNetwork({})
  assert.equal((await sbx.getInfo()).network?.egressProxy, undefined)
  n = asked.length
  // direct now: whatever the host's own route does with 11.213.0.9 (nothing
  // here; some hosts' gateways answer any address), the proxy is not used
  const direct = await curl(sbx, 'http://11.213.0.9/').catch((e) => e)
  assert.notEqual(direct, 'upstream saw 11.213.0.9/', 'the proxy answered after it was removed')
  assert.equal(asked.length, n, 'the proxy was used after it was removed')
  await sbx.updateNetwork({ egressProxy: { address: proxyAddr, username: user, password: pass } })
  assert.equal(await curl(sbx, 'http://11.213.0.9/x'), 'upstream saw 11.213.0.9/x')
})

test('a proxy in a private range is refused before the sandbox exists', async () => {
  await assert.rejects(Sandbox.create('base', { network: { egressProxy: { address: '10.9.9.9:1080' } } }), /not allowed/)
  await assert.rejects(Sandbox.create('base', { network: { egressProxy: { address: 'no-port' } } }), /host:port/)
})
