import { Sandbox } from 'e2b'
const sbx = await Sandbox.create({ timeoutMs: 300_000 })
try {
  let t0 = Date.now()
  const buf = new Uint8Array(64 << 20)
  await sbx.files.write('/home/user/big.bin', buf.buffer); console.log('up', Date.now() - t0); t0 = Date.now()
  const back = await sbx.files.read('/home/user/big.bin', { format: 'bytes' }); console.log('down', Date.now() - t0, back.length); t0 = Date.now()
  let n = 0
  await sbx.commands.run('head -c 52428800 /dev/zero', { onStdout: d => { n += d.length }, timeoutMs: 120_000 }); console.log('stdout 50MiB', Date.now() - t0, n); t0 = Date.now()
  await sbx.commands.run('head -c 52428800 /dev/zero > /dev/null'); console.log('in-sandbox only', Date.now() - t0); t0 = Date.now()
  const c = await sbx.commands.run('cat', { background: true, stdin: true })
  await sbx.commands.sendStdin(c.pid, 'hello\n'); await new Promise(r => setTimeout(r, 500)); await c.kill()
  console.log('stdin out', JSON.stringify(c.stdout))
} finally { await sbx.kill() }
