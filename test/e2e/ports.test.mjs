// Exposed ports end-to-end: a server inside the sandbox is reachable through
// the daemon's origin by the Host the official SDK's getHost() gives
// (<port>-<id>.<domain>), over HTTP and WebSocket; allowPublicTraffic: false
// requires the sandbox's traffic token. Run through test/e2e/daemon/run.sh.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import crypto from 'node:crypto'
import { Sandbox } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const origin = new URL(process.env.E2B_API_URL)
const created = []

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

async function make(opts = {}) {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000, ...opts })
  created.push(sbx)
  return sbx
}

// A WebSocket server in plain python: greets, then echoes one text frame.
const wsServer = `
import socket, hashlib, base64
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 8001)); s.listen()
while True:
    c, _ = s.accept(); d = b''
    while b'\\r\\n\\r\\n' not in d:
        more = c.recv(4096)
        if not more: break
        d += more
    if b'\\r\\n\\r\\n' not in d:
        c.close(); continue
    key = [l.split(b':', 1)[1].strip() for l in d.split(b'\\r\\n') if l.lower().startswith(b'sec-websocket-key')][0]
    acc = base64.b64encode(hashlib.sha1(key + b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest())
    c.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + acc + b'\\r\\n\\r\\n')
    msg = b'hello from the sandbox'; c.sendall(bytes([0x81, len(msg)]) + msg)
    h = c.recv(2); n = h[1] & 0x7f; mask = c.recv(4); p = b''
    while len(p) < n: p += c.recv(n - len(p))
    p = bytes(b ^ mask[i % 4] for i, b in enumerate(p)); c.sendall(bytes([0x81, len(p)]) + p); c.close()
`

async function listening(sbx, port) {
  for (let i = 0; i < 100; i++) {
    const r = await sbx.commands.run(`python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}))"`).catch(() => null)
    if (r) return
    await new Promise((res) => setTimeout(res, 100))
  }
  throw new Error(`nothing listens on ${port}`)
}

// get sends GET / to the daemon with the given Host and headers.
function get(host, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: origin.hostname, port: origin.port, path: '/hello.txt', headers: { Host: host, ...headers } }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function httpServer(sbx) {
  await sbx.files.write('/home/user/www/hello.txt', 'hello through the proxy')
  await sbx.commands.run('cd /home/user/www && python3 -m http.server 8000', { background: true })
  await listening(sbx, 8000)
}

test(`${runtime}: getHost(port) reaches a server in the sandbox, HTTP`, async () => {
  const sbx = await make()
  await httpServer(sbx)
  const host = sbx.getHost(8000)
  assert.match(host, new RegExp(`^8000-${sbx.sandboxId}\\.`))
  const r = await get(host)
  assert.equal(r.status, 200)
  assert.equal(r.body, 'hello through the proxy')
  const closed = await get(sbx.getHost(8009))
  assert.equal(closed.status, 502, 'a port nothing listens on is a 502')
  const why = JSON.parse(closed.body)
  assert.deepEqual(why, { code: 502, message: 'The sandbox is running but port is not open', sandboxId: sbx.sandboxId, port: 8009 },
    'as E2B says it, without the internal address')
  const other = await get(`8000-${'x'.repeat(20)}.${host.split('.').slice(1).join('.')}`)
  assert.equal(other.status, 502, 'an unknown sandbox is E2B\'s 502')
  assert.equal(JSON.parse(other.body).message, 'The sandbox was not found')
})

test(`${runtime}: getHost(port) reaches a WebSocket server in the sandbox`, async () => {
  const sbx = await make()
  await sbx.files.write('/home/user/ws.py', wsServer)
  let errs = ''
  await sbx.commands.run('python3 /home/user/ws.py', { background: true, timeoutMs: 0, onStderr: (d) => (errs += d) })
  await listening(sbx, 8001)
  const key = crypto.randomBytes(16).toString('base64')
  const [socket, head] = await new Promise((resolve, reject) => {
    const req = http.request({
      host: origin.hostname, port: origin.port, path: '/',
      headers: { Host: sbx.getHost(8001), Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13' },
    })
    req.on('upgrade', (res, sock, head) => {
      const want = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64')
      assert.equal(res.headers['sec-websocket-accept'], want)
      resolve([sock, head]) // head: the first frame when it came with the 101
    })
    req.on('response', (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => reject(new Error(`no upgrade: ${res.statusCode} ${body}; server stderr: ${errs}`)))
    })
    req.on('error', reject)
    req.end()
  })
  const frames = []
  let buf = Buffer.from(head)
  const next = () => new Promise((resolve) => {
    const take = () => {
      if (buf.length >= 2 && buf.length >= 2 + (buf[1] & 0x7f)) {
        const n = buf[1] & 0x7f
        const text = buf.subarray(2, 2 + n).toString()
        buf = buf.subarray(2 + n)
        resolve(text)
        return true
      }
      return false
    }
    if (!take()) frames.push(take)
  })
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d])
    while (frames.length && frames[0]()) frames.shift()
  })
  assert.equal(await next(), 'hello from the sandbox')
  const msg = Buffer.from('echo me')
  const mask = crypto.randomBytes(4)
  socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | msg.length]), mask, Buffer.from(msg.map((b, i) => b ^ mask[i % 4]))]))
  assert.equal(await next(), 'echo me')
  socket.destroy()
})

test(`${runtime}: allowPublicTraffic: false requires the traffic token`, async () => {
  const sbx = await make({ network: { allowPublicTraffic: false } })
  assert.ok(sbx.trafficAccessToken, 'the SDK got a traffic access token')
  await httpServer(sbx)
  const host = sbx.getHost(8000)
  assert.equal((await get(host)).status, 403)
  assert.equal((await get(host, { 'e2b-traffic-access-token': 'wrong' })).status, 403)
  const ok = await get(host, { 'e2b-traffic-access-token': sbx.trafficAccessToken })
  assert.equal(ok.status, 200)
  assert.equal(ok.body, 'hello through the proxy')
  const pub = await make()
  await httpServer(pub)
  const foreign = await get(pub.getHost(8000), { 'e2b-traffic-access-token': sbx.trafficAccessToken })
  assert.equal(foreign.status, 200, 'a public sandbox ignores tokens')
})
