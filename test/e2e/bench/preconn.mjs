// Does a pooled sandbox's first command pay for the proxy's first upstream
// connection to the agent? 2N creates (one at a time, against a daemon with
// a warm pool), each left alone 1 s (its refill done); every other one gets
// a GET /health through the proxy first, so its first command finds a
// kept-alive connection. Prints medians of the first command without and
// with it, and of the second command. Usage (daemon running,
// E2B_API_URL/E2B_SANDBOX_URL/E2B_API_KEY set):
//   node test/e2e/bench/preconn.mjs [N]
import { Sandbox } from 'e2b'
const n = Number(process.argv[2] || 10)
const med = a => Number([...a].sort((x, y) => x - y)[Math.floor(a.length / 2)].toFixed(1))
const res = { cold: [], warm: [], second: [] }
for (let i = 0; i < 2 * n; i++) {
  const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })
  const kind = i % 2 ? 'warm' : 'cold'
  if (kind === 'warm') {
    const r = await fetch(`${process.env.E2B_SANDBOX_URL}/health`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } })
    await r.arrayBuffer()
  }
  await new Promise(r => setTimeout(r, 1000))
  let t = performance.now()
  await sbx.commands.run('true')
  res[kind].push(performance.now() - t)
  t = performance.now()
  await sbx.commands.run('true')
  res.second.push(performance.now() - t)
  await sbx.kill()
  await new Promise(r => setTimeout(r, 500))
}
console.log(JSON.stringify({ cold: med(res.cold), warm: med(res.warm), second: med(res.second) }))
