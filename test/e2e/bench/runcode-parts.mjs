// Where a runCode("1+1") round trip goes (issue 14), measured in one run
// against a running daemon on this host (E2B_API_URL, E2B_SANDBOX_URL,
// E2B_API_KEY; run as root: the host reaches the sandbox's address directly).
// Per round, interleaved N times: the SDK's runCode through the daemon, the
// same POST /execute by plain fetch through the daemon, and straight to the
// agent at the sandbox's address (no daemon); then, inside the sandbox
// (runcode-parts.py), the agent's /execute over the sandbox's loopback and a
// kernel of its own driven like the driver drives one. Medians in ms.
//   node test/e2e/bench/runcode-parts.mjs [N] [rounds] [plain]
// "plain": the in-sandbox kernel gets no options (main before 2026-11-26).
import { Sandbox } from '@e2b/code-interpreter'
import { readFileSync } from 'node:fs'

const n = Number(process.argv[2] || 50)
const rounds = Number(process.argv[3] || 2)
const plain = process.argv[4] === 'plain' ? 'plain' : ''
const med = (t) => +[...t].sort((a, b) => a - b)[Math.floor(t.length / 2)].toFixed(2)
const sbx = await Sandbox.create('code-interpreter-v1', { timeoutMs: 600_000 })
try {
  await sbx.runCode('x = 1')
  const ip = (await sbx.commands.run("ip -4 addr show eth0 | sed -n 's/.*inet \\([0-9.]*\\).*/\\1/p'")).stdout.trim()
  const headers = { 'Content-Type': 'application/json' }
  if (sbx.envdAccessToken) headers['X-Access-Token'] = sbx.envdAccessToken
  const viaDaemon = { ...headers, 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49999' }
  const post = async (url, h) => {
    const r = await fetch(url, { method: 'POST', headers: h, body: JSON.stringify({ code: '1+1' }) })
    const b = await r.text()
    if (!b.includes('"text":"2"')) throw new Error(b)
  }
  await sbx.files.write('/tmp/runcode-parts.py', readFileSync(new URL('./runcode-parts.py', import.meta.url), 'utf8'))
  for (let r = 0; r < rounds; r++) {
    const sdk = [], daemon = [], direct = []
    for (let i = 0; i < n; i++) {
      let t0 = performance.now()
      const x = await sbx.runCode('1+1')
      sdk.push(performance.now() - t0)
      if (x.text !== '2') throw new Error(JSON.stringify(x))
      t0 = performance.now()
      await post(`${process.env.E2B_SANDBOX_URL}/execute`, viaDaemon)
      daemon.push(performance.now() - t0)
      t0 = performance.now()
      await post(`http://${ip}:49999/execute`, headers)
      direct.push(performance.now() - t0)
    }
    const inside = await sbx.commands.run(`python3 /tmp/runcode-parts.py ${n} ${plain} 2>/dev/null`,
      { timeoutMs: 300_000, envs: { TOK: sbx.envdAccessToken || '' } })
    console.log(JSON.stringify({
      load: readFileSync('/proc/loadavg', 'utf8').split(' ')[0],
      sdk_runCode: med(sdk), fetch_via_daemon: med(daemon), fetch_to_agent: med(direct), ...JSON.parse(inside.stdout)
    }))
  }
} finally {
  await sbx.kill()
}
