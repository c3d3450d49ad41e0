// Code interpreter end-to-end tests with the official @e2b/code-interpreter
// SDK. Two ways to run them: through test/e2e/daemon/run.sh (a real sbx
// serve; the SDK creates a code-interpreter-v1 sandbox and reaches port 49999
// through the daemon's proxy), or through test/e2e/interpreter/run.sh, which
// starts the interpreter alone on localhost:49999 with E2B_DEBUG=true.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'

let sbx
before(async () => {
  sbx = await Sandbox.create({ envs: { SBX_SANDBOX_ENV: 'from-init' }, timeoutMs: 300_000 })
  // Debug mode has no access token: set the one the test server expects.
  if (process.env.SBX_E2E_TOKEN) sbx.envdAccessToken = process.env.SBX_E2E_TOKEN
})

after(async () => {
  if (!process.env.E2B_DEBUG) await sbx.kill().catch(() => {})
})

test('runCode keeps state between calls', async () => {
  await sbx.runCode('x = 41')
  const ex = await sbx.runCode('x + 1')
  assert.equal(ex.text, '42')
  assert.equal(ex.error, undefined)
  assert.ok(ex.executionCount >= 2)
})

// The code runs as root, as E2B's template runs its kernels, when `user`
// has passwordless sudo (the built-in templates); the chroot run's rootfs
// (E2B_DEBUG) has no sudo, so there it runs as `user`.
test('runs as root (user without sudo) in /home/user with the sandbox env', async () => {
  const ex = await sbx.runCode('import os; print(os.getuid(), os.getcwd(), os.environ.get("SBX_SANDBOX_ENV"))')
  assert.deepEqual(ex.logs.stdout, [`${process.env.E2B_DEBUG ? 1000 : 0} /home/user from-init\n`])
  if (!process.env.E2B_DEBUG) { // E2B's default env, from the daemon's /init
    const id = await sbx.runCode('import os; os.environ["E2B_SANDBOX"] + " " + os.environ["E2B_SANDBOX_ID"]')
    assert.equal(id.text, `true ${sbx.sandboxId}`)
  }
})

test('matplotlib chart arrives as a PNG', async () => {
  const ex = await sbx.runCode(`
import matplotlib.pyplot as plt
fig = plt.figure(figsize=(4, 3), dpi=100)
plt.plot([1, 2, 3], [1, 4, 9])
plt.show()`)
  assert.equal(ex.error, undefined)
  const png = ex.results.find((r) => r.png)
  assert.ok(png, 'a PNG result')
  assert.equal(png.isMainResult, false)
  const buf = Buffer.from(png.png, 'base64')
  assert.deepEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  // 4x3 in at 100 dpi; the inline backend crops to the tight bounding box.
  assert.ok(buf.readUInt32BE(16) > 300 && buf.readUInt32BE(16) <= 400, `width ${buf.readUInt32BE(16)}`)
  assert.ok(buf.readUInt32BE(20) > 200 && buf.readUInt32BE(20) <= 300, `height ${buf.readUInt32BE(20)}`)
})

