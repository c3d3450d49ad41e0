// Package pgtest runs a throwaway PostgreSQL server for tests: Debian's
// postgresql binaries (initdb, pg_ctl) as the postgres user, on a private
// loopback port and socket directory, removed when the tests end. Without
// PostgreSQL installed a test is skipped, or fails under CI=true.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// Server is one running throwaway PostgreSQL cluster.
type Server struct {
	Port int
	dir  string // data dir, socket dir and log, removed by Stop
	bin  string // the postgresql bin directory
}

// BinDir returns the newest /usr/lib/postgresql/*/bin holding initdb.
func BinDir() (string, error) {
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(m) == 0 {
		return "", fmt.Errorf("postgresql is not installed (apt-get install -y postgresql)")
	}
	sort.Slice(m, func(i, j int) bool { return ver(m[i]) < ver(m[j]) })
	return filepath.Dir(m[len(m)-1]), nil
}

func ver(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// Start initialises a cluster in a new directory under base ("" = the
// temp dir) and starts it on 127.0.0.1:port (0 = a free port), trust auth
// for the postgres user, fsync off (throwaway). Stop removes it all.
func Start(base string, port int) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp(base, "sbx-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Port: port, dir: dir, bin: bin}
	if err := s.start(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error {
	if err := chownPostgres(s.dir); err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--locale=C", "-E", "UTF8", "--no-sync"); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", s.Port, s.dir)
	if out, err := s.run("pg_ctl", "-D", data, "-l", filepath.Join(s.dir, "log"), "-o", opts, "-w", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("pg_ctl start: %w: %s %s", err, out, log)
	}
	return nil
}

// run runs a postgresql binary, as the postgres user when we are root
// (initdb and postgres refuse to run as root).
func (s *Server) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(s.bin, name)}, args...)...)
	}
	return cmd.CombinedOutput()
}

func chownPostgres(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

// Stop stops the server at once and removes its directory.
func (s *Server) Stop() {
	if _, err := os.Stat(filepath.Join(s.dir, "data", "postmaster.pid")); err == nil {
		s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop") //nolint:errcheck // best effort
	}
	os.RemoveAll(s.dir)
}

// URL is the connection URL of database name on s.
func (s *Server) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, name)
}

// CreateDB creates an empty database and returns its URL.
func (s *Server) CreateDB(ctx context.Context, name string) (string, error) {
	admin, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	sharedMu sync.Mutex
	shared   *Server
	dbs      int
)

// URL returns the URL of a new empty database on the test binary's shared
// server, started on first use (in $SBX_PGTEST_DIR, on $SBX_PGTEST_PORT
// when set). Without PostgreSQL the test is skipped, or fails if CI=true.
// Main stops the server.
func URL(t testing.TB) string {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		port, _ := strconv.Atoi(os.Getenv("SBX_PGTEST_PORT"))
		s, err := Start(os.Getenv("SBX_PGTEST_DIR"), port)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("PostgreSQL is required under CI=true: %v", err)
			}
			t.Skipf("no PostgreSQL: %v", err)
		}
		shared = s
	}
	dbs++
	url, err := shared.CreateDB(context.Background(), fmt.Sprintf("t%d", dbs))
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// Main runs the tests of m, then stops the shared server if one started,
// and exits with the tests' code.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit: it returns the tests' code, for a TestMain
// with more to clean up.
func Run(m *testing.M) int {
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		shared.Stop()
	}
	sharedMu.Unlock()
	return code
}
