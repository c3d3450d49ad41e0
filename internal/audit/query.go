package audit

import (
	"fmt"
	"os"
)

// ForSandbox verifies the log at path and returns the records of one sandbox
// (all records when id is ""), at most limit of the newest (0 = all).
func ForSandbox(path, id string, limit int) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	defer f.Close()
	var out []Record
	err = Read(f, func(r Record) error {
		if id == "" || r.Sandbox == id {
			out = append(out, r)
			if limit > 0 && len(out) > limit {
				out = out[1:]
			}
		}
		return nil
	})
	return out, err
}
