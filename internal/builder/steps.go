package builder

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/sbx-dev/sbx/client"
	"github.com/sbx-dev/sbx/internal/sandbox"
	"github.com/sbx-dev/sbx/internal/store"
	"github.com/sbx-dev/sbx/internal/template/layers"
)

// Step is one step of E2B's TemplateBuildStartV2.
type Step struct {
	Type      string   `json:"type"`
	Args      []string `json:"args"`
	FilesHash string   `json:"filesHash,omitempty"`
	Force     bool     `json:"force,omitempty"`
	// Upload options the SDK sends along; the upload already applied them.
	ForceUpload     *bool `json:"forceUpload,omitempty"`
	ResolveSymlinks *bool `json:"resolveSymlinks,omitempty"`
	// digest is the sha256 of a COPY's uploaded files that its cache key
	// took (filesDigest); the copy refuses files that differ from it.
	digest string
	Gzip   *bool `json:"gzip,omitempty"`
}

// stepSandbox starts a fresh build sandbox over stack and returns a
// connection to its agent and how to kill it (the caller does).
func (s *Service) stepSandbox(ctx context.Context, b *store.BuildRec, stack []string, cfg store.BuildConfig) (*client.SandboxConn, func(), error) {
	key := "sbx-build-" + b.ID + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	marker, err := s.tmpMarker(ctx)
	if err != nil {
		return nil, nil, err
	}
	stack = append(append([]string(nil), stack...), marker)
	t := s.reg.stackTemplate(key, "", stack, store.BuildConfig{User: "root", Env: cfg.Env})
	t.BuildStep = true
	s.reg.setTransient(key, &t)
	defer s.reg.setTransient(key, nil)
	allow := true
	in, err := s.mgr.Create(ctx, sandbox.CreateOpts{
		Template: key, Runtime: s.cfg.Runtime, Timeout: s.cfg.StepTimeout + 5*time.Minute,
		Metadata: map[string]string{buildMetaKey: b.ID}, AllowNet: &allow,
		Resources: s.buildResources(b),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start a build sandbox: %w", err)
	}
	kill := func() { _ = s.mgr.Kill(context.WithoutCancel(ctx), in.ID) }
	host, port, _ := strings.Cut(in.AgentAddr, ":")
	p, _ := strconv.Atoi(port)
	return sandbox.AgentConn(host, p, in.ID, in.EnvdToken), kill, nil
}

// tmpMarker is a layer holding only /tmp/.sbx-build, on top of every build
// step's stack: gVisor mounts a tmpfs over an empty /tmp, and what a step
// writes to /tmp must stay in its layer, as in Docker.
func (s *Service) tmpMarker(ctx context.Context) (string, error) {
	key := hashKey("sbx build /tmp marker v1")
	id, _ := layers.ID(key)
	_, err := s.reg.Layers.Ensure(ctx, key, func(dir string) error {
		if err := os.Mkdir(dir+"/tmp", 0o1777); err != nil {
			return err
		}
		if err := os.Chmod(dir+"/tmp", 0o777|os.ModeSticky); err != nil {
			return err
		}
		return os.WriteFile(dir+"/tmp/.sbx-build", nil, 0o644)
	})
	if err != nil {
		return "", err
	}
	return id, s.reg.Layers.Use(id)
}

// runShell runs script with /bin/sh -c as user in the build sandbox,
// streaming its output into the log (stdout at info, stderr at error, as
// E2B's build server logs a step's streams); a non-zero exit is an error
// naming it.
func (s *Service) runShell(ctx context.Context, conn *client.SandboxConn, lg *buildLog, step, user, cwd string, env map[string]string, script string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StepTimeout)
	defer cancel()
	out := &lineWriter{log: lg, step: step, level: "info"}
	defer out.flush()
	errw := &lineWriter{log: lg, step: step, level: "error"}
	defer errw.flush()
	argv := append([]string{"/bin/sh", "-c", script, "sh"}, args...)
	code, err := conn.Run(ctx, client.RunRequest{Argv: argv, User: user, Cwd: cwd, Envs: env}, out, errw)
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("step did not finish within %s", s.cfg.StepTimeout)
	}
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("exit status %d", code) // envd's status, as E2B reports it
	}
	return nil
}

