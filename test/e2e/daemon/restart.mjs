// restartDaemon stops the daemon test/e2e/daemon/run.sh started (SIGTERM)
// and starts it again with the same arguments and data dir.
import { spawn } from 'node:child_process'
import { openSync, readFileSync, writeFileSync } from 'node:fs'

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

export async function restartDaemon() {
  const dir = process.env.SBX_E2E_DATA_DIR
  const pidFile = `${dir}/serve.pid`
  const pid = Number(readFileSync(pidFile, 'utf8'))
  // gone for sure before the new start: a daemon still holding the data
  // dir's lock makes it exit at once
  for (const sig of ['SIGTERM', 'SIGKILL']) {
    try { process.kill(pid, sig) } catch { break }
    for (let i = 0; i < 150; i++) {
      try { process.kill(pid, 0) } catch { break }
      await sleep(100)
    }
  }
  const log = openSync(`${dir}/serve.log`, 'a')
  const child = spawn(process.env.SBX_E2E_BIN, process.env.SBX_E2E_SERVE_ARGS.split(' '), {
    env: { ...process.env, SBX_API_KEY: process.env.E2B_API_KEY }, stdio: ['ignore', log, log], detached: true,
  })
  child.unref()
  writeFileSync(pidFile, String(child.pid))
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${process.env.E2B_API_URL}/health`)).ok) return
    } catch {}
    await sleep(100)
  }
  throw new Error('daemon did not come back')
}