// E2B's template adds e2b/chart (Result.chart) to a matplotlib figure's
// result, from its e2b_charts package (ipykernel_charts.py here); the
// figures are those of E2B's js/tests/charts and chart_data_extractor tests.
// A context of its own: the figures' names stay out of the default one.
test('charts: line, box and whisker, pie, bar, scatter, supergraph, unknown', async () => {
  const context = await sbx.createCodeContext()
  const chartOf = async (code) => {
    const ex = await sbx.runCode('import matplotlib.pyplot as plt\nimport numpy as np\nimport datetime\n' + code + '\nplt.show()', { context })
    assert.equal(ex.error, undefined, JSON.stringify(ex.error))
    assert.ok(ex.results[0].png, 'the PNG stays')
    return ex.results[0].chart
  }
  const line = await chartOf(`dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i) for i in range(100)]
x = np.linspace(0, 2*np.pi, 100)
plt.figure(figsize=(10, 6))
plt.plot(dates, np.sin(x), label='sin(x)')
plt.plot(dates, np.cos(x), label='cos(x)')
plt.xlabel("Time (s)"); plt.ylabel("Amplitude (Hz)"); plt.title('Plot of sin(x) and cos(x)')`)
  assert.deepEqual([line.type, line.title, line.x_label, line.y_label, line.x_unit, line.y_unit, line.x_scale, line.y_scale],
    ['line', 'Plot of sin(x) and cos(x)', 'Time (s)', 'Amplitude (Hz)', 's', 'Hz', 'datetime', 'linear'])
  assert.ok(line.x_ticks.every((t) => typeof t === 'string' && !isNaN(new Date(t))), JSON.stringify(line.x_ticks))
  assert.ok(line.y_ticks.every((t) => typeof t === 'number'))
  assert.ok([...line.x_tick_labels, ...line.y_tick_labels].every((l) => typeof l === 'string'))
  assert.deepEqual(line.elements.map((e) => [e.label, e.points.length]), [['sin(x)', 100], ['cos(x)', 100]])
  assert.deepEqual(new Date(line.elements[0].points[0][0]), new Date('2023-09-01T00:00:00.000Z'))
  assert.ok(line.elements[1].points.every(([x, y]) => typeof x === 'string' && typeof y === 'number'))

  const box = await chartOf(`data = {'Class A': [85, 90, 78, 92, 88], 'Class B': [95, 89, 76, 91, 84, 87], 'Class C': [75, 82, 88, 79, 86]}
fig, ax = plt.subplots(figsize=(10, 6))
ax.set_title('Exam Scores Distribution'); ax.set_xlabel('Class'); ax.set_ylabel('Score')
ax.boxplot(data.values(), labels=data.keys(), patch_artist=True)
plt.tight_layout()`)
  assert.deepEqual([box.type, box.title, box.x_label, box.y_label, box.x_unit, box.y_unit],
    ['box_and_whisker', 'Exam Scores Distribution', 'Class', 'Score', null, null])
  assert.deepEqual(box.elements, [
    { label: 'Class A', min: 78, first_quartile: 85, median: 88, third_quartile: 90, max: 92, outliers: [] },
    { label: 'Class B', min: 84, first_quartile: 84.75, median: 88, third_quartile: 90.5, max: 95, outliers: [76] },
    { label: 'Class C', min: 75, first_quartile: 79, median: 82, third_quartile: 86, max: 88, outliers: [] }])

  const pie = await chartOf(`fig, ax = plt.subplots(figsize=(8, 8))
ax.pie([90, 10], labels=["No", "No, in blue"], autopct='%1.1f%%', startangle=90)
ax.axis('equal'); plt.title('Will I wake up early tomorrow?')`)
  assert.deepEqual(pie, { type: 'pie', title: 'Will I wake up early tomorrow?', elements: [
    { label: 'No', angle: 324, radius: 1 }, { label: 'No, in blue', angle: 36, radius: 1 }] })

  const bar = await chartOf(`plt.figure(figsize=(10, 6))
plt.bar(["Author A", "Author B", "Author C"], [100, 200, 300], label="Books Sold")
plt.xlabel("Authors"); plt.ylabel("Sales [USD]"); plt.title("Book Sales by Authors")`)
  assert.deepEqual([bar.type, bar.title, bar.x_label, bar.y_label, bar.x_unit, bar.y_unit],
    ['bar', 'Book Sales by Authors', 'Authors', 'Sales [USD]', null, 'USD'])
  assert.deepEqual(bar.elements, ['A', 'B', 'C'].map((a, i) => ({ label: `Author ${a}`, group: 'Books Sold', value: 100 * (i + 1) })))

  const sup = await chartOf(`fig, axs = plt.subplots(1, 2, figsize=(10, 8))
fig.suptitle("Multiple Graphs Example")
axs[0].plot(np.linspace(0, 10, 100), np.sin(np.linspace(0, 10, 100)), "r"); axs[0].set_title("Sine Wave"); axs[0].grid(True)
axs[1].scatter(np.random.rand(5), np.random.rand(5), label="Dataset 1"); axs[1].set_xlabel("X"); axs[1].set_ylabel("Y")`)
  assert.deepEqual([sup.type, sup.title, sup.elements.length], ['superchart', 'Multiple Graphs Example', 2])
  const [sine, scatter] = sup.elements
  assert.deepEqual([sine.type, sine.title, sine.x_label, sine.elements.length, sine.elements[0].label, sine.elements[0].points.length],
    ['line', 'Sine Wave', null, 1, 'Line 0', 100])
  assert.deepEqual([scatter.type, scatter.x_label, scatter.y_label, scatter.elements[0].label, scatter.elements[0].points.length],
    ['scatter', 'X', 'Y', 'Dataset 1', 5])

  const cat = await chartOf("plt.figure()\nplt.plot([1, 2, 3, 4, 5], ['A', 'B', 'C', 'D', 'E'])")
  assert.deepEqual([cat.x_scale, cat.y_scale, cat.elements[0].points[0]], ['linear', 'categorical', [1, 'A']])
  const unknown = await chartOf('fig, ax = plt.subplots()\nax.plot([1, 2], [1, 2])\nax.bar([1], [2])\nax.set_title("mixed")')
  assert.deepEqual(unknown, { type: 'unknown', title: 'mixed', elements: [] })
  const circles = await chartOf(`fig, ax = plt.subplots()
ax.add_artist(plt.Circle((0, 0), 1, fill=False)); ax.add_artist(plt.Circle((0, 0), 2, fill=False))
ax.grid(True); plt.title('Two Concentric Circles')`)
  assert.deepEqual(circles, { type: 'unknown', title: 'Two Concentric Circles', elements: [] })
  const log = await chartOf(`x = np.linspace(0, 100, 100)
plt.figure(); plt.plot(x, np.exp(x), label='y = e^x'); plt.yscale('log')
plt.xlabel('X-axis'); plt.ylabel('Y-axis (log scale)'); plt.legend(); plt.grid(True)`)
  assert.deepEqual([log.x_unit, log.y_unit, log.x_scale, log.y_scale, log.elements[0].label, log.elements[0].points.length],
    [null, 'log scale', 'linear', 'log', 'y = e^x', 100])
  assert.ok([...log.x_ticks, ...log.y_ticks, ...log.elements[0].points.flat()].every((v) => typeof v === 'number'))
  const gaps = await chartOf("plt.figure()\nplt.plot([1, 2, 3], [1, float('nan'), 2])")
  assert.deepEqual(gaps.elements[0].points, [[1, 1], [2, null], [3, 2]])
  await sbx.removeCodeContext(context)
})

