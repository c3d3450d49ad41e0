// End-to-end: the official e2b SDK against a real `sbx serve` on one runtime.
// Run through test/e2e/daemon/run.sh, which starts the daemon and sets
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, CommandExitError, SandboxNotFoundError } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const tag = `e2e-${runtime}-${Date.now()}`
const created = []

async function make(opts = {}) {
  const sbx = await Sandbox.create('base', { metadata: { suite: tag }, timeoutMs: 120_000, ...opts })
  created.push(sbx)
  return sbx
}

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

test(`${runtime}: create, run, exit codes, env, cwd, user`, async () => {
  const sbx = await make({ envs: { FROM_CREATE: 'yes' } })
  assert.match(sbx.sandboxId, /^[a-z0-9]{20}$/)
  const r = await sbx.commands.run('echo hello; echo oops >&2')
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'hello\n')
  assert.equal(r.stderr, 'oops\n')
  await assert.rejects(sbx.commands.run('exit 3'), (e) => e instanceof CommandExitError && e.exitCode === 3)
  const env = await sbx.commands.run('echo $FROM_CREATE $PER_CMD', { envs: { PER_CMD: 'too' } })
  assert.equal(env.stdout, 'yes too\n')
  assert.equal((await sbx.commands.run('pwd; whoami')).stdout, '/home/user\nuser\n')
  assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n')
  assert.equal((await sbx.commands.run('whoami', { user: 'root' })).stdout, 'root\n')
})

test(`${runtime}: the base template's tools work (node, python threads, git, tput)`, async () => {
  const sbx = await make()
  const r = await sbx.commands.run(
    'node -e "console.log(1+1)" && python -c "import threading as t; x=t.Thread(target=print, args=(3,)); x.start(); x.join()" && git --version >/dev/null && tput -T xterm cols >/dev/null && echo ok')
  assert.equal(r.stdout, '2\n3\nok\n')
})

test(`${runtime}: files write/read/list`, async () => {
  const sbx = await make()
  await sbx.files.write('/home/user/hello.txt', 'hi there')
  assert.equal(await sbx.files.read('/home/user/hello.txt'), 'hi there')
  const big = new Uint8Array(1 << 20).map((_, i) => i % 251)
  await sbx.files.write('data/big.bin', big)
  const back = await sbx.files.read('data/big.bin', { format: 'bytes' })
  assert.equal(back.length, big.length)
  assert.ok(Buffer.from(back).equals(Buffer.from(big)))
  const names = (await sbx.files.list('/home/user')).map((e) => e.name)
  assert.ok(names.includes('hello.txt') && names.includes('data'), names.join(','))
  assert.equal((await sbx.commands.run('cat /home/user/hello.txt')).stdout, 'hi there')
})

test(`${runtime}: list with metadata filter, getInfo, setTimeout, connect, metrics`, async () => {
  const sbx = await make({ metadata: { suite: tag, who: 'b c' } })
  const page = await Sandbox.list({ query: { metadata: { suite: tag, who: 'b c' } } }).nextItems()
  assert.deepEqual(page.map((s) => s.sandboxId), [sbx.sandboxId])
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'base')
  assert.equal(info.metadata.who, 'b c')
  assert.equal(info.state, 'running')
  await sbx.setTimeout(600_000)
  const later = await sbx.getInfo()
  assert.ok(later.endAt.getTime() - Date.now() > 500_000, `endAt ${later.endAt}`)
  const again = await Sandbox.connect(sbx.sandboxId)
  assert.equal((await again.commands.run('echo reconnected')).stdout, 'reconnected\n')
  const m = await sbx.getMetrics()
  assert.ok(m.length >= 1, 'at least one metric')
  assert.ok(m[0].memUsed > 0, `memUsed ${m[0].memUsed}`)
})

test(`${runtime}: kill, isRunning, not found`, async () => {
  const sbx = await make()
  assert.equal(await sbx.isRunning(), true)
  assert.equal(await sbx.kill(), true)
  assert.equal(await sbx.isRunning(), false)
  assert.equal(await Sandbox.kill(sbx.sandboxId), false)
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError)
  await assert.rejects(Sandbox.connect('aaaaaaaaaaaaaaaaaaaa'), SandboxNotFoundError)
})

test(`${runtime}: timeout kills the sandbox`, async () => {
  const sbx = await make({ timeoutMs: 2_000 })
  assert.equal(await sbx.isRunning(), true)
  await new Promise((r) => setTimeout(r, 3_500))
  assert.equal(await sbx.isRunning(), false)
})

test(`${runtime}: isolation from inside`, async () => {
  const sbx = await make()
  const st = (await sbx.commands.run('cat /proc/self/status', { user: 'root' })).stdout
  assert.match(st, /^Seccomp:\s+2$/m)
  // no_new_privs is off (sudo works, as on E2B); the bounding set is what
  // bounds root and every setuid exec: the sandbox's 12 capabilities.
  assert.match(st, /^CapBnd:\s+00000000a00405fb$/m)
  const eff = BigInt('0x' + st.match(/^CapEff:\s+([0-9a-f]+)$/m)[1])
  const SYS_ADMIN = 1n << 21n, NET_RAW = 1n << 13n, SYS_PTRACE = 1n << 19n
  assert.equal(eff & (SYS_ADMIN | NET_RAW | SYS_PTRACE), 0n, `CapEff ${eff.toString(16)}`)
  const ps = (await sbx.commands.run('ps -e -o comm=')).stdout
  assert.ok(!/sbx serve|systemd|sshd/.test(ps), ps)
  await assert.rejects(sbx.commands.run('curl -sS -m 3 http://10.0.0.1/ || exit 7'), (e) => e.exitCode === 7)
})

test(`${runtime}: egress policy through the SDK (create, getInfo, updateNetwork)`, async () => {
  const sbx = await make({ allowInternetAccess: false })
  assert.equal((await sbx.getInfo()).allowInternetAccess, false)
  await assert.rejects(sbx.commands.run('curl -sS -m 3 http://169.254.169.254/ || exit 7'), (e) => e.exitCode === 7)
  assert.match((await sbx.commands.run('cat /etc/resolv.conf')).stdout, /^nameserver 10\./m)
  await sbx.updateNetwork({ allowInternetAccess: true, allowOut: ['example.com'], denyOut: ['8.8.8.8'] })
  const info = await sbx.getInfo()
  assert.equal(info.allowInternetAccess, true)
  assert.deepEqual(info.network.allowOut, ['example.com'])
  assert.deepEqual(info.network.denyOut, ['8.8.8.8'])
  await assert.rejects(sbx.updateNetwork({ denyOut: ['example.com'] }), /400/)
  await assert.rejects(Sandbox.create('base', { network: { allowOut: ['not a domain!'] } }))
})