// commandFailed words a failed RUN step as E2B's build server does
// ("failed to run command '<cmd>': command failed: <envd's status or
// error>", e.g. "exit status 127" or "unauthenticated: invalid username:
// 'root123'"), which E2B's own SDK tests match.
func commandFailed(cmd string, err error) error {
	return &e2bReason{fmt.Errorf("failed to run command '%s': command failed: %w", cmd, detail{err})}
}

// e2bReason is a step's failure worded as E2B's build server words it: the
// build's reason is its text alone, without what wraps it on the way out
// (the layer store's "layer <id>: "), as the SDK's BuildError shows E2B's.
type e2bReason struct{ err error }

func (e *e2bReason) Error() string { return e.err.Error() }
func (e *e2bReason) Unwrap() error { return e.err }

// reasonText is err's text, or that of the E2B-worded failure it wraps.
func reasonText(err error) string {
	if r := new(e2bReason); errors.As(err, &r) {
		return r.Error()
	}
	return err.Error()
}

// detail is err as envd words it: the agent's Connect error ("code:
// message") without the client's prefixes, else err's own text.
type detail struct{ err error }

func (d detail) Error() string {
	if ce := new(connect.Error); errors.As(d.err, &ce) {
		return ce.Error()
	}
	return d.err.Error()
}
func (d detail) Unwrap() error { return d.err }

// ensureWorkdir makes the working directory as E2B's WORKDIR step does: a
// `mkdir -p` as the template's user then (USER, not a RUN's own user), so
// a directory that user may not make (/opt/x under a root-owned /opt) fails
// the build (workdirFailed) where E2B's does, and the ones it makes are the
// user's, with the user's group.
const ensureWorkdir = `[ -z "$1" ] || [ -d "$1" ] || mkdir -p -- "$1"`

// workdirError is a failure to make the working directory, which the build
// puts on the WORKDIR step that set it (state.run.workdirStep), as E2B's
// WORKDIR step fails, not on the step that first needed the directory.
type workdirError struct{ err error }

func (e *workdirError) Error() string { return e.err.Error() }
func (e *workdirError) Unwrap() error { return e.err }

// workdirFailed words it as E2B's build server ("failed to create workdir:
// <envd's status>", commands/workdir.go).
func workdirFailed(err error) error {
	return &workdirError{&e2bReason{fmt.Errorf("failed to create workdir: %w", detail{err})}}
}

// runCommand runs a RUN step's command ($1) with bash, as E2B's build
// server does (`/bin/bash -l -c`), so bash syntax works (`[[ ]]`, `source`,
// `set -o pipefail`, brace expansion); an image without bash yet (one whose
// first step installs it) gets /bin/sh. Not a login shell: Debian's
// /etc/profile would reset the PATH an ENV step set.
const runCommand = `if [ -x /bin/bash ]; then exec /bin/bash -c "$1"; fi; exec /bin/sh -c "$1"`

// runStep executes a RUN or COPY step in a sandbox over stack and saves
// what it changed into dst (to become a layer).
func (s *Service) runStep(ctx context.Context, b *store.BuildRec, lg *buildLog, stepName string, stack []string, cfg runConfig, st Step, dst string) error {
	conn, kill, err := s.stepSandbox(ctx, b, stack, cfg.BuildConfig)
	if err != nil {
		return err
	}
	defer kill()
	if st.Type == "USER" { // the account does not exist yet: no workdir for it
		if err := s.runShell(ctx, conn, lg, stepName, "root", "/", nil, ensureAccount, st.Args[0]); err != nil {
			return fmt.Errorf("failed to create user: %w", err)
		}
		return s.saveStep(ctx, conn, lg, stepName, dst)
	}
	if err := s.makeWorkdir(ctx, conn, lg, stepName, stack, cfg); err != nil {
		return err
	}
	user := cfg.User
	if st.Type == "RUN" && len(st.Args) > 1 && st.Args[1] != "" {
		user = st.Args[1]
	}
	if user, err = s.userName(ctx, stack, user); err != nil {
		return err
	}
	switch st.Type {
	case "RUN":
		cwd := cfg.Workdir
		if cwd == "" {
			cwd = "/"
		}
		if err = s.runShell(ctx, conn, lg, stepName, user, cwd, cfg.Env, runCommand, st.Args[0]); err != nil {
			err = commandFailed(st.Args[0], err)
		}
	case "COPY":
		err = s.copyStep(ctx, conn, lg, stepName, b.TemplateID, cfg.BuildConfig, st)
	}
	if err != nil {
		return err
	}
	return s.saveStep(ctx, conn, lg, stepName, dst)
}