// E2B's template patches PIL (startup_scripts/0003_images.py): show()
// and save() to a path display the image; E2B's js/tests/images/bar.test.ts.
test('PIL: show() and save() display the image, as does its repr', async () => {
  const context = await sbx.createCodeContext()
  const pre = 'import numpy\nfrom PIL import Image\nimage = Image.fromarray((numpy.random.rand(16, 16, 3) * 255).astype("uint8")).convert("RGBA")\n'
  for (const [code, stdout] of [['image.show()\nprint("done")', ['done\n']], ['image', []], ['image.save("/tmp/pil.png")', []]]) {
    const ex = await sbx.runCode(pre + code, { context })
    assert.equal(ex.error, undefined, JSON.stringify(ex.error))
    assert.deepEqual([ex.results.length, ex.logs.stdout], [1, stdout], code)
    assert.deepEqual([...Buffer.from(ex.results[0].png, 'base64').subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], code)
  }
  const saved = await sbx.runCode('import io, os\nbuf = io.BytesIO()\nimage.save(buf, "png")\nos.path.getsize("/tmp/pil.png") > 0, buf.tell() > 0', { context })
  assert.deepEqual([saved.results.length, saved.text], [1, '(True, True)']) // to a file object: no display
  await sbx.removeCodeContext(context)
})

test('a DataFrame is html and text', async () => {
  const ex = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2], "b": ["x", "y"]})')
  const r = ex.results[0]
  assert.ok(r.isMainResult)
  assert.match(r.html, /<table/)
  assert.match(r.text, /a\s+b/)
})

