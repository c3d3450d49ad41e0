package audit

import (
	"fmt"
	"path/filepath"
)

// ForSandbox returns the records of one sandbox (all records when id is
// ""), at most limit of the newest (0 = all), oldest first. It reads the
// log at path and its rotated segments newest first and stops once it has
// limit, so a bounded query reads only the newest files; each file it reads
// is verified, and each must join the next (a deleted segment between them
// is an error).
func ForSandbox(path, id string, limit int) ([]Record, error) {
	files, err := chainFiles(path)
	if err != nil {
		return nil, err
	}
	var out []Record
	var next span // of the newer file read before
	nextName := ""
	for i := len(files) - 1; i >= 0; i-- {
		got, sp, err := matching(files[i], id, limit-len(out), limit > 0)
		name := filepath.Base(files[i].path)
		if err == nil && nextName != "" && sp.n > 0 {
			err = joins(sp.end, name, nextName, next)
		}
		if err == nil && files[i].first == 0 && len(files) == 1 && sp.n > 0 && sp.start != (link{}) {
			err = fmt.Errorf("%s starts at seq %d and no rotated segment holds the records before it: they were removed", name, sp.start.seq+1)
		}
		if err != nil {
			return nil, err
		}
		out = append(got, out...)
		if sp.n > 0 {
			next, nextName = sp, name
		}
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// matching reads one file and returns its records of sandbox id (every one
// when id is ""), the newest n of them when bounded.
func matching(seg segment, id string, n int, bounded bool) ([]Record, span, error) {
	var out []Record
	sp, err := readSegment(seg, true, func(r Record) error {
		if id == "" || r.Sandbox == id {
			out = append(out, r)
			if bounded && len(out) > n {
				out = out[1:]
			}
		}
		return nil
	})
	return out, sp, err
}
