// Preloaded into node by test/e2e/tls/run.sh (NODE_OPTIONS=--require): names
// under $SBX_E2E_TLS_HOST (e.g. api.sbx.test, 8000-<id>.sbx.test) resolve
// to 127.0.0.1, as a wildcard DNS record would; every other name goes to the
// system resolver. Node's net/tls (and so fetch) look names up through
// dns.lookup at connect time, so replacing it here is enough.
const dns = require('node:dns')

const suffix = process.env.SBX_E2E_TLS_HOST
const lookup = dns.lookup

function ours(host) {
  return typeof host === 'string' && suffix && (host === suffix || host.endsWith('.' + suffix))
}

dns.lookup = function (host, opts, cb) {
  if (typeof opts === 'function') [cb, opts] = [opts, {}]
  if (!ours(host)) return lookup.call(this, host, opts, cb)
  const all = typeof opts === 'object' && opts !== null && opts.all
  process.nextTick(() => (all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)))
  return {}
}