test('an exception is an error with a traceback', async () => {
  const errs = []
  const ex = await sbx.runCode('def f():\n    1/0\nf()', { onError: (e) => errs.push(e) })
  assert.equal(ex.error.name, 'ZeroDivisionError')
  assert.equal(ex.error.value, 'division by zero')
  assert.match(ex.error.traceback.replace(/\x1b\[[0-9;]*m/g, ''), /f\(\)/)
  assert.equal(errs.length, 1)
})

test('onStdout gets the first line before a 1 s sleep ends', async () => {
  const start = Date.now()
  const got = []
  const ex = await sbx.runCode('import time\nprint("one", flush=True)\ntime.sleep(1)\nprint("two")', {
    onStdout: (m) => got.push([m.line, Date.now() - start]),
    onStderr: (m) => got.push(['err:' + m.line, Date.now() - start])
  })
  assert.equal(ex.logs.stdout.join(''), 'one\ntwo\n')
  assert.equal(got[0][0], 'one\n')
  assert.ok(got[0][1] < 900, `first line after ${got[0][1]} ms`)
  const e = await sbx.runCode('import sys; print("oops", file=sys.stderr)', { onStderr: (m) => got.push(['err:' + m.line]) })
  assert.deepEqual(e.logs.stderr, ['oops\n'])
  assert.deepEqual(got.at(-1), ['err:oops\n'])
})

// The python driver runs ipykernel with its flush round trips cut short when
// nothing was written, no SQLite history and a start-up patch of its own
// (internal/agent/interpreter/ipykernel_fast.py): output written without a
// flush right before the cell's value still comes
// before the end, the session's input history is there, and the patch
// leaves no name in the user's namespace.
test('python: unflushed output before the end, history, clean namespace', async () => {
  const ex = await sbx.runCode('import sys\nsys.stdout.write("a")\nsys.stdout.write("c")\nsys.stderr.write("b")\n7')
  assert.equal(ex.error, undefined)
  assert.equal(ex.logs.stdout.join(''), 'ac')
  assert.equal(ex.logs.stderr.join(''), 'b')
  assert.equal(ex.text, '7')
  const hist = await sbx.runCode('In[-2].startswith("import sys") and _ih[-1] == In[-1]')
  assert.equal(hist.text, 'True')
  const names = await sbx.runCode('[k for k in ("_patch", "_patch_flush", "_patch_control_wait", "original", "flush") if k in globals()], __name__')
  assert.equal(names.text, "([], '__main__')")
  for (let i = 0; i < 20; i++) {
    const r = await sbx.runCode(`print(${i}, end="")`)
    assert.deepEqual(r.logs.stdout, [String(i)])
  }
})

test('env_vars apply to one execution only', async () => {
  const ex = await sbx.runCode('import os; os.environ.get("E2E_VAR")', { envs: { E2E_VAR: 'v1' } })
  assert.equal(ex.text, 'v1')
  const after = await sbx.runCode('import os; repr(os.environ.get("E2E_VAR"))')
  assert.equal(after.text, 'None')
  // As E2B's template: what the cell itself sets is kept; nothing is left in globals.
  await sbx.runCode('import os; os.environ["E2E_VAR"] = "cell"', { envs: { E2E_VAR: 'v2' } })
  const kept = await sbx.runCode('import os; os.environ.get("E2E_VAR"), [k for k in globals() if "sbx" in k]')
  assert.equal(kept.text, "('cell', [])")
})

test('contexts: create, list, run, restart, remove', async () => {
  const ctx = await sbx.createCodeContext({ cwd: '/tmp' })
  assert.equal(ctx.language, 'python')
  assert.equal(ctx.cwd, '/tmp')
  const list = await sbx.listCodeContexts()
  assert.ok(list.some((c) => c.id === ctx.id))
  await sbx.runCode('y = 7', { context: ctx })
  assert.equal((await sbx.runCode('import os; (y, os.getcwd())', { context: ctx })).text, "(7, '/tmp')")
  const other = await sbx.runCode('"y" in globals()')
  assert.equal(other.text, 'False')
  await sbx.restartCodeContext(ctx)
  const ex = await sbx.runCode('y', { context: ctx })
  assert.equal(ex.error.name, 'NameError')
  await sbx.removeCodeContext(ctx)
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  // requestTimeoutMs: the SDK leaves its request timer running when it throws on a status
  await assert.rejects(sbx.runCode('1', { context: ctx, requestTimeoutMs: 2000 }), (e) => e.name === 'NotFoundError')
})

test('a crashed kernel is an error; the context recovers', async () => {
  const ctx = await sbx.createCodeContext()
  const ex = await sbx.runCode('import os; os._exit(1)', { context: ctx })
  assert.equal(ex.error.name, 'DeadKernelError')
  assert.equal((await sbx.runCode('2+2', { context: ctx })).text, '4')
  assert.equal((await sbx.runCode('x')).text, '41') // others untouched
  await sbx.removeCodeContext(ctx)
})

test('a timeout interrupts the execution, not the context', async () => {
  await sbx.runCode('kept = "yes"')
  await assert.rejects(sbx.runCode('import time\ntime.sleep(30)', { timeoutMs: 1000 }), /timed out/i)
  const ex = await sbx.runCode('kept')
  assert.equal(ex.text, 'yes')
})

// E2B's template registers formatters of its own (startup_scripts/0002_data.py):
// DataFrames carry e2b/data (Result.data), lists and dicts application/json.
// Other MIME types go to the server's nested "extra", which this SDK drops.
test('results: json for lists and dicts, data for DataFrames, empty extra', async () => {
  const d = await sbx.runCode('import numpy as np\n{"b": [1, 2], 3: np.int64(4)}')
  assert.equal(d.results[0].isMainResult, true)
  assert.deepEqual(d.results[0].json, { b: [1, 2], 3: 4 })
  assert.deepEqual(d.results[0].formats(), ['json'])
  const nan = await sbx.runCode('[1.5, float("nan"), {"inf": float("inf")}]')
  assert.deepEqual(nan.results[0].json, [1.5, null, { inf: null }])
  const df = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1.5, float("nan")], "t": pd.to_datetime(["2024-01-02", "2024-01-03"])})')
  assert.deepEqual(df.results[0].data, { a: [1.5, null], t: ['2024-01-02T00:00:00', '2024-01-03T00:00:00'] })
  assert.deepEqual(df.results[0].formats(), ['html', 'data'])
  const x = await sbx.runCode('from IPython.display import display\ndisplay({"application/x-foo": "bar", "text/plain": "foo"}, raw=True)')
  assert.equal(x.results[0].text, 'foo')
  assert.equal(x.results[0].isMainResult, false)
  assert.deepEqual(x.results[0].extra, {})
  const svg = await sbx.runCode('from IPython.display import SVG\nSVG("<svg xmlns=\\"http://www.w3.org/2000/svg\\"/>")')
  assert.deepEqual(svg.results[0].formats(), ['svg'])
})

