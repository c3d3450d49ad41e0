// MCP end-to-end tests with the official MCP TypeScript SDK's client, over
// stdio (`sbx mcp`) and streamable HTTP (the daemon's /mcp), run through
// test/e2e/daemon/run.sh. They follow the order an agent calls the tools:
// create_sandbox with no arguments, then run_code.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

const url = process.env.E2B_API_URL
const key = process.env.E2B_API_KEY
const bin = process.env.SBX_E2E_BIN
const templates = `${process.env.SBX_DATA_DIR || '/var/lib/sbx'}/templates`
const haveInterpreter = existsSync(`${templates}/code-interpreter-v1`)
if (!haveInterpreter && process.env.CI === 'true') throw new Error(`CI: no code-interpreter-v1 in ${templates}`)

const transports = {
  stdio: () => new StdioClientTransport({ command: bin, args: ['mcp'], env: { ...process.env, SBX_URL: url, SBX_API_KEY: key } }),
  http: () => new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { 'X-API-Key': key } } }),
}

const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n')

for (const [name, transport] of Object.entries(transports)) {
  test(`${name}: create_sandbox with no arguments, then run_code and run_command`, async () => {
    const client = new Client({ name: 'sbx-e2e', version: '1.0.0' })
    await client.connect(transport())
    try {
      const { tools } = await client.listTools()
      assert.deepEqual(tools.map((t) => t.name).sort(),
        ['create_sandbox', 'kill_sandbox', 'list_files', 'read_file', 'run_code', 'run_command', 'write_file'])
      const created = await client.callTool({ name: 'create_sandbox', arguments: {} })
      assert.equal(created.isError, undefined, text(created))
      const id = created.structuredContent.sandbox_id
      assert.match(id, /^[a-z0-9]{20}$/)
      try {
        const code = await client.callTool({ name: 'run_code', arguments: { sandbox_id: id, code: 'x = 6 * 7\nx' } })
        if (haveInterpreter) {
          assert.ok(!code.isError, text(code))
          assert.match(text(code), /42/)
        } else { // base: a tool error that says what to do
          assert.equal(code.isError, true)
          assert.match(text(code), /run_command/)
        }
        const cmd = await client.callTool({ name: 'run_command', arguments: { sandbox_id: id, command: 'echo hi; exit 3' } })
        assert.ok(!cmd.isError, text(cmd))
        assert.equal(cmd.structuredContent.exitCode, 3)
        assert.equal(cmd.structuredContent.stdout, 'hi\n')
      } finally {
        const killed = await client.callTool({ name: 'kill_sandbox', arguments: { sandbox_id: id } })
        assert.ok(!killed.isError, text(killed))
      }
    } finally {
      await client.close()
    }
  })
}

test('http: run_code in a base sandbox is a tool error saying what to do', async () => {
  const client = new Client({ name: 'sbx-e2e', version: '1.0.0' })
  await client.connect(transports.http())
  try {
    const created = await client.callTool({ name: 'create_sandbox', arguments: { template: 'base' } })
    const id = created.structuredContent.sandbox_id
    try {
      const code = await client.callTool({ name: 'run_code', arguments: { sandbox_id: id, code: '1+1' } })
      assert.equal(code.isError, true)
      assert.match(text(code), /no code interpreter/)
      assert.match(text(code), /"template": "code-interpreter-v1"/)
    } finally {
      await client.callTool({ name: 'kill_sandbox', arguments: { sandbox_id: id } })
    }
  } finally {
    await client.close()
  }
})

// `sbx mcp` answers every request it read before its input ended, even a
// tool call still running at EOF (it used to exit and drop them).
test('stdio: requests written before end of input are all answered', async () => {
  const child = spawn(bin, ['mcp'], { env: { ...process.env, SBX_URL: url, SBX_API_KEY: key }, stdio: ['pipe', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  const exited = new Promise((resolve) => child.on('exit', resolve))
  const send = (m) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n')
  send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } })
  send({ method: 'notifications/initialized' })
  send({ id: 2, method: 'tools/call', params: { name: 'create_sandbox', arguments: { template: 'base' } } })
  send({ id: 3, method: 'tools/list' })
  child.stdin.end()
  const code = await exited
  assert.equal(code, 0)
  const msgs = out.trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(msgs.map((m) => m.id).sort(), [1, 2, 3])
  const created = msgs.find((m) => m.id === 2).result
  assert.ok(!created.isError, JSON.stringify(created))
  const id = created.structuredContent.sandbox_id
  await fetch(`${url}/sandboxes/${id}`, { method: 'DELETE', headers: { 'X-API-Key': key } })
})