// makeWorkdir makes cfg's working directory (if missing) as the user the
// WORKDIR step ran as (else the step's).
func (s *Service) makeWorkdir(ctx context.Context, conn *client.SandboxConn, lg *buildLog, stepName string, stack []string, cfg runConfig) error {
	if cfg.Workdir == "" {
		return nil
	}
	user := cfg.workdirUser
	if user == "" {
		user = cfg.User
	}
	user, err := s.userName(ctx, stack, user)
	if err != nil {
		return err
	}
	if err := s.runShell(ctx, conn, lg, stepName, user, "/", nil, ensureWorkdir, cfg.Workdir); err != nil {
		return workdirFailed(err)
	}
	return nil
}

// saveStep saves what a step changed in the build sandbox into dst.
func (s *Service) saveStep(ctx context.Context, conn *client.SandboxConn, lg *buildLog, stepName, dst string) error {
	if err := s.runShell(ctx, conn, lg, stepName, "root", "/", nil, dropResidue); err != nil {
		return fmt.Errorf("remove the build sandbox's ids: %w", err)
	}
	return s.mgr.SaveFiles(ctx, conn.ID(), dst)
}

// dropResidue removes what the build sandbox's agent wrote for itself, so
// that no layer carries it: the ids it wrote to /run/e2b at its /init
// (agent/runids.go), and its code interpreter's drivers directory in /tmp
// (interpreter.writeDrivers, by its prefix; every sandbox's agent writes its own, and a
// layer's copy was a second, stale one in every sandbox of the template).
// It runs in the sandbox (no host path).
const dropResidue = `rm -f /run/e2b/.E2B_SANDBOX /run/e2b/.E2B_SANDBOX_ID /run/e2b/.E2B_TEAM_ID /run/e2b/.E2B_TEMPLATE_ID
for d in /tmp/sbx-interpreter-*; do if [ -d "$d" ]; then rm -rf "$d"; fi; done`

// copyStep unpacks the step's uploaded files at their destination inside the
// build sandbox, owned by the step's user (its third argument; none: the
// user steps run as then, cfg.User, as E2B's COPY defaults its owner to the
// build's current user) with the step's mode.
func (s *Service) copyStep(ctx context.Context, conn *client.SandboxConn, lg *buildLog, stepName, templateID string, cfg store.BuildConfig, st Step) error {
	if len(st.Args) < 2 {
		return fmt.Errorf("COPY needs a source and a destination")
	}
	src, dest := st.Args[0], st.Args[1]
	owner, mode := orDefault(argAt(st.Args, 2), cfg.User), argAt(st.Args, 3)
	f, err := s.openUpload(templateID, st.FilesHash)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := sameFiles(f, st.digest); err != nil {
		return err
	}
	if !path.IsAbs(dest) {
		base := cfg.Workdir
		if base == "" {
			base = "/"
		}
		dest = path.Join(base, dest) + map[bool]string{true: "/", false: ""}[intoDir(dest)]
	}
	if !strings.HasSuffix(dest, "/") && s.runShell(ctx, conn, &buildLog{}, stepName, "root", "/", nil, `[ -d "$1" ]`, dest) == nil {
		dest += "/" // an existing directory: the files go into it, as in Docker
	}
	tmp := "/tmp/.sbx-copy-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ".tar"
	tops, err := streamCopy(ctx, conn, f, tmp, src, dest, s.cfg.MaxUploadBytes)
	if err != nil {
		return fmt.Errorf("COPY %s: %w", src, err)
	}
	script := `set -e; t=$1; o=$2; m=$3; shift 3; tar -xpf "$t" -C /; rm -f "$t"
if [ -n "$o" ]; then case "$o" in *:*) ;; *) g=$(id -g -- "$o" 2>/dev/null) && o="$o:$g" ;; esac; chown -R -- "$o" "$@"; fi
[ -z "$m" ] || chmod -R -- "$m" "$@"`
	return s.runShell(ctx, conn, lg, stepName, "root", "/", nil, script, append([]string{tmp, owner, mode}, tops...)...)
}

