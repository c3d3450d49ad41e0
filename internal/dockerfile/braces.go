package dockerfile

// expandBraces expands {a,b} alternatives (nested too) like the
// brace-expansion package minimatch uses; a brace group without a comma is
// literal. Numeric and letter ranges ({1..3}) are not expanded.
func expandBraces(s string) []string {
	open, close, commas := findBraceGroup(s)
	if open < 0 {
		return []string{s}
	}
	pre, post := s[:open], s[close+1:]
	var out []string
	prev := open + 1
	for _, c := range append(commas, close) {
		for _, mid := range expandBraces(s[prev:c]) {
			for _, tail := range expandBraces(post) {
				out = append(out, pre+mid+tail)
			}
		}
		prev = c + 1
	}
	return out
}

// findBraceGroup finds the first balanced {...} that has a top-level comma;
// open is -1 if there is none.
func findBraceGroup(s string) (open, close int, commas []int) {
	for start := 0; start < len(s); start++ {
		if s[start] != '{' || (start > 0 && s[start-1] == '\\') {
			continue
		}
		depth, cs := 0, []int(nil)
		for i := start; i < len(s); i++ {
			switch {
			case s[i] == '\\':
				i++
			case s[i] == '{':
				depth++
			case s[i] == '}':
				depth--
				if depth == 0 {
					if len(cs) > 0 {
						return start, i, cs
					}
					i = len(s)
				}
			case s[i] == ',' && depth == 1:
				cs = append(cs, i)
			}
		}
	}
	return -1, 0, nil
}
