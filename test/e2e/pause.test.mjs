// End-to-end: pause, resume, fork, auto-pause/auto-resume and a pause that
// survives a daemon restart, with the official e2b SDK against a real
// `sbx serve` on runsc (memory checkpoints). Run through
// test/e2e/daemon/run.sh runsc test/e2e/pause.test.mjs.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, SandboxError, SandboxNotFoundError } from 'e2b'
import { restartDaemon } from './daemon/restart.mjs'

const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
const tag = `pause-${runtime}-${Date.now()}`
const created = []
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

// A Python process holding its count in memory and writing it to a file.
// Before each write it checks that the file still holds its last count: a
// restore whose files are older (or newer) than its memory leaves a line in
// /home/user/anomaly (advances asserts there is none).
const counter = `nohup python3 -c '
import os, time
i = 0
while True:
    i += 1
    try:
        f = int(open("/home/user/count").read())
    except (OSError, ValueError):
        f = 0
    if f != i - 1:
        open("/home/user/anomaly", "a").write("memory at %d, file at %d; " % (i - 1, f))
    open("/home/user/count.tmp", "w").write(str(i))
    os.replace("/home/user/count.tmp", "/home/user/count")
    time.sleep(0.05)
' >/dev/null 2>&1 &`

async function make(opts = {}) {
  const sbx = await Sandbox.create('base', { metadata: { suite: tag }, timeoutMs: 120_000, ...opts })
  created.push(sbx)
  return sbx
}

async function count(sbx) {
  const r = await sbx.commands.run('cat /home/user/count')
  return Number(r.stdout.trim())
}

// counting starts the counter and waits until it has counted a little.
async function counting(sbx) {
  await sbx.commands.run(counter)
  for (let i = 0; i < 100; i++) {
    if ((await sbx.commands.run('cat /home/user/count 2>/dev/null || echo 0')).stdout.trim() >= 5) return
    await sleep(50)
  }
  throw new Error('counter never started')
}

// advances asserts that the counter goes on from at least `from`, and that
// its file never disagreed with its memory.
async function advances(sbx, from) {
  const a = await count(sbx)
  assert.ok(a >= from, `counter at ${a}, want >= ${from} (memory lost?)`)
  const odd = await sbx.commands.run('cat /home/user/anomaly 2>/dev/null || true')
  assert.equal(odd.stdout, '', 'the counter file disagreed with the memory of its writer')
  for (let i = 0; i < 100; i++) {
    if ((await count(sbx)) > a) return a
    await sleep(50)
  }
  throw new Error(`counter stuck at ${a}`)
}

const pythonPid = async (sbx) => (await sbx.commands.run("pgrep -f '[c]ount.tmp'")).stdout.trim()

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

test(`${runtime}: pause then connect continues the same process, files intact`, async () => {
  const sbx = await make()
  await counting(sbx)
  await sbx.files.write('/home/user/before.txt', 'written before pause')
  const pid = await pythonPid(sbx)
  const before = await count(sbx)
  assert.equal(await sbx.pause(), true)
  assert.equal(await sbx.pause(), false, 'a second pause is a 409')
  assert.equal(await sbx.isRunning(), false)
  assert.equal((await sbx.getInfo()).state, 'paused')
  const paused = await Sandbox.list({ query: { state: ['paused'], metadata: { suite: tag } } }).nextItems()
  assert.ok(paused.some((s) => s.sandboxId === sbx.sandboxId), 'listed as paused')
  // The calls a paused sandbox (no autoResume) answers, as E2B's API and
  // proxy do: setTimeout finds no live sandbox (404), envd traffic is 409.
  await assert.rejects(sbx.setTimeout(60_000), SandboxNotFoundError)
  await assert.rejects(sbx.files.read('/home/user/before.txt'), (e) => e instanceof SandboxError && /409/.test(e.message))
  await assert.rejects(sbx.commands.run('true'), SandboxError)
  assert.equal((await sbx.getInfo()).state, 'paused', 'none of them resumed it')

  const back = await Sandbox.connect(sbx.sandboxId)
  assert.equal(back.sandboxId, sbx.sandboxId)
  const resumed = await advances(back, before)
  assert.ok(resumed < before + 200, `counter ${resumed} ran on while paused (from ${before})`)
  assert.equal(await pythonPid(back), pid, 'the same process runs')
  assert.equal(await back.files.read('/home/user/before.txt'), 'written before pause')
  assert.equal((await back.getInfo()).state, 'running')
})

