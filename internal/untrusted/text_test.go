package untrusted

import "testing"

func TestText(t *testing.T) {
	for _, c := range []struct {
		in, keep string
		repl     rune
		want     string
	}{
		{"ok\xffok", "", '\uFFFD', "ok\uFFFDok"},
		{"a\x1b[31mb\nc\u0085", "", '\uFFFD', "a\uFFFD[31mb\uFFFDc\uFFFD"},
		{"a\tb\r\n\a", "\t", '\uFFFD', "a\tb\uFFFD\uFFFD\uFFFD"},
		{"x\x1b]52;c;Zm9v\x07\n\xfe\uFFFDé", "\n\t", '?', "x?]52;c;Zm9v?\n??é"},
	} {
		if got := Text(c.in, c.keep, c.repl); got != c.want {
			t.Errorf("Text(%q, %q, %q) = %q, want %q", c.in, c.keep, c.repl, got, c.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"aé", 2, "a", true}, // é is two bytes: never half of it
		{"éé", 1, "", true},
	} {
		if got, cut := Cut(c.in, c.n); got != c.want || cut != c.cut {
			t.Errorf("Cut(%q, %d) = %q, %v; want %q, %v", c.in, c.n, got, cut, c.want, c.cut)
		}
	}
}
