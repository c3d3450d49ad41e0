package network

import (
	"os/exec"
	"strings"
	"testing"
)

// TestIfPrefixValidated: a link prefix the nft command could not name as a
// table (a keyword such as le, or a leading digit) is refused at start with
// a message saying why; the usual ones pass.
func TestIfPrefixValidated(t *testing.T) {
	for _, tc := range []struct {
		prefix, wantErr string
	}{
		{"sbx", ""}, {"sbi", ""}, {"ld", ""}, {"sb0", ""}, {"a", ""},
		{"le", "nft keyword"}, {"ip", "nft keyword"}, {"tcp", "nft keyword"},
		{"1ab", "first a letter"}, {"abcd", "1-3 chars"}, {"A", "1-3 chars"}, {"a-b", "1-3 chars"},
	} {
		_, err := Config{IfPrefix: tc.prefix}.withDefaults()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("prefix %q: %v, want %q", tc.prefix, err, tc.wantErr)
		}
	}
}

// TestNftKeywordsParse checks the keyword list against this machine's nft
// command, when it has one: each listed name fails to parse as a table name
// and a few others parse.
func TestNftKeywordsParse(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft command")
	}
	parses := func(name string) bool {
		return exec.Command("nft", "-c", "add", "table", "inet", name).Run() == nil
	}
	for k := range nftKeywords {
		if parses(k) {
			t.Errorf("%q is listed as an nft keyword but parses as a table name", k)
		}
	}
	for _, ok := range []string{"sbx", "ld", "sbi", "zz"} {
		if !parses(ok) {
			t.Errorf("%q does not parse as a table name", ok)
		}
	}
}
