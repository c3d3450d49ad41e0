// End-to-end: the official e2b SDK against a real sbx-agent on
// localhost:49983, in E2B debug mode (no API). Run through
// test/e2e/agent/run.sh, which starts the agent as root with an /init secret.
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  Sandbox, CommandExitError, TimeoutError, AuthenticationError, InvalidArgumentError,
} from 'e2b'

const agentURL = process.env.SBX_E2E_AGENT_URL || 'http://localhost:49983'
const initToken = process.env.SBX_E2E_INIT_TOKEN || ''
const agentPid = Number(process.env.SBX_E2E_AGENT_PID || 0)

let sbx

// POST /init the way the daemon does (with the secret unless told otherwise).
async function init(body, secret = initToken) {
  const headers = { 'Content-Type': 'application/json' }
  if (secret) headers['X-Sbx-Init-Token'] = secret
  const res = await fetch(`${agentURL}/init`, { method: 'POST', headers, body: JSON.stringify(body) })
  return res.status
}

// eventually(cond) polls every 50 ms for up to `seconds` (10 by default).
async function eventually(what, cond, seconds = 10) {
  for (const end = Date.now() + seconds * 1000; Date.now() < end;) {
    if (await cond()) return
    await sleep(50)
  }
  assert.fail(`timed out waiting for ${what}`)
}

function rssKiB(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/)
  return Number(m[1])
}

// Children of the agent that are zombies.
function zombieChildren(pid) {
  const out = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let stat
    try { stat = readFileSync(`/proc/${name}/stat`, 'utf8') } catch { continue }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (f[0] === 'Z' && Number(f[1]) === pid) out.push(Number(name))
  }
  return out
}

before(async () => {
  // The daemon's /init: env vars for every process; no access token, since
  // debug-mode SDKs send none.
  assert.equal(await init({ envVars: { FROM_INIT: 'init-value' }, defaultUser: 'user' }), 204)
  sbx = await Sandbox.create()
  assert.equal(sbx.sandboxId, 'debug_sandbox_id')
})

test('health, envs, metrics', async () => {
  assert.equal((await fetch(`${agentURL}/health`)).status, 204)
  assert.deepEqual(await (await fetch(`${agentURL}/envs`)).json(), { FROM_INIT: 'init-value' })
  const m = await (await fetch(`${agentURL}/metrics`)).json()
  for (const k of ['ts', 'cpu_count', 'cpu_used_pct', 'mem_total', 'mem_used', 'mem_cache',
    'mem_total_mib', 'mem_used_mib', 'disk_used', 'disk_total']) {
    assert.equal(typeof m[k], 'number', k)
  }
  assert.ok(m.mem_total > 0 && m.disk_total > 0 && m.cpu_count >= 1)
  assert.ok(await sbx.isRunning())
})

test('/init only with the daemon secret; the access token guards everything else', async () => {
  assert.equal(await init({ envVars: { X: 'evil' } }, ''), 401)
  assert.equal(await init({ envVars: { X: 'evil' } }, 'wrong'), 401)
  assert.deepEqual(await (await fetch(`${agentURL}/envs`)).json(), { FROM_INIT: 'init-value' })

  assert.equal(await init({ accessToken: 'e2e-token' }), 204)
  try {
    await assert.rejects(sbx.commands.run('true'), AuthenticationError)
    assert.equal((await fetch(`${agentURL}/envs`)).status, 401)
    const ok = await fetch(`${agentURL}/envs`, { headers: { 'X-Access-Token': 'e2e-token' } })
    assert.equal(ok.status, 200)
    assert.equal((await fetch(`${agentURL}/health`)).status, 204)
    // Code inside the sandbox cannot take /init over with the access token.
    assert.equal((await fetch(`${agentURL}/init`, {
      method: 'POST', headers: { 'X-Access-Token': 'e2e-token' }, body: '{"accessToken":""}',
    })).status, 401)
  } finally {
    assert.equal(await init({ accessToken: '' }), 204)
  }
  assert.equal((await sbx.commands.run('echo ok')).stdout, 'ok\n')
})

test('commands.run: output, exit codes, env, cwd, user', async () => {
  const r = await sbx.commands.run('echo hello; echo oops >&2')
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'hello\n')
  assert.equal(r.stderr, 'oops\n')

  await assert.rejects(sbx.commands.run('echo partial; echo bad >&2; exit 3'), (e) => {
    assert.ok(e instanceof CommandExitError)
    assert.equal(e.exitCode, 3)
    assert.equal(e.stdout, 'partial\n')
    assert.equal(e.stderr, 'bad\n')
    assert.equal(e.error, 'exit status 3')
    return true
  })

  const env = await sbx.commands.run('echo $FROM_INIT $PER_CMD $HOME $USER', { envs: { PER_CMD: 'cmd-value' } })
  assert.equal(env.stdout, 'init-value cmd-value /home/user user\n')
  const over = await sbx.commands.run('echo $FROM_INIT', { envs: { FROM_INIT: 'overridden' } })
  assert.equal(over.stdout, 'overridden\n')

  assert.equal((await sbx.commands.run('pwd; whoami')).stdout, '/home/user\nuser\n')
  assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n')
  assert.equal((await sbx.commands.run('whoami; pwd', { user: 'root' })).stdout, 'root\n/root\n')
  await assert.rejects(sbx.commands.run('pwd', { cwd: '/no/such/dir' }), InvalidArgumentError)
  await assert.rejects(sbx.commands.run('true', { user: 'no-such-user' }), (e) => e instanceof AuthenticationError && /invalid username: 'no-such-user'/.test(e.message)) // envd's answer

  const lines = []
  await sbx.commands.run('for i in 1 2 3; do echo line$i; done', { onStdout: (d) => lines.push(d) })
  assert.equal(lines.join(''), 'line1\nline2\nline3\n')
})

