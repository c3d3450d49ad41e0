// The fixture the ports of E2B's own SDK tests share (e2bsuite*.test.mjs):
// the runtime under test, E2B's sandboxTest (make), and the kill of every
// sandbox a file made once its tests are done.
import { after } from 'node:test'
import { Sandbox } from 'e2b'

export const runtime = process.env.SBX_E2E_RUNTIME || 'runsc'
export const wait = (ms) => new Promise((r) => setTimeout(r, ms))

// created holds every sandbox to kill after the file's tests (make adds
// its own; a test adds those it creates otherwise).
export const created = []

after(async () => {
  for (const s of created) await s.kill().catch(() => {})
})

// make is E2B's sandboxTest fixture: a sandbox of template (base) made
// with cls (the SDK's Sandbox, or the code interpreter's) with a test id
// in its metadata, kept as sbx.testId.
export async function make(opts = {}, cls = Sandbox, template = 'base') {
  const sandboxTestId = `t${Math.random().toString(36).slice(2)}`
  const sbx = await cls.create(template, { timeoutMs: 120_000, metadata: { sandboxTestId }, ...opts })
  created.push(sbx)
  sbx.testId = sandboxTestId
  return sbx
}
