// sbx dashboard: a small single-page app over /dashboard/api (the REST API
// with the session's key, server-side), /dashboard/files and
// /dashboard/term. Tenant data (ids, metadata, file names, output) is only
// ever inserted as text: el() sets textContent, never innerHTML.
'use strict'
;(() => {
  const csrf = document.querySelector('meta[name=csrf-token]').content
  const main = document.getElementById('main')
  let timers = []
  let cleanups = []

  // el builds an element; string children become text nodes.
  function el (tag, attrs, ...kids) {
    const e = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'on') for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f)
      else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : String(v))
    }
    for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k))
    return e
  }

  function flash (msg) {
    const f = document.getElementById('flash')
    f.textContent = msg
    f.hidden = false
    setTimeout(() => { f.hidden = true }, 4000)
  }

  function toLogin () { location.assign('/dashboard/login?next=' + encodeURIComponent(location.pathname)) }

  // call sends a request with the CSRF token and returns the decoded body;
  // a 401 means the session ended.
  async function call (method, path, body, raw) { return (await exchange(method, path, body, raw)).data }

  async function exchange (method, path, body, raw) {
    const opt = { method, headers: { 'X-CSRF-Token': csrf }, credentials: 'same-origin' }
    if (body !== undefined) {
      if (raw) opt.body = body
      else { opt.body = JSON.stringify(body); opt.headers['Content-Type'] = 'application/json' }
    }
    const res = await fetch(path, opt)
    if (res.status === 401) { toLogin(); throw new Error('signed out') }
    const text = await res.text()
    let data = null
    try { data = text ? JSON.parse(text) : null } catch { data = text }
    if (!res.ok) throw new Error((data && data.message) || res.status + ' ' + res.statusText)
    return { data, headers: res.headers }
  }
  const api = (method, path, body) => call(method, '/dashboard/api' + path, body)

  // every runs f now and each ms until the view changes; a failed round is
  // retried by the next one.
  function every (ms, f) {
    const g = () => Promise.resolve().then(f).catch((e) => console.warn(e.message))
    g(); timers.push(setInterval(g, ms))
  }

  function age (t) {
    const s = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000)
    if (s < 60) return Math.floor(s) + 's'
    if (s < 3600) return Math.floor(s / 60) + 'm'
    if (s < 86400) return Math.floor(s / 3600) + 'h' + Math.floor((s % 3600) / 60) + 'm'
    return Math.floor(s / 86400) + 'd'
  }
  const mib = (b) => b ? (b / 1048576).toFixed(0) + ' MiB' : '–'
  const pct = (p) => p === undefined ? '–' : p.toFixed(1) + '%'

  // ---- sandboxes ----
  async function viewSandboxes () {
    const body = el('tbody')
    const count = el('span', { class: 'muted' })
    main.replaceChildren(el('h2', {}, 'Sandboxes ', count), el('table', { id: 'sandboxes' },
      el('thead', {}, el('tr', {}, ['ID', 'Template', 'State', 'Runtime', 'Age', 'CPU', 'Memory', 'Metadata'].map((h) => el('th', {}, h)))),
      body))
    every(5000, async () => {
      const list = await allSandboxes()
      const ms = await metricsOf(list.filter((s) => s.state === 'running').map((s) => s.sandboxID))
      count.textContent = '(' + list.length + ')'
      body.replaceChildren(...list.map((s) => {
        const m = ms[s.sandboxID] || {}
        return el('tr', { 'data-id': s.sandboxID },
          el('td', {}, el('a', { href: '/dashboard/sandboxes/' + encodeURIComponent(s.sandboxID), 'data-nav': true }, s.sandboxID)),
          el('td', {}, s.alias || s.templateID), el('td', { class: 'state-' + s.state }, s.state),
          el('td', {}, s.runtime || ''), el('td', {}, age(s.startedAt)), el('td', {}, pct(m.cpuUsedPct)),
          el('td', {}, m.memTotal ? mib(m.memUsed) + ' / ' + mib(m.memTotal) : '–'),
          el('td', { class: 'wrap' }, Object.entries(s.metadata || {}).map(([k, v]) => k + '=' + v).join(' ')))
      }))
    })
  }

  // allSandboxes pages through GET /v2/sandboxes (100 a page, X-Next-Token).
  async function allSandboxes () {
    const out = []
    let next = ''
    do {
      const r = await exchange('GET', '/dashboard/api/v2/sandboxes?state=running,paused&limit=100' + (next ? '&nextToken=' + encodeURIComponent(next) : ''))
      out.push(...r.data)
      next = r.headers.get('X-Next-Token')
    } while (next)
    return out
  }

  async function metricsOf (ids) {
    const out = {}
    for (let i = 0; i < ids.length; i += 100) {
      const r = await api('GET', '/sandboxes/metrics?sandbox_ids=' + ids.slice(i, i + 100).join(','))
      Object.assign(out, r.sandboxes || {})
    }
    return out
  }

  // ---- one sandbox ----
  async function viewSandbox (id) {
    const path = '/sandboxes/' + encodeURIComponent(id)
    let info
    try { info = await api('GET', path) } catch (e) { main.replaceChildren(el('h2', {}, 'Sandbox'), el('p', { class: 'error' }, e.message)); return }
    const act = (label, method, sub, body, after, cls) => el('button', {
      type: 'button', 'data-action': label.toLowerCase(), class: cls,
      on: { click: async (ev) => {
        ev.target.disabled = true
        try { const r = await api(method, path + sub, body); flash(label + ': done'); after && after(r) } catch (e) { flash(label + ': ' + e.message) }
        ev.target.disabled = false
      } }
    }, label)
    // forked: POST /fork answers one {sandbox} or {error} per child
    const forked = (r) => {
      const c = (r || [])[0] || {}
      if (c.sandbox) navigate('/dashboard/sandboxes/' + encodeURIComponent(c.sandbox.sandboxID))
      else flash('Fork: ' + (c.error ? c.error.message : 'no child'))
    }
    const running = info.state === 'running'
    main.replaceChildren(
      el('h2', {}, 'Sandbox ', el('code', {}, id)),
      el('div', { class: 'card' },
        el('p', {}, 'Template: ', info.alias || info.templateID, ' · state: ', el('span', { id: 'state', class: 'state-' + info.state }, info.state),
          ' · runtime: ', info.runtime || '', ' · ', String(info.cpuCount), ' vCPU · ', String(info.memoryMB), ' MiB · started ', age(info.startedAt), ' ago'),
        el('div', { class: 'actions' },
          act('Kill', 'DELETE', '', undefined, () => navigate('/dashboard/sandboxes'), 'danger'),
          act('Pause', 'POST', '/pause', undefined, () => route()),
          act('Resume', 'POST', '/resume', {}, () => route()),
          act('Fork', 'POST', '/fork', { timeout: 3600 }, forked),
          act('Snapshot', 'POST', '/snapshots', {}, (r) => flash('snapshot ' + r.snapshotID)))),
      el('h3', {}, 'Terminal'),
      running ? terminal(id) : el('p', { class: 'muted' }, 'The terminal needs a running sandbox.'),
      el('div', { class: 'grid2' },
        el('div', {}, el('h3', {}, 'Files'), running ? files(id) : el('p', { class: 'muted' }, 'Files need a running sandbox.')),
        el('div', {}, el('h3', {}, 'Metrics'), charts(path))),
      el('h3', {}, 'Logs'), logs(path))
  }

  // adoptStyles lets the <style> elements xterm.js writes at run time (its
  // theme, cell sizes) apply under the strict CSP (style-src 'self', no
  // 'unsafe-inline'): their text goes into constructable stylesheets
  // adopted by the document, which only script can make; the element xterm
  // holds is an inert <template>. Likewise the style attributes it sets on
  // cells in 24-bit colour go through the CSSOM (el.style), which the CSP
  // allows to script. A <style> or style attribute that arrived as markup
  // would still be blocked.
  function adoptStyles () {
    if (adoptStyles.done) return
    adoptStyles.done = true
    const setAttribute = Element.prototype.setAttribute
    Element.prototype.setAttribute = function (name, value) {
      if (String(name).toLowerCase() !== 'style' || !this.style) return setAttribute.call(this, name, value)
      this.style.cssText = String(value)
    }
    const create = document.createElement.bind(document)
    document.createElement = function (tag, opts) {
      if (String(tag).toLowerCase() !== 'style') return create(tag, opts)
      const e = create('template') // inert stand-in: an empty <style> would trip the CSP too
      const sheet = new CSSStyleSheet()
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet]
      let text = ''
      const prop = { get: () => text, set: (v) => { text = String(v); sheet.replaceSync(text) }, configurable: true }
      Object.defineProperty(e, 'textContent', prop)
      Object.defineProperty(e, 'innerText', prop)
      const remove = e.remove.bind(e)
      e.remove = () => { document.adoptedStyleSheets = document.adoptedStyleSheets.filter((x) => x !== sheet); remove() }
      return e
    }
  }

  function terminal (id) {
    const box = el('div', { id: 'terminal' })
    const status = el('p', { class: 'muted', id: 'term-status' }, 'connecting…')
    setTimeout(() => {
      adoptStyles()
      const term = new window.Terminal({ convertEol: false, cursorBlink: true, fontSize: 13, scrollback: 5000 })
      const fit = new window.FitAddon.FitAddon()
      term.loadAddon(fit)
      term.open(box)
      fit.fit()
      window.sbxTerm = term // for tests: read the screen buffer
      const proto = location.protocol === 'https:' ? 'wss:' : 'ws:'
      const ws = new WebSocket(proto + '//' + location.host + '/dashboard/term/' + encodeURIComponent(id))
      ws.binaryType = 'arraybuffer'
      const send = (m) => ws.readyState === 1 && ws.send(JSON.stringify(m))
      ws.onopen = () => { ws.send(JSON.stringify({ type: 'hello', csrf, cols: term.cols, rows: term.rows })); status.textContent = 'connected'; term.focus() }
      ws.onmessage = (ev) => {
        if (typeof ev.data !== 'string') { term.write(new Uint8Array(ev.data)); return }
        const m = JSON.parse(ev.data)
        status.textContent = m.type === 'exit' ? 'shell exited (' + m.code + ')' : 'error: ' + m.message
      }
      ws.onclose = () => { if (status.textContent === 'connected') status.textContent = 'disconnected' }
      // a big paste goes in pieces: the daemon takes frames of at most 64 KiB
      term.onData((d) => { for (let i = 0; i < d.length; i += 8192) send({ type: 'input', data: d.slice(i, i + 8192) }) })
      term.onResize(({ cols, rows }) => { send({ type: 'resize', cols, rows }); status.dataset.size = cols + 'x' + rows })
      const ro = new ResizeObserver(() => fit.fit())
      ro.observe(box)
      cleanups.push(() => { ro.disconnect(); ws.close(); term.dispose(); delete window.sbxTerm })
    })
    return el('div', {}, box, status)
  }

  function files (id) {
    const base = '/dashboard/files/' + encodeURIComponent(id)
    const here = el('input', { id: 'files-path', value: '/home/user', size: 40 })
    const rows = el('tbody')
    const up = el('input', { type: 'file', id: 'upload' })
    const load = async () => {
      try {
        const list = await call('GET', base + '?path=' + encodeURIComponent(here.value))
        list.sort((a, b) => (a.type === 'dir') === (b.type === 'dir') ? a.name.localeCompare(b.name) : a.type === 'dir' ? -1 : 1)
        rows.replaceChildren(...list.map((f) => el('tr', { 'data-name': f.name },
          el('td', { class: 'wrap' }, f.type === 'dir'
            ? el('a', { href: '#', on: { click: (e) => { e.preventDefault(); here.value = f.path; load() } } }, f.name + '/')
            : f.name),
          el('td', {}, f.type === 'dir' ? '' : String(f.size)),
          el('td', {}, f.type === 'file' ? el('button', { type: 'button', 'data-download': f.name, on: { click: () => download(f.path) } }, 'Download') : ''))))
      } catch (e) { rows.replaceChildren(el('tr', {}, el('td', { class: 'error' }, e.message))) }
    }
    // download fetches the file (the session cookie; no token in a URL)
    // and saves it through a blob link.
    const download = async (p) => {
      const res = await fetch(base + '/download?path=' + encodeURIComponent(p), { credentials: 'same-origin' })
      if (!res.ok) { flash('download: ' + res.status); return }
      const a = el('a', { href: URL.createObjectURL(await res.blob()), download: p.split('/').pop() })
      document.body.append(a); a.click(); a.remove()
    }
    up.addEventListener('change', async () => {
      const f = up.files[0]
      if (!f) return
      const dest = here.value.replace(/\/$/, '') + '/' + f.name
      try { await call('POST', base + '/upload?path=' + encodeURIComponent(dest), f, true); flash('uploaded ' + f.name); load() } catch (e) { flash('upload: ' + e.message) }
      up.value = ''
    })
    load()
    return el('div', { class: 'card' },
      el('div', { class: 'actions' }, here, el('button', { type: 'button', on: { click: load } }, 'List'), el('label', {}, 'Upload: ', up)),
      el('table', { id: 'files' }, el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Size'), el('th', {}, ''))), rows))
  }

  function charts (path) {
    const cpu = el('div')
    const mem = el('div')
    every(5000, async () => {
      try {
        const ms = await api('GET', path + '/metrics')
        cpu.replaceChildren(el('p', { class: 'muted' }, 'CPU %'), chart(ms.map((m) => m.cpuUsedPct), 100, '#2e86c1'))
        mem.replaceChildren(el('p', { class: 'muted' }, 'Memory MiB'), chart(ms.map((m) => m.memUsed / 1048576), Math.max(1, ...ms.map((m) => m.memTotal / 1048576)), '#28b463'))
      } catch (e) { cpu.replaceChildren(el('p', { class: 'error' }, e.message)) }
    })
    return el('div', { class: 'card' }, cpu, mem)
  }

  // chart draws values as an inline SVG polyline (no markup from data).
  function chart (vals, top, color) {
    if (vals.length === 1) vals = [vals[0], vals[0]] // one sample: a flat line, not an invisible point
    const ns = 'http://www.w3.org/2000/svg'
    const svg = document.createElementNS(ns, 'svg')
    svg.setAttribute('class', 'chart')
    svg.setAttribute('viewBox', '0 0 300 100')
    svg.setAttribute('preserveAspectRatio', 'none')
    const line = document.createElementNS(ns, 'polyline')
    const n = Math.max(vals.length - 1, 1)
    line.setAttribute('points', vals.map((v, i) => (i * 300 / n).toFixed(1) + ',' + (100 - Math.min(100, (v || 0) * 100 / top)).toFixed(1)).join(' '))
    line.setAttribute('stroke', color)
    svg.append(line)
    return svg
  }

  function logs (path) {
    const pre = el('pre', { class: 'logs', id: 'logs' })
    every(5000, async () => {
      try {
        const r = await api('GET', '/v2' + path + '/logs?limit=200&direction=backward')
        const lines = (r.logs || []).slice().reverse().map((l) => new Date(l.timestamp).toISOString() + ' ' + (l.level || '') + ' ' + (l.message || ''))
        pre.textContent = lines.join('\n')
      } catch (e) { pre.textContent = e.message }
    })
    return pre
  }

  // ---- templates ----
  async function viewTemplates () {
    const list = await api('GET', '/templates')
    main.replaceChildren(el('h2', {}, 'Templates'), el('table', { id: 'templates' },
      el('thead', {}, el('tr', {}, ['Template', 'Names', 'Builds', 'Public', 'vCPU', 'Memory', 'Updated'].map((h) => el('th', {}, h)))),
      el('tbody', {}, list.map((t) => el('tr', {},
        el('td', {}, el('a', { href: '/dashboard/templates/' + encodeURIComponent(t.templateID), 'data-nav': true }, t.templateID)),
        el('td', { class: 'wrap' }, (t.aliases || t.names || []).join(', ')), el('td', {}, String(t.buildCount ?? '')),
        el('td', {}, t.public ? 'yes' : 'no'), el('td', {}, String(t.cpuCount ?? '')), el('td', {}, t.memoryMB ? t.memoryMB + ' MiB' : ''),
        el('td', {}, t.updatedAt ? age(t.updatedAt) + ' ago' : ''))))))
  }

  async function viewTemplate (id) {
    const path = '/templates/' + encodeURIComponent(id)
    const t = await api('GET', path)
    const out = el('pre', { class: 'logs', id: 'build-logs' }, 'Choose a build.')
    let poll = null
    const show = (b, cell) => {
      let offset = 0
      out.textContent = ''
      clearInterval(poll)
      const tick = async () => {
        const st = await api('GET', path + '/builds/' + encodeURIComponent(b.buildID) + '/status?logsOffset=' + offset)
        const lines = (st.logEntries || []).map((l) => l.timestamp + ' ' + l.level + ' ' + l.message)
        offset += lines.length
        if (lines.length) out.textContent += lines.join('\n') + '\n'
        if (cell) cell.textContent = st.status
        if (st.status !== 'building' && st.status !== 'waiting') { clearInterval(poll); out.textContent += '[' + st.status + ']\n' }
      }
      tick(); poll = setInterval(tick, 2000); timers.push(poll)
    }
    main.replaceChildren(el('h2', {}, 'Template ', el('code', {}, id)),
      el('p', {}, 'Names: ', (t.aliases || t.names || []).join(', ')),
      el('table', { id: 'builds' }, el('thead', {}, el('tr', {}, ['Build', 'Status', 'Created', ''].map((h) => el('th', {}, h)))),
        el('tbody', {}, (t.builds || []).map((b) => {
          const cell = el('td', {}, b.status)
          return el('tr', {}, el('td', {}, b.buildID), cell, el('td', {}, b.createdAt ? age(b.createdAt) + ' ago' : ''),
            el('td', {}, el('button', { type: 'button', on: { click: () => show(b, cell) } }, 'Logs')))
        }))),
      el('h3', {}, 'Build log'), out)
  }

  // ---- audit (admin keys: the log holds every team's records) ----
  async function viewAudit () {
    const a = await api('GET', '/sbx/audit?limit=500')
    const when = a.anchoredAt ? ' · head anchored by the signed checkpoint of ' + a.anchoredAt + ' (seq ' + a.anchoredSeq + ')' : ''
    main.replaceChildren(el('h2', {}, 'Audit log'),
      el('p', { id: 'audit-verdict', class: a.verdict === 'OK' ? 'state-running' : 'error' },
        a.verdict, a.verdict === 'OK' ? ': ' + a.records + ' records verified' + (a.first > 1 ? ' (from seq ' + a.first + '; older ones rotated away)' : '') + when : '', a.message ? ' — ' + a.message : ''),
      el('table', { id: 'audit' }, el('thead', {}, el('tr', {}, ['Seq', 'Time', 'Kind', 'Sandbox', 'Actor', 'Fields'].map((h) => el('th', {}, h)))),
        el('tbody', {}, a.newest.map((r) => el('tr', {}, el('td', {}, String(r.seq)), el('td', {}, r.time), el('td', {}, r.kind),
          el('td', {}, r.sandbox || ''), el('td', {}, r.actor || ''),
          el('td', { class: 'wrap' }, Object.entries(r.fields || {}).map(([k, v]) => k + '=' + v).join(' ')))))))
  }

  // ---- health ----
  async function viewHealth () {
    const pre = el('pre', { class: 'logs', id: 'health' })
    main.replaceChildren(el('h2', {}, 'Health'), pre)
    every(5000, async () => {
      const parts = []
      for (const p of ['/health', '/sbx/version', '/sbx/storage']) {
        try { parts.push(p + '\n' + JSON.stringify(await api('GET', p), null, 2)) } catch (e) { parts.push(p + ': ' + e.message) }
      }
      pre.textContent = parts.join('\n\n')
    })
  }

  // ---- routing: every view has its own URL ----
  function route () {
    timers.forEach(clearInterval); timers = []
    cleanups.forEach((f) => f()); cleanups = []
    const p = location.pathname
    document.querySelectorAll('header nav a').forEach((a) => a.classList.toggle('active', p.startsWith(a.getAttribute('href'))))
    let m
    const run = (f) => f.catch((e) => main.replaceChildren(el('p', { class: 'error' }, e.message)))
    if ((m = p.match(/^\/dashboard\/sandboxes\/([^/]+)$/))) return run(viewSandbox(decodeURIComponent(m[1])))
    if ((m = p.match(/^\/dashboard\/templates\/([^/]+)$/))) return run(viewTemplate(decodeURIComponent(m[1])))
    if (p === '/dashboard/templates') return run(viewTemplates())
    if (p === '/dashboard/audit') return run(viewAudit())
    if (p === '/dashboard/health') return run(viewHealth())
    return run(viewSandboxes())
  }

  function navigate (to) { history.pushState(null, '', to); route() }

  document.addEventListener('click', (e) => {
    const a = e.target.closest('a[data-nav]')
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return
    e.preventDefault()
    navigate(a.getAttribute('href'))
  })
  window.addEventListener('popstate', route)
  document.getElementById('team').textContent = 'team ' + document.querySelector('meta[name=sbx-team]').content
  document.getElementById('signout').addEventListener('click', async () => {
    await call('POST', '/dashboard/logout')
    location.assign('/dashboard/login')
  })
  route()
})()