test('errors: syntax error and KeyboardInterrupt fields; callbacks in order', async () => {
  const syn = await sbx.runCode('x = = 1')
  assert.equal(syn.error.name, 'SyntaxError')
  assert.match(syn.error.value, /^invalid syntax \(.*, line 1\)$/)
  assert.match(syn.error.traceback, /x = = 1/)
  const kb = await sbx.runCode('raise KeyboardInterrupt')
  assert.deepEqual([kb.error.name, kb.error.value], ['KeyboardInterrupt', ''])
  const seen = []
  const ex = await sbx.runCode('import sys\nprint("a")\nsys.stderr.write("b\\n")\nfrom IPython.display import display\ndisplay(1)\nprint("c")\n1/0', {
    onStdout: (m) => seen.push('out:' + m.line), onStderr: (m) => seen.push('err:' + m.line),
    onResult: (r) => seen.push('res:' + r.text), onError: (e) => seen.push('error:' + e.name)
  })
  assert.deepEqual(seen, ['out:a\n', 'err:b\n', 'res:1', 'out:c\n', 'error:ZeroDivisionError'])
  assert.deepEqual(ex.logs, { stdout: ['a\n', 'c\n'], stderr: ['b\n'] })
  await assert.rejects(sbx.runCode('import time; time.sleep(5)', { requestTimeoutMs: 1 }),
    (e) => e.name === 'TimeoutError' && /requestTimeoutMs/.test(e.message))
  await assert.rejects(sbx.removeCodeContext('nope'), (e) => e.name === 'NotFoundError')
  await assert.rejects(sbx.restartCodeContext('nope'), (e) => e.name === 'NotFoundError')
})

