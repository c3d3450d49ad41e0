package client

// SetAgentReadMax lowers the bound on one agent message (MaxAgentMessage)
// for a test; the returned func restores it.
func SetAgentReadMax(n int) (restore func()) {
	old := agentReadMax
	agentReadMax = n
	return func() { agentReadMax = old }
}
