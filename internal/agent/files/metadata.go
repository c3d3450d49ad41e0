package files

import (
	"net/http"
	"strings"

	"github.com/sbx-dev/sbx/internal/agent/filesystem/fsutil"
)

const metadataHeader = "x-metadata-"

// parseMetadata collects X-Metadata-<key>: <value> headers into lowercased
// keys, validated by fsutil.ValidateMetadata (400 when invalid). A key sent
// twice keeps its first value. No headers give nil.
func parseMetadata(h http.Header) (map[string]string, error) {
	var md map[string]string
	for k, vs := range h {
		key, ok := cutPrefixFold(k, metadataHeader)
		if !ok || len(vs) == 0 {
			continue
		}
		if md == nil {
			md = map[string]string{}
		}
		md[strings.ToLower(key)] = vs[0]
	}
	if err := fsutil.ValidateMetadata(md); err != nil {
		return nil, err
	}
	return md, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return "", false
	}
	return s[len(prefix):], true
}