test('unicode, a 5 MB line, two runs at once in one context and in two', async () => {
  const u = await sbx.runCode('print("héllo 🌍 日本")\n"🌍"')
  assert.deepEqual([u.logs.stdout, u.text], [['héllo 🌍 日本\n'], '🌍'])
  const big = await sbx.runCode('print("x" * 5_000_000)')
  assert.equal(big.logs.stdout.join('').length, 5_000_001)
  const one = await Promise.all([sbx.runCode('import time; time.sleep(1); "a"'), sbx.runCode('"b"')])
  assert.deepEqual(one.map((r) => r.text), ['a', 'b'])
  const ctx = await sbx.createCodeContext()
  const start = Date.now()
  const two = await Promise.all([sbx.runCode('import time; time.sleep(1); "a"'), sbx.runCode('import time; time.sleep(1); "b"', { context: ctx })])
  assert.deepEqual(two.map((r) => r.text), ['a', 'b'])
  assert.ok(Date.now() - start < 1900, `two contexts ran one after the other (${Date.now() - start} ms)`)
  await sbx.removeCodeContext(ctx)
})

// Only in a sandbox: interpreter/run.sh runs the kernel with no memory limit.
test('a kernel killed by the OOM killer is a clear error; the next run gets a fresh kernel', { skip: !!process.env.E2B_DEBUG && 'needs the sandbox memory limit' }, async () => {
  const ctx = await sbx.createCodeContext()
  await sbx.runCode('kept = 1', { context: ctx })
  const ex = await sbx.runCode('b = []\nwhile True: b.append(bytearray(100 << 20))', { context: ctx, timeoutMs: 120_000 })
  assert.equal(ex.error.name, 'DeadKernelError')
  assert.match(ex.error.value, /kernel died/)
  assert.equal((await sbx.runCode('"kept" in globals()', { context: ctx })).text, 'False')
  await sbx.removeCodeContext(ctx)
})

test('javascript context keeps state', async () => {
  const ctx = await sbx.createCodeContext({ language: 'js' })
  assert.equal(ctx.language, 'javascript')
  await sbx.runCode('let n = 20; console.log("hello")', { context: ctx })
  const ex = await sbx.runCode('n * 2 + 2', { context: ctx })
  assert.equal(ex.text, '42')
  const env = await sbx.runCode('process.env.JS_VAR', { context: ctx, envs: { JS_VAR: 'j' } })
  assert.equal(env.text, 'j')
  const err = await sbx.runCode('null.x', { context: ctx })
  assert.equal(err.error.name, 'TypeError')
  const byLang = await sbx.runCode('console.log(1 + 1)', { language: 'javascript' })
  assert.deepEqual(byLang.logs.stdout, ['2\n'])
  await sbx.removeCodeContext(ctx)
})

test('bash context keeps state', async () => {
  const ctx = await sbx.createCodeContext({ language: 'bash' })
  await sbx.runCode('cd /tmp; V=abc', { context: ctx })
  const ex = await sbx.runCode('echo "$V $PWD $BV"; echo e >&2', { context: ctx, envs: { BV: 'b' } })
  assert.deepEqual(ex.logs.stdout, ['abc /tmp b\n'])
  assert.deepEqual(ex.logs.stderr, ['e\n'])
  const fail = await sbx.runCode('false', { context: ctx })
  assert.equal(fail.error.value, 'exit status 1')
  assert.deepEqual((await sbx.runCode('echo "[$BV]"', { context: ctx })).logs.stdout, ['[]\n'])
  await sbx.removeCodeContext(ctx)
})

