// The upstream of secrets.test.mjs, run inside its network namespace by
// run.sh: HTTP :80 and HTTPS :443 (cert from run.sh's CA) for api.test and
// evil.test, echoing what they got as JSON (the legit recipient of an
// injected header may echo it); /redirect sends to https://evil.test/echo;
// /sse streams two events 500 ms apart; /big is 8 MiB. A DNS server on :53
// (UDP) answers every A query with this address (TTL 60), AAAA with nothing.
//   node upstream.mjs <ip> <dir with up.pem, up.key>   (writes <dir>/ready)
import http from 'node:http'
import https from 'node:https'
import dgram from 'node:dgram'
import { readFileSync, writeFileSync } from 'node:fs'

const [ip, dir] = process.argv.slice(2)

function handle(req, res) {
  const url = new URL(req.url, 'http://x')
  if (url.pathname === '/redirect') {
    res.writeHead(302, { Location: 'https://evil.test/echo' }).end()
  } else if (url.pathname === '/sse') {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' })
    res.write('data: one\n\n')
    setTimeout(() => res.end('data: two\n\n'), 500)
  } else if (url.pathname === '/big') {
    res.writeHead(200, { 'Content-Type': 'application/octet-stream' })
    res.end(Buffer.alloc(8 << 20, 120))
  } else {
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.end(JSON.stringify({ host: req.headers.host, auth: req.headers.authorization ?? '',
      xkey: req.headers['x-api-key'] ?? '', proto: `HTTP/${req.httpVersion}` }))
  }
}

// dnsAnswer answers a query with one A record for ip (or none for non-A).
function dnsAnswer(q) {
  let off = 12
  while (off < q.length && q[off] !== 0) off += q[off] + 1
  const qEnd = off + 5
  const qtype = q.readUInt16BE(off + 1)
  const head = Buffer.from(q.subarray(0, 12))
  head.writeUInt16BE(0x8180, 2) // response, RD, RA, NOERROR
  head.writeUInt16BE(1, 4)
  head.writeUInt16BE(qtype === 1 ? 1 : 0, 6)
  head.writeUInt32BE(0, 8)
  const parts = [head, q.subarray(12, qEnd)]
  if (qtype === 1) {
    const rr = Buffer.alloc(16)
    rr.writeUInt16BE(0xc00c, 0); rr.writeUInt16BE(1, 2); rr.writeUInt16BE(1, 4)
    rr.writeUInt32BE(60, 6); rr.writeUInt16BE(4, 10)
    ip.split('.').forEach((b, i) => { rr[12 + i] = Number(b) })
    parts.push(rr)
  }
  return Buffer.concat(parts)
}

const dns = dgram.createSocket('udp4')
dns.on('message', (msg, rinfo) => {
  try { dns.send(dnsAnswer(msg), rinfo.port, rinfo.address) } catch { /* malformed: no answer */ }
})
let pending = 3
const up = () => { if (--pending === 0) writeFileSync(`${dir}/ready`, '') }
dns.bind(53, ip, up)
http.createServer(handle).listen(80, ip, up)
https.createServer({ cert: readFileSync(`${dir}/up.pem`), key: readFileSync(`${dir}/up.key`) }, handle).listen(443, ip, up)
