//go:build race

package proxy

// raceEnabled: the race detector slows Go code, not assembly (SHA-256).
const raceEnabled = true