// firstLineEarly runs code whose first stdout line is printed 1 s before the
// second, and checks that onStdout got the first before the pause ended.
async function firstLineEarly (code, opts) {
  const start = Date.now()
  const got = []
  const ex = await sbx.runCode(code, { ...opts, onStdout: (m) => got.push([m.line, Date.now() - start]) })
  assert.equal(ex.error, undefined, JSON.stringify(ex.error))
  assert.equal(ex.logs.stdout.join(''), 'one\ntwo\n')
  assert.equal(got[0][0], 'one\n')
  assert.ok(got[1][1] - got[0][1] > 700, `lines ${JSON.stringify(got)}`)
  return ex
}

test('typescript context: types erased, state, errors, streaming, interrupt', async () => {
  const ctx = await sbx.createCodeContext({ language: 'typescript' })
  assert.equal(ctx.language, 'typescript')
  await sbx.runCode('const n: number = 20\nimport { join } from "path"', { context: ctx })
  const ex = await sbx.runCode('function twice(x: number): number { return x * 2 }\ntwice(n) + 2', { context: ctx })
  assert.equal(ex.text, '42')
  assert.equal((await sbx.runCode('join("a", "b")', { context: ctx })).text, 'a/b')
  const syntax = await sbx.runCode('const bad: number = ;', { context: ctx })
  assert.equal(syntax.error.name, 'SyntaxError')
  assert.match(syntax.error.value, /TS1109/)
  const thrown = await sbx.runCode('throw new RangeError("out")', { context: ctx })
  assert.equal(thrown.error.name, 'RangeError')
  assert.equal(thrown.error.value, 'out')
  assert.match(thrown.error.traceback, /RangeError: out/)
  await firstLineEarly('console.log("one"); await new Promise((r) => setTimeout(r, 1000)); console.log("two")', { context: ctx })
  await assert.rejects(sbx.runCode('while (true) {}', { context: ctx, timeoutMs: 1000 }), /timed out/i)
  assert.equal((await sbx.runCode('n', { context: ctx })).text, '20')
  const byLang = await sbx.runCode('const s: string = "ts"; s', { language: 'typescript' })
  assert.equal(byLang.text, 'ts')
  await sbx.removeCodeContext(ctx)
})

test('r context: state, errors, streaming, env_vars, interrupt, a plot as PNG', async () => {
  await sbx.runCode('x <- 41', { language: 'r' })
  // IRkernel shows values as display data, not as an execute result: as
  // on E2B, the value is results[0], not the main result (ex.text).
  const ex = await sbx.runCode('x + 1', { language: 'r' })
  assert.equal(ex.results[0].text, '[1] 42')
  const err = await sbx.runCode('f <- function() stop("boom")\nf()', { language: 'r' })
  assert.equal(err.error.name, 'ERROR')
  assert.equal(err.error.value.trim(), 'Error in f(): boom')
  assert.match(err.error.traceback, /boom/)
  await firstLineEarly('cat("one\\n"); Sys.sleep(1); cat("two\\n")', { language: 'r' })
  const env = await sbx.runCode('Sys.getenv("R_E2E")', { language: 'r', envs: { R_E2E: 'bar' } })
  assert.equal(env.results[0].text, '[1] "bar"')
  const unset = await sbx.runCode('Sys.getenv("R_E2E", unset = "default")', { language: 'r' })
  assert.equal(unset.results[0].text, '[1] "default"')
  assert.equal((await sbx.runCode('Sys.getenv("SBX_SANDBOX_ENV")', { language: 'r' })).results[0].text, '[1] "from-init"')
  await assert.rejects(sbx.runCode('Sys.sleep(30)', { language: 'r', timeoutMs: 1000 }), /timed out/i)
  assert.equal((await sbx.runCode('x', { language: 'r' })).results[0].text, '[1] 41')
  const plot = await sbx.runCode('plot(1:10, main = "r plot")', { language: 'r' })
  assert.equal(plot.error, undefined)
  const png = plot.results.find((r) => r.png)
  assert.ok(png, `a PNG result in ${JSON.stringify(plot.results.map((r) => r.formats()))}`)
  assert.deepEqual([...Buffer.from(png.png, 'base64').subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47])
})

