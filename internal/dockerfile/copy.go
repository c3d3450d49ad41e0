package dockerfile

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// copyCmd handles COPY: one COPY step per source, as the SDK's copy() does.
func (c *converter) copyCmd(x *instructions.CopyCommand) error {
	switch {
	case x.From != "":
		return fmt.Errorf("COPY --from=%s is not supported: templates are single-stage", x.From)
	case len(x.ExcludePatterns) > 0:
		return errors.New("COPY --exclude is not supported")
	case x.Parents:
		return errors.New("COPY --parents is not supported")
	case len(x.SourceContents) > 0:
		return errors.New("COPY with a heredoc is not supported")
	}
	return c.copies(x.SourcePaths, x.DestPath, x.Chown, x.Chmod)
}

// addCmd handles ADD of local files, which is COPY; remote sources are
// refused, and local archives are copied, not unpacked.
func (c *converter) addCmd(line int, x *instructions.AddCommand) error {
	if len(x.SourceContents) > 0 {
		return errors.New("ADD with a heredoc is not supported")
	}
	if len(x.ExcludePatterns) > 0 {
		return errors.New("ADD --exclude is not supported")
	}
	for _, src := range x.SourcePaths {
		if isRemote(src) {
			return fmt.Errorf("ADD %s: remote sources are not supported; download with RUN curl or wget instead", src)
		}
		if isArchive(src) {
			c.warnf(line, "ADD %s copies the archive; it is not unpacked", src)
		}
	}
	return c.copies(x.SourcePaths, x.DestPath, x.Chown, x.Chmod)
}

// copies appends one COPY step [src, dest, user, mode] per source. Without
// --chown the files are root's, as in Docker whatever USER says (a COPY step
// with no user is owned by the build's current user, as on E2B).
func (c *converter) copies(srcs []string, dest, chown, chmod string) error {
	mode, err := octalMode(chmod)
	if err != nil {
		return err
	}
	if chown == "" {
		chown = "root"
	}
	for _, src := range srcs {
		if err := checkSource(src); err != nil {
			return err
		}
		c.step("COPY", src, dest, chown, mode)
	}
	return nil
}

// checkSource refuses what the SDK refuses: absolute sources and sources
// outside the context.
func checkSource(src string) error {
	if path.IsAbs(src) {
		return fmt.Errorf("source %q: absolute paths are not allowed; use a path relative to the context", src)
	}
	if p := path.Clean(src); p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("source %q: the path escapes the build context", src)
	}
	return nil
}

// octalMode turns --chmod's value into the SDK's zero-padded octal ("0755").
func octalMode(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o7777 {
		return "", fmt.Errorf("--chmod=%s: want an octal mode such as 0755", s)
	}
	return fmt.Sprintf("%04o", m), nil
}

func isRemote(src string) bool {
	return strings.Contains(src, "://") || strings.HasPrefix(src, "git@")
}

func isArchive(src string) bool {
	for _, ext := range []string{".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst"} {
		if strings.HasSuffix(src, ext) {
			return true
		}
	}
	return false
}