// userName turns a Docker USER value into the account name the agent runs
// steps as: "" is root, "name[:group]" is name, a numeric "uid[:gid]" is
// the name /etc/passwd of the stack gives that uid.
func (s *Service) userName(ctx context.Context, stack []string, user string) (string, error) {
	if name, ok := plainUser(user); ok {
		return name, nil
	}
	lower, err := s.reg.lower(ctx, stack, false)
	if err != nil {
		return "", err
	}
	return s.userNameIn(lower, user)
}

// userNameIn finds the account of numeric uid user in the tree lower.
func (s *Service) userNameIn(lower, user string) (string, error) {
	if name, ok := plainUser(user); ok {
		return name, nil
	}
	user, _, _ = strings.Cut(user, ":")
	v, err := openView(s.cfg.TmpDir, lower)
	if err != nil {
		return "", err
	}
	defer v.close()
	passwd, err := v.readFile("/etc/passwd", 4<<20)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(passwd), "\n") {
		if f := strings.Split(line, ":"); len(f) > 2 && f[2] == user {
			return f[0], nil
		}
	}
	return "", fmt.Errorf("user %s: no account with that uid in the image's /etc/passwd", user)
}

// plainUser is the account name of a USER value that needs no lookup:
// "" is root, "name[:group]" is name; ok is false for a numeric uid.
func plainUser(user string) (name string, ok bool) {
	user, _, _ = strings.Cut(user, ":")
	if user == "" {
		return "root", true
	}
	if _, err := strconv.ParseUint(user, 10, 32); err != nil {
		return user, true
	}
	return "", false
}

// intoDir reports whether a COPY destination names a directory to copy
// into: "." or anything ending in "/" (or "/.").
func intoDir(dest string) bool {
	return dest == "." || strings.HasSuffix(dest, "/") || strings.HasSuffix(dest, "/.")
}

// streamCopy writes the retargeted tar of upload straight into the build
// sandbox at tmp (never whole in the daemon's memory) and returns the
// top-level paths it holds.
func streamCopy(ctx context.Context, conn *client.SandboxConn, upload io.Reader, tmp, src, dest string, limit int64) ([]string, error) {
	pr, pw := io.Pipe()
	var tops []string
	done := make(chan error, 1)
	go func() {
		t, err := retarget(ctx, upload, pw, src, dest, limit)
		tops = t
		pw.CloseWithError(err)
		done <- err
	}()
	werr := conn.WriteFileFrom(ctx, tmp, pr, "root")
	pr.CloseWithError(werr) // a failed upload stops the writer
	if rerr := <-done; rerr != nil && (werr == nil || !errors.Is(rerr, io.ErrClosedPipe)) {
		return nil, rerr
	}
	if werr != nil {
		return nil, fmt.Errorf("upload into the build sandbox: %w", werr)
	}
	return tops, nil
}

func argAt(a []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	return ""
}

// openUpload opens a template's uploaded files by hash.
func (s *Service) openUpload(templateID, hash string) (*os.File, error) {
	p, err := s.uploadPath(templateID, hash)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the files of this COPY (hash %s) were never uploaded", hash)
	}
	return f, err
}

// filesDigest is the sha256 of a template's uploaded files of hash. A COPY
// step's cache key takes it, never the filesHash alone: the hash is the
// client's claim about the files (E2B's SDK computes it from them, so
// anyone who knows a victim's files knows it), and a layer cached under it
// alone would let one team upload other content under that hash, build
// first and have its files copied into the other team's template (and let
// a team that names a hash without uploading read another team's files).
func (s *Service) filesDigest(templateID, hash string) (string, error) {
	f, err := s.openUpload(templateID, hash)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return digestOf(f)
}

