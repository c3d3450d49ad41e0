package main

import (
	"strings"

	"github.com/sbx-dev/sbx/internal/untrusted"
)

// termText is s as text for the user's terminal: invalid UTF-8 and every
// control character but newline (ESC of escape sequences, CR, BEL, C1)
// become '?'. What the CLI prints of a sandbox's or another key holder's
// words (an error carrying a sandbox's stderr, metadata) goes through it,
// so none can write the clipboard (OSC 52), repaint the screen or overwrite
// a line. A command's own output (`exec`, `run`, `shell`) is the user's
// stream and stays as it is.
func termText(s string) string {
	return untrusted.Text(s, "\n\t", '?')
}

// cellText is s as one cell of a printed table: termText with newlines and
// tabs made spaces, so that a name cannot break the table's rows or columns.
func cellText(s string) string {
	return termText(strings.NewReplacer("\n", " ", "\t", " ").Replace(s))
}