test('commands.run: timeoutMs kills the command', async () => {
  const marker = `sleep 30.${Date.now() % 1000}`
  const t0 = Date.now()
  await assert.rejects(sbx.commands.run(`echo started; ${marker}`, { timeoutMs: 1000 }), TimeoutError)
  assert.ok(Date.now() - t0 < 8000, `took ${Date.now() - t0} ms`)
  await eventually('the timed-out command to be killed', async () => {
    const r = await sbx.commands.run(`pgrep -f '^${marker}$' || true`)
    return r.stdout === ''
  })
  assert.ok(!(await sbx.commands.list()).some((p) => p.args.join(' ').includes(marker)))
})

test('background commands: wait, sendStdin, closeStdin, kill', async () => {
  const reader = await sbx.commands.run('read line; echo got $line', { background: true, stdin: true })
  await reader.sendStdin('hello\n')
  const r1 = await reader.wait()
  assert.equal(r1.stdout, 'got hello\n')

  const cat = await sbx.commands.run('cat; echo done', { background: true, stdin: true })
  await sbx.commands.sendStdin(cat.pid, 'abc')
  await cat.sendStdin('def\n')
  await cat.closeStdin()
  const r2 = await cat.wait()
  assert.equal(r2.stdout, 'abcdef\ndone\n')

  const sleeper = await sbx.commands.run('sleep 30', { background: true })
  assert.equal(await sleeper.kill(), true)
  await assert.rejects(sleeper.wait(), (e) => e instanceof CommandExitError && e.error === 'signal: killed')
  assert.equal(await sbx.commands.kill(sleeper.pid), false)

  // Without stdin: true, stdin is /dev/null.
  assert.equal((await sbx.commands.run('cat; echo eof')).stdout, 'eof\n')
})

test('commands.list and commands.connect; background commands outlive their client', async () => {
  const h = await sbx.commands.run('for i in $(seq 1 40); do echo tick$i; sleep 0.05; done; exit 5', { background: true })
  const listed = (await sbx.commands.list()).find((p) => p.pid === h.pid)
  assert.ok(listed, 'listed')
  assert.equal(listed.cmd, '/bin/bash')
  assert.ok(listed.args.join(' ').includes('tick'))
  await h.disconnect()
  await sleep(300)
  assert.ok((await sbx.commands.list()).some((p) => p.pid === h.pid), 'still running after disconnect')

  const seen = []
  const again = await sbx.commands.connect(h.pid, { onStdout: (d) => seen.push(d) })
  await assert.rejects(again.wait(), (e) => e instanceof CommandExitError && e.exitCode === 5)
  const out = seen.join('')
  assert.match(out, /tick40\n$/)
  assert.ok(!out.startsWith('tick1\n'), 'connect streams output from the moment it attaches')
  assert.ok(!(await sbx.commands.list()).some((p) => p.pid === h.pid))
  await assert.rejects(sbx.commands.connect(h.pid))
})

test('pty: create, sendInput, resize, exit', async () => {
  let out = ''
  const dec = new TextDecoder()
  const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += dec.decode(d) } })
  const enc = new TextEncoder()
  await sbx.pty.sendInput(term.pid, enc.encode('stty size; echo "$TERM"; whoami\n'))
  await eventually('stty size', () => /24 80/.test(out) && /xterm-256color/.test(out) && /\nuser\r?\n/.test(out))
  await sbx.pty.resize(term.pid, { cols: 120, rows: 40 })
  await sbx.pty.sendInput(term.pid, enc.encode('stty size\n'))
  await eventually('the new size', () => /40 120/.test(out))
  assert.ok((await sbx.commands.list()).some((p) => p.pid === term.pid))
  await sbx.pty.sendInput(term.pid, enc.encode('exit 0\n'))
  const r = await term.wait()
  assert.equal(r.exitCode, 0)

  const killed = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })
  assert.equal(await sbx.pty.kill(killed.pid), true)
  await assert.rejects(killed.wait(), CommandExitError)
})

test('double-forked daemons are reaped by the agent', async () => {
  const r = await sbx.commands.run(
    "(setsid sh -c 'sleep 0.3; exit 7' </dev/null >/dev/null 2>&1 &); (sleep 0.2 &); echo started")
  assert.equal(r.stdout, 'started\n')
  // A background job keeping the pipe open does not hold the command up.
  const t0 = Date.now()
  const bg = await sbx.commands.run('sleep 3 & echo quick')
  assert.equal(bg.stdout, 'quick\n')
  assert.ok(Date.now() - t0 < 2500, `took ${Date.now() - t0} ms`)
  if (agentPid) {
    await sleep(600)
    await eventually('no zombie children of the agent', () => zombieChildren(agentPid).length === 0)
  }
})

test('output floods: no newline, bounded agent memory', async () => {
  const size = 32 << 20
  const r = await sbx.commands.run(`head -c ${size} /dev/zero | tr '\\0' x`)
  assert.equal(r.stdout.length, size)
  if (!agentPid) return
  // 1 GiB with nobody listening (a background command whose client left).
  const h = await sbx.commands.run('head -c 1073741824 /dev/zero; echo end', { background: true, timeoutMs: 0 })
  await h.disconnect()
  let peak = 0
  await eventually('the flood to finish', async () => {
    peak = Math.max(peak, rssKiB(agentPid))
    return !(await sbx.commands.list()).some((p) => p.pid === h.pid)
  }, 120)
  assert.ok(peak < 128 * 1024, `agent RSS peaked at ${peak} KiB`)
})
