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