test('java context: state, errors, streaming, interrupt, env_vars as system properties', async () => {
  const ctx = await sbx.createCodeContext({ language: 'java' })
  assert.equal(ctx.language, 'java')
  await sbx.runCode('int x = 41;\nint inc(int v) { return v + 1; }', { context: ctx })
  assert.equal((await sbx.runCode('inc(x)', { context: ctx })).text, '42')
  assert.equal((await sbx.runCode('String s = "hi " + x; s', { context: ctx })).text, 'hi 41')
  const thrown = await sbx.runCode('int[] a = new int[1];\na[2]', { context: ctx })
  assert.equal(thrown.error.name, 'ArrayIndexOutOfBoundsException')
  assert.match(thrown.error.value, /Index 2 out of bounds/)
  assert.match(thrown.error.traceback, /java\.lang\.ArrayIndexOutOfBoundsException/)
  const compile = await sbx.runCode('int y = ;', { context: ctx })
  assert.equal(compile.error.name, 'CompilationException')
  await firstLineEarly('System.out.println("one"); Thread.sleep(1000); System.out.println("two");', { context: ctx })
  await assert.rejects(sbx.runCode('Thread.sleep(30000);', { context: ctx, timeoutMs: 1000 }), /timed out/i)
  assert.equal((await sbx.runCode('x', { context: ctx })).text, '41')
  const env = await sbx.runCode('System.getProperty("J_E2E")', { context: ctx, envs: { J_E2E: 'bar' } })
  assert.equal(env.text, 'bar')
  assert.equal((await sbx.runCode('System.getProperty("J_E2E", "default")', { context: ctx })).text, 'default')
  const global = await sbx.runCode('System.getProperty("SBX_SANDBOX_ENV") + " " + System.getenv("SBX_SANDBOX_ENV")', { language: 'java' })
  assert.equal(global.text, 'from-init from-init')
  await sbx.removeCodeContext(ctx)
})

test('bad input gets clear errors', async () => {
  await assert.rejects(sbx.createCodeContext({ language: 'cobol' }), /400/)
  await assert.rejects(sbx.createCodeContext({ cwd: '/nonexistent' }), /400/)
  // Straight to the interpreter in debug mode, else through the daemon.
  const base = process.env.E2B_DEBUG ? 'http://localhost:49999' : process.env.E2B_SANDBOX_URL
  const route = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49999' }
  const token = process.env.SBX_E2E_TOKEN || sbx.envdAccessToken
  const res = await fetch(`${base}/execute`, {
    method: 'POST', body: JSON.stringify({ code: '1', context_id: 'x', language: 'python' }),
    headers: { ...route, 'X-Access-Token': token }
  })
  assert.equal(res.status, 400)
  const noTok = await fetch(`${base}/execute`, { method: 'POST', body: '{"code":"1"}', headers: route })
  assert.equal(noTok.status, 401)
})

// A benchmark, not a behaviour check: it runs against the interpreter itself
// (test/e2e/interpreter/run.sh); through the daemon its many back-to-back
// streams mostly measure the open proxy bug (docs/ARCHITECTURE.md).
test('runCode("1+1") round trip in a warm context', { skip: !process.env.E2B_DEBUG && 'benchmark: direct runs only' }, async (t) => {
  await sbx.runCode('1+1')
  const ms = []
  // 30 runs in CI; the figure of record (200 runs) is in docs/BENCHMARKS.md.
  // More runs through the daemon would mostly measure the open proxy bug
  // (docs/ARCHITECTURE.md, "Known issues").
  for (let i = 0; i < 30; i++) {
    const start = performance.now()
    const ex = await sbx.runCode('1+1')
    ms.push(performance.now() - start)
    assert.equal(ex.text, '2')
  }
  ms.sort((a, b) => a - b)
  const p50 = ms[15].toFixed(2)
  const p95 = ms[28].toFixed(2)
  t.diagnostic(`runCode("1+1") p50 ${p50} ms, p95 ${p95} ms`)
  console.log(`# runCode("1+1") p50 ${p50} ms, p95 ${p95} ms`)
  assert.ok(ms[15] < 50, `p50 ${p50} ms`)
})