func digestOf(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sameFiles checks that f, an upload opened for a COPY, still has the
// digest its cache key took (a new upload under the same hash since then
// would put other files in a layer keyed by the old ones), and rewinds it.
func sameFiles(f *os.File, digest string) error {
	d, err := digestOf(f)
	if err != nil {
		return err
	}
	if d != digest {
		return fmt.Errorf("the files of this COPY changed during the build (uploaded again): build again")
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}

// retarget reads the uploaded tar (gzip or plain) r, keeps the entries of
// src (the path as given to COPY, relative to the build context) and writes
// them to w as a tar to extract at "/": a file src lands at dest (or inside
// dest when dest ends with '/'); a directory src's contents land in dest.
// It returns the top-level paths it wrote.
// A gzip-compressed upload inflates to at most inflateSlack × limit bytes
// and stops with ctx (inflate.go).
func retarget(ctx context.Context, r io.Reader, w io.Writer, src, dest string, limit int64) ([]string, error) {
	br, err := maybeGunzip(ctx, r, inflateSlack*limit)
	if err != nil {
		return nil, err
	}
	tr, tw := tar.NewReader(br), tar.NewWriter(w)
	src = strings.Trim(path.Clean("/"+src), "/")
	tops := map[string]bool{}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read uploaded files: %w", err)
		}
		name := strings.Trim(path.Clean("/"+h.Name), "/")
		target, top, ok := mapEntry(name, src, dest, h.Typeflag == tar.TypeDir)
		if !ok {
			continue
		}
		if total += h.Size; total > limit {
			return nil, fmt.Errorf("uploaded files are larger than %d bytes", limit)
		}
		if err := copyEntry(tw, tr, h, target); err != nil {
			return nil, err
		}
		tops[top] = true
	}
	if len(tops) == 0 {
		return nil, fmt.Errorf("no files for %q in the upload", src)
	}
	out := make([]string, 0, len(tops))
	for t := range tops {
		out = append(out, t)
	}
	return out, tw.Close()
}

// mapEntry places entry name of the context at its destination.
func mapEntry(name, src, dest string, isDir bool) (target, top string, ok bool) {
	intoDir := strings.HasSuffix(dest, "/")
	dest = path.Clean(dest)
	switch {
	case src == "." || src == "":
		if name == "" || name == "." {
			return "", "", false
		}
		first, _, _ := strings.Cut(name, "/")
		return path.Join(dest, name), path.Join(dest, first), true
	case name == src && isDir:
		return "", "", false // its contents are copied, not the directory
	case name == src:
		if intoDir {
			t := path.Join(dest, path.Base(name))
			return t, t, true
		}
		return dest, dest, true
	case strings.HasPrefix(name, src+"/"):
		rel := strings.TrimPrefix(name, src+"/")
		first, _, _ := strings.Cut(rel, "/")
		return path.Join(dest, rel), path.Join(dest, first), true
	}
	if m, _ := path.Match(src, name); m { // a glob source: into dest
		t := path.Join(dest, path.Base(name))
		return t, t, true
	}
	return "", "", false
}

func copyEntry(tw *tar.Writer, tr io.Reader, h *tar.Header, target string) error {
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink:
	default:
		return nil // hardlinks, devices, fifos: not copied
	}
	nh := &tar.Header{Typeflag: h.Typeflag, Name: strings.TrimPrefix(target, "/"), Linkname: h.Linkname,
		Mode: h.Mode & 0o7777, Size: h.Size, ModTime: h.ModTime, Format: tar.FormatPAX}
	if h.Typeflag != tar.TypeReg {
		nh.Size = 0
	}
	if err := tw.WriteHeader(nh); err != nil {
		return err
	}
	if nh.Size > 0 {
		if _, err := io.CopyN(tw, tr, nh.Size); err != nil {
			return err
		}
	}
	return nil
}

// maybeGunzip is r, inflated if it is gzip-compressed: then at most limit
// bytes come out of it, and none once ctx ended.
func maybeGunzip(ctx context.Context, r io.Reader, limit int64) (io.Reader, error) {
	br := &peekReader{r: r}
	head, err := br.peek(2)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		return &boundedReader{ctx: ctx, r: zr, limit: limit}, nil
	}
	return br, nil
}

type peekReader struct {
	r   io.Reader
	buf []byte
}

func (p *peekReader) peek(n int) ([]byte, error) {
	b := make([]byte, n)
	k, err := io.ReadFull(p.r, b)
	p.buf = b[:k]
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return p.buf, err
}

func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.buf) > 0 {
		n := copy(b, p.buf)
		p.buf = p.buf[n:]
		return n, nil
	}
	return p.r.Read(b)
}
