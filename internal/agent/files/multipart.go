package files

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// readMultipart writes every part named "file". Its target is the path query
// when given (single-file form), else the part's filename, taken whole (not
// reduced to its base name as mime/multipart does).
func readMultipart(r *http.Request, up *uploadReq) error {
	mr, err := r.MultipartReader()
	if err != nil {
		return withStatus(http.StatusBadRequest, fmt.Errorf("parsing multipart form: %w", err))
	}
	q := r.URL.Query()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return withStatus(http.StatusBadRequest, fmt.Errorf("reading multipart form: %w", err))
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		target := q.Get("path")
		if !q.Has("path") {
			target = rawFilename(part.Header.Get("Content-Disposition"))
		}
		err = up.add(target, part)
		part.Close()
		if err != nil {
			return err
		}
	}
	if len(up.done) == 0 {
		return withStatus(http.StatusBadRequest, errors.New("multipart form has no part named \"file\""))
	}
	return nil
}

// formEscapes undoes the escaping of quotes and line breaks that the WHATWG
// FormData encoder applies to filenames.
var formEscapes = strings.NewReplacer("%22", `"`, "%0D", "\r", "%0A", "\n")

// rawFilename returns the filename parameter of a Content-Disposition value.
func rawFilename(cd string) string {
	_, params, err := mime.ParseMediaType(cd)
	if err != nil {
		return ""
	}
	return formEscapes.Replace(params["filename"])
}
