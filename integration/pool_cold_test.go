package integration

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// fingerprintCmd prints what a tenant's first command can see of its
// environment: identity, cwd, umask, rlimits, env (minus what names the
// sandbox), files in the writable places (not their times, nor the random
// name of the agent's own interpreter dir) and the processes running but
// the pipeline's own: its sort may be running when ps looks, and a member
// caught in the middle of its exec has its new name but no arguments yet
// (ps prints "[grep]"), which made this test fail once in CI.
const fingerprintCmd = `id; pwd; umask; ulimit -a; env | grep -v -e '^E2B_SANDBOX_ID=' -e '^HOSTNAME=' -e '^_=' | sort
ls -la --time-style=+ /tmp /home/user /dev/shm /var/tmp | sed 's/sbx-interpreter-[0-9]*/sbx-interpreter-N/'; ps -eo user,args --no-headers | grep -v -e 'ps -eo' -e '^root *grep' -e '^[a-z]* *sort$' -e '^[a-z]* *\[\(grep\|sort\)\]$' | sort`

// TestPooledLikeCold: the first command in a sandbox taken from a warm
// pool (started before the tenant asked, and warmed with a command as the
// template's user) sees exactly what it sees in a sandbox started cold for
// the request: same user, cwd, umask, limits, env, files and processes, and
// nothing a previous tenant of the pool left. For the built-in base and for
// a user-built template (its own env, workdir and files), whose pool is
// configured by the template's name before the template is built.
func TestPooledLikeCold(t *testing.T) {
	for _, rt := range []string{"crun", "runsc"} {
		t.Run(rt, func(t *testing.T) {
			pooledLikeCold(t, rt, "base", "uid=1000(user)", nil)
		})
		t.Run(rt+"-user-template", func(t *testing.T) {
			pooledLikeCold(t, rt, "it-pooled-app", "APP_MODE=pooled", buildPooledApp)
		})
	}
}

// buildPooledApp builds the user template it-pooled-app on d, offline (on
// base): an ENV, a WORKDIR with a file a RUN made, a USER.
func buildPooledApp(t *testing.T, d *daemon) {
	tid, bid := d.startBuild(t, "it-pooled-app", map[string]any{"fromTemplate": "base", "steps": []map[string]any{
		{"type": "ENV", "args": []string{"APP_MODE", "pooled"}},
		{"type": "RUN", "args": []string{"mkdir -p /srv/app && echo hi > /srv/app/data && chown -R user /srv/app", "root"}},
		{"type": "WORKDIR", "args": []string{"/srv/app"}},
		{"type": "USER", "args": []string{"user"}}}})
	st := d.waitStatus(t, tid, bid, 3*time.Minute, func(st buildStatus) bool { return st.Status == "ready" || st.Status == "error" })
	if st.Status != "ready" {
		t.Fatalf("build: %+v", st)
	}
}

// pooledLikeCold compares the fingerprint of a claimed sandbox of tmpl on
// rt with a cold one's (a daemon on the same data dir without the pool);
// build, if set, makes tmpl after the pooled daemon started. want is a
// line the fingerprint must have.
func pooledLikeCold(t *testing.T, rt, tmpl, want string, build func(*testing.T, *daemon)) {
	req := map[string]any{"templateID": tmpl, "envVars": map[string]string{"TENANT": "t1"}}
	d := startDaemon(t, rt, "", "--pool", tmpl+"=1")
	if build != nil {
		build(t, d)
	}
	d.waitPool(t, 1)
	prev := d.create(req) // a previous tenant leaves traces, then goes
	prev.run("", "echo x > /tmp/prev; echo x > ~/prev; echo 'export LEAK=1' >> ~/.bashrc; (sleep 600 &)", 20*time.Second)
	d.api("DELETE", "/sandboxes/"+prev.ID, nil, nil)
	d.waitPool(t, 1)
	pooled, _ := d.create(req).run("", fingerprintCmd, 20*time.Second)
	if hits := poolHits(t, d); hits != 2 {
		t.Fatalf("%d of 2 creates of %s were served by its warm pool\n%s", hits, tmpl, tail(d.log.String(), 2000))
	}
	d.stop(syscall.SIGTERM)
	cold, _ := startDaemon(t, rt, d.dataDir).create(req).run("", fingerprintCmd, 20*time.Second)
	if pooled != cold {
		t.Fatalf("pooled sandbox differs from a cold one:\n--- pooled\n%s\n--- cold\n%s", pooled, cold)
	}
	for _, leak := range []string{"prev", "LEAK", "sleep 600"} {
		if strings.Contains(pooled, leak) {
			t.Fatalf("a previous tenant's %q is visible:\n%s", leak, pooled)
		}
	}
	if !strings.Contains(pooled, "TENANT=t1") || !strings.Contains(pooled, want) {
		t.Fatalf("fingerprint lacks the tenant's env or %q:\n%s", want, pooled)
	}
}

// poolHits is the number of creates the daemon served from a warm pool.
func poolHits(t *testing.T, d *daemon) int {
	_, m := scrape(t, d.url+"/metrics", true)
	n := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "sbx_pool_claims_total{") && strings.Contains(k, `result="hit"`) {
			n += v
		}
	}
	return int(n)
}