test(`${runtime}: fork into 3 that continue, then diverge`, async () => {
  const src = await make()
  await counting(src)
  await src.files.write('/home/user/shared.txt', 'from the source')
  const at = await count(src)
  const kids = await src.fork({ count: 3, timeoutMs: 60_000 })
  assert.equal(kids.length, 3)
  for (const k of kids) {
    assert.ok(!(k instanceof Error), `fork failed: ${k}`)
    created.push(k)
  }
  const ids = new Set([src.sandboxId, ...kids.map((k) => k.sandboxId)])
  assert.equal(ids.size, 4, 'every child has its own id')
  const seen = []
  for (const k of kids) {
    seen.push(await advances(k, at))
    assert.equal(await k.files.read('/home/user/shared.txt'), 'from the source')
    // E2B's sandbox id env and /run/e2b file name the child, not the source.
    assert.equal((await k.commands.run('echo $E2B_SANDBOX_ID; cat /run/e2b/.E2B_SANDBOX_ID')).stdout, `${k.sandboxId}\n${k.sandboxId}`)
  }
  // Diverge: each child writes its own file and stops or keeps its counter.
  await Promise.all(kids.map((k, i) => k.files.write('/home/user/me.txt', `child ${i}`)))
  await kids[0].commands.run("pkill -f '[c]ount.tmp'")
  for (const [i, k] of kids.entries()) {
    assert.equal(await k.files.read('/home/user/me.txt'), `child ${i}`)
  }
  await assert.rejects(src.files.read('/home/user/me.txt'))
  const stopped = await count(kids[0])
  // Each child counts in its own process at its own pace from the fork
  // instant (restored at different moments, scheduled apart): kids[1] goes on
  // from its own earlier reading, which says nothing about kids[0]'s count.
  await advances(kids[1], seen[1])
  await sleep(300)
  assert.equal(await count(kids[0]), stopped, 'child 0 stopped counting, alone')
  await advances(src, at)
})

test(`${runtime}: snapshot, list, create from it, delete`, async () => {
  const src = await make()
  await counting(src)
  await src.files.write('/home/user/snap.txt', 'in the snapshot')
  const snap = await src.createSnapshot({ name: `snap-${Date.now()}` })
  assert.ok(snap.snapshotId)
  const listed = await src.listSnapshots().nextItems()
  assert.ok(listed.some((s) => s.snapshotId === snap.snapshotId), 'listed for its sandbox')
  const from = await Sandbox.create(snap.snapshotId, { metadata: { suite: tag }, timeoutMs: 60_000 })
  created.push(from)
  assert.equal(await from.files.read('/home/user/snap.txt'), 'in the snapshot')
  await advances(from, 5)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true)
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false)
  await advances(from, 5) // unaffected by the deletion
})

test(`${runtime}: auto-pause at the timeout, auto-resume on traffic`, async () => {
  const sbx = await make({ timeoutMs: 5_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  await counting(sbx)
  for (let i = 0; i < 300 && (await Sandbox.getInfo(sbx.sandboxId)).state !== 'paused'; i++) await sleep(100)
  const info = await Sandbox.getInfo(sbx.sandboxId)
  assert.equal(info.state, 'paused')
  assert.equal(info.lifecycle?.onTimeout, 'pause')
  // Plain traffic (no connect) resumes it and then proceeds.
  const n = await count(sbx)
  assert.ok(n >= 5)
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'running')
  await advances(sbx, n)
})

test(`${runtime}: a paused sandbox survives a daemon restart`, async () => {
  const sbx = await make()
  await counting(sbx)
  const before = await count(sbx)
  assert.equal(await sbx.pause(), true)
  await restartDaemon()
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused')
  const back = await Sandbox.connect(sbx.sandboxId)
  await advances(back, before)
})
