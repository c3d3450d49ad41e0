// sudo end-to-end: `user` has passwordless sudo inside a sandbox, as on E2B
// (generated code runs `sudo apt-get …`, `sudo echo …` all the time), while
// the root it reaches is the sandbox's own: the same capabilities, seccomp
// and namespaces as the API's user "root", nothing of the host. The attack
// battery (integration TestAttackBattery, "sudo" runs) holds the escape
// attempts; this file holds what a user sees. Run through
// test/e2e/daemon/run.sh on every runtime.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const created = []

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

async function make() {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000 })
  created.push(sbx)
  return sbx
}

// statusField reads one field of /proc/self/status as seen by cmd's process.
function statusField(out, name) {
  const line = out.split('\n').find((l) => l.startsWith(name + ':'))
  return line ? line.split(':')[1].trim() : undefined
}

test(`sudo works for user (${runtime})`, async () => {
  const sbx = await make()
  const who = await sbx.commands.run('whoami; sudo whoami; sudo -n id -u; sudo -u root id -un')
  assert.equal(who.stdout, 'user\nroot\n0\nroot\n')

  const echo = await sbx.commands.run('sudo echo hi')
  assert.equal(echo.stdout, 'hi\n')
  assert.equal(echo.exitCode, 0)

  // A login shell as root, as `sudo -i` gives on E2B.
  const login = await sbx.commands.run(`sudo -i bash -c 'echo "$HOME $(id -u) $(pwd)"'`)
  assert.equal(login.stdout, '/root 0 /root\n')

  // Root-owned files and package-manager style writes.
  const w = await sbx.commands.run('echo deb-test | sudo tee /etc/sbx-sudo-test >/dev/null && stat -c "%U %a" /etc/sbx-sudo-test && sudo rm /etc/sbx-sudo-test')
  assert.equal(w.stdout, 'root 644\n')

  // The package manager as root (takes dpkg's lock; no network needed).
  const apt = await sbx.commands.run('sudo apt-get check -qq && echo apt-ok', { timeoutMs: 60_000 })
  assert.equal(apt.stdout, 'apt-ok\n')

  // sudo to another user.
  const other = await sbx.commands.run('sudo -u nobody id -un')
  assert.equal(other.stdout, 'nobody\n')

  // Through a PTY, as the terminal and `sandbox connect` would.
  let ptyOut = ''
  const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { ptyOut += new TextDecoder().decode(d) } })
  await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('sudo id -u; exit\n'))
  await pty.wait().catch(() => {})
  assert.match(ptyOut, /[\r\n]0\r?\n/)
})

test(`sudo root is the sandbox's root, no more (${runtime})`, async () => {
  const sbx = await make()
  const viaSudo = await sbx.commands.run('sudo cat /proc/self/status')
  const viaAPI = await sbx.commands.run('cat /proc/self/status', { user: 'root' })
  for (const f of ['CapBnd', 'CapEff', 'CapPrm', 'Seccomp']) {
    assert.equal(statusField(viaSudo.stdout, f), statusField(viaAPI.stdout, f), `${f} differs between sudo and API root`)
  }
  assert.equal(statusField(viaSudo.stdout, 'Seccomp'), '2')
  // The bounding set is the sandbox's 12 capabilities: no SYS_ADMIN (bit 21),
  // NET_RAW (13), SYS_PTRACE (19), SYS_MODULE (16), MKNOD (27).
  const bnd = BigInt('0x' + statusField(viaSudo.stdout, 'CapBnd'))
  for (const bit of [13n, 16n, 19n, 21n, 27n]) assert.equal((bnd >> bit) & 1n, 0n, `capability bit ${bit} in CapBnd`)

  // Escapes that root-by-sudo still cannot make: each line prints what got
  // through; only the two counts (0 and 0) may print.
  const r = await sbx.commands.run([
    'sudo mount -t tmpfs none /mnt 2>/dev/null && echo MOUNTED',
    'sudo sh -c "echo 1 > /proc/sys/vm/drop_caches" 2>/dev/null && echo PROCSYS',
    'sudo python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)" 2>/dev/null && echo RAWSOCKET',
    'sudo unshare -U true 2>/dev/null && echo USERNS',
    'sudo modprobe dummy 2>/dev/null && echo MODULE',
    'sudo cat /proc/1/environ 2>/dev/null | grep -c SBX_AGENT_INIT_TOKEN',
    'sudo head -c1 /proc/1/mem 2>/dev/null | wc -c',
    'echo done',
  ].join('; '), { timeoutMs: 30_000 })
  assert.equal(r.stdout, '0\n0\ndone\n')
})
