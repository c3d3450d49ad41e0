// Package untrusted holds the bounds the daemon puts on what it reads from
// servers a tenant controls: a sandbox's agent (root in the sandbox can
// replace it) and any server in a sandbox its proxy forwards to, and how a
// tenant's words are made text before a reader's terminal or log shows
// them (Text, Cut). One place, so that every such reader reads alike.
package untrusted

// MaxHeaderBytes bounds a response header read from a tenant's server
// (http.Transport.MaxResponseHeaderBytes). net/http's default of 10 MiB
// let a server whose header never ends hold that much of the daemon's
// memory per request, and such requests may wait on a timeout only (or
// none); nginx's default is 4–8 KiB.
const MaxHeaderBytes = 64 << 10
