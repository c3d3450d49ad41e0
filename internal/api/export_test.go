package api

// SetMaxTemplatesPerTeam sets maxTemplatesPerTeam for a test and returns
// the function that puts it back.
func SetMaxTemplatesPerTeam(n int) (restore func()) {
	old := maxTemplatesPerTeam
	maxTemplatesPerTeam = n
	return func() { maxTemplatesPerTeam = old }
}
