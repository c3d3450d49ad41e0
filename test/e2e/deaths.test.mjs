// A sandbox that dies on its own (here root inside ends its agent, PID 1,
// with SIGTERM), seen through the official SDK: the daemon reaps it at
// once, so the SDK sees what it sees of a killed E2B sandbox — isRunning()
// false, commands and files fail, getInfo NotFoundError, gone from list.
// Run through test/e2e/daemon/run.sh on every runtime.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { Sandbox, NotFoundError } from 'e2b'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const created = []

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

test(`a sandbox whose agent dies is reported ended (${runtime})`, async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000 })
  created.push(sbx)
  const other = await Sandbox.create('base', { timeoutMs: 120_000 })
  created.push(other)
  await assert.rejects(sbx.commands.run('sudo kill -TERM 1; sleep 10'))
  const start = Date.now()
  while (await sbx.isRunning()) {
    assert.ok(Date.now() - start < 3000, 'still running 3 s after its agent died')
    await sleep(50)
  }
  await assert.rejects(sbx.commands.run('true'))
  await assert.rejects(sbx.files.read('/etc/hostname'))
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId), NotFoundError)
  const ids = (await Sandbox.list().nextItems()).map((s) => s.sandboxId)
  assert.ok(!ids.includes(sbx.sandboxId), 'a dead sandbox is still listed')
  assert.ok(ids.includes(other.sandboxId))
  assert.equal((await other.commands.run('echo alive')).stdout, 'alive\n')
})

// A sandbox whose agent lives but does not answer (root inside stops it:
// gVisor delivers SIGSTOP to init; crun's kernel drops it, so runsc only),
// seen through the official SDK: its commands and file calls fail within
// 45 s (the proxy's stall watch: 30 s) with the daemon's "agent is not
// responding" where the SDK keeps the message, instead of the SDK's own
// 60 s timeout (forever for a client without one); getInfo, list and
// setTimeout answer at once, the sandbox is not ended for it, and a kill
// ends it.
test(`a sandbox whose agent is stopped fails its calls in bounded time (${runtime})`, { skip: runtime !== 'runsc' }, async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 300_000 })
  created.push(sbx)
  await sbx.commands.run("setsid sh -c 'sleep 1; kill -STOP 1' >/dev/null 2>&1 </dev/null &", { user: 'root' })
  await sleep(2000)
  const bounded = async (name, call, check) => {
    const t0 = Date.now()
    const err = await call().then(() => null, (e) => e)
    const took = Date.now() - t0
    assert.ok(err, `${name} on a stopped agent succeeded`)
    assert.ok(took < 45_000, `${name} took ${took} ms`)
    check(err)
  }
  await Promise.all([
    bounded('files.read', () => sbx.files.read('/etc/hostname'), (e) => assert.match(e.message, /agent is not responding/)),
    bounded('files.write', () => sbx.files.write('/tmp/x', 'y'), (e) => assert.match(e.message, /agent is not responding/)),
    bounded('commands.run', () => sbx.commands.run('echo hi'), () => {}),
    (async () => {
      const t0 = Date.now()
      assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'running')
      assert.ok((await Sandbox.list().nextItems()).some((s) => s.sandboxId === sbx.sandboxId))
      await sbx.setTimeout(300_000)
      assert.ok(Date.now() - t0 < 5000, `getInfo, list, setTimeout took ${Date.now() - t0} ms`)
    })(),
  ])
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'running', 'ended for not answering')
  assert.equal(await sbx.kill(), true)
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId), NotFoundError)
})
