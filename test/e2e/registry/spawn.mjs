// startRegistry starts the template tests' loopback OCI registry (this
// directory's program, images made from the base template's rootfs) and
// resolves to { addr, stop, stderr() } once it serves. SBX_E2E_REGISTRY_BIN
// is a prebuilt binary of it (else `go run`), SBX_E2E_REGISTRY_ADDR its
// address (default a free loopback port), SBX_E2E_REGISTRY_ROOTFS the rootfs
// (<SBX_DATA_DIR>/templates/base/rootfs).
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')

export async function startRegistry({ verbose = false } = {}) {
  const rootfs = process.env.SBX_E2E_REGISTRY_ROOTFS ||
    `${process.env.SBX_DATA_DIR || '/var/lib/sbx'}/templates/base/rootfs`
  const args = ['--addr', process.env.SBX_E2E_REGISTRY_ADDR || '127.0.0.1:0', '--rootfs', rootfs, '--exit-on-eof']
  const bin = process.env.SBX_E2E_REGISTRY_BIN
  // its own process group: `go run` does not pass a SIGTERM on to the program
  const child = bin
    ? spawn(bin, args, { cwd: repo, detached: true })
    : spawn('go', ['run', './test/e2e/registry', ...args], { cwd: repo, detached: true })
  let err = ''
  child.stderr.on('data', (d) => {
    err += d
    if (verbose) process.stderr.write(d)
  })
  const stop = async () => {
    if (child.exitCode !== null) return
    const gone = new Promise((r) => child.once('exit', r))
    try { process.kill(-child.pid, 'SIGTERM') } catch {}
    const t = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL') } catch {} }, 5000)
    await gone
    clearTimeout(t)
  }
  const addr = await new Promise((resolve, reject) => {
    let out = ''
    let addr
    const timer = setTimeout(() => reject(new Error(`registry not ready after 10 min:\n${err}`)), 600_000)
    child.stdout.on('data', (d) => {
      out += d
      const lines = out.split('\n')
      const a = lines.find((l) => l.startsWith('addr '))
      if (a) addr = a.slice(5).trim()
      if (lines.includes('ready')) {
        clearTimeout(timer)
        resolve(addr)
      }
    })
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`registry exited (${code}):\n${err}`))
    })
  })
  return { addr, stop, stderr: () => err }
}
