package builder

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// image makes a one-layer image tree with the given files.
func image(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for p, data := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestProvisionAddsUser(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"no user", map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n", "etc/group": "root:x:0:\nsudo:x:27:\n", "bin/bash": "#!",
			"etc/skel/.profile": "# profile\n", "etc/skel/sub/x": "not copied"}},
		{"no passwd at all", map[string]string{"bin/sh": "#!"}},
		{"user exists", map[string]string{"etc/passwd": "root:x:0:0::/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/bash\n", "etc/group": "user:x:1000:\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := image(t, tc.files)
			_ = os.Chmod(filepath.Join(img, "bin/bash"), 0o755)
			v, err := openView(t.TempDir(), img)
			if err != nil {
				t.Fatal(err)
			}
			defer v.close()
			out := t.TempDir()
			if err := provision(v, out, func(string, ...any) {}); err != nil {
				t.Fatal(err)
			}
			passwd, _ := os.ReadFile(filepath.Join(out, "etc/passwd"))
			if strings.Count(string(passwd), "\nuser:")+strings.Count("\n"+string(passwd), "\nuser:") < 1 || !strings.Contains(string(passwd), "root:") {
				t.Errorf("passwd:\n%s", passwd)
			}
			group, _ := os.ReadFile(filepath.Join(out, "etc/group"))
			if !strings.Contains(string(group), "user:x:1000:") {
				t.Errorf("group:\n%s", group)
			}
			if tc.files["etc/group"] != "" && strings.Contains(tc.files["etc/group"], "sudo") && !strings.Contains(string(group), "sudo:x:27:user") {
				t.Errorf("user not in sudo: %s", group)
			}
			sudo, err := os.ReadFile(filepath.Join(out, "etc/sudoers.d/user"))
			if err != nil || !strings.Contains(string(sudo), "NOPASSWD") {
				t.Errorf("sudoers: %q %v", sudo, err)
			}
			var st unix.Stat_t
			if tc.name != "user exists" {
				if err := unix.Stat(filepath.Join(out, "home/user"), &st); err != nil || st.Uid != 1000 || st.Gid != 1000 || st.Mode&0o7777 != 0o755 {
					t.Errorf("home: %+v %v", st, err)
				}
			}
			if tc.name == "no user" { // the home gets /etc/skel's files (its top level), owned by user
				b, _ := os.ReadFile(filepath.Join(out, "home/user/.profile"))
				if err := unix.Lstat(filepath.Join(out, "home/user/.profile"), &st); err != nil || string(b) != "# profile\n" || st.Uid != 1000 {
					t.Errorf("skel .profile: %q %+v %v", b, st, err)
				}
				if _, err := os.Lstat(filepath.Join(out, "home/user/sub")); err == nil {
					t.Error("a skel subdirectory was copied")
				}
			}
			if _, err := os.Stat(filepath.Join(out, ".sbx")); err != nil {
				t.Error(err)
			}
		})
	}
}

// A hostile image's /etc/passwd symlink to the host's must be read inside
// the image (RESOLVE_IN_ROOT), never from the host.
func TestViewResolvesInsideTheImage(t *testing.T) {
	img := image(t, map[string]string{"inner/passwd": "root:x:0:0::/root:/bin/sh\n"})
	if err := os.MkdirAll(filepath.Join(img, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/inner/passwd", filepath.Join(img, "etc/passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../etc/shadow", filepath.Join(img, "etc/shadow")); err != nil {
		t.Fatal(err)
	}
	v, err := openView(t.TempDir(), img)
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	b, err := v.readFile("/etc/passwd", 1<<20)
	if err != nil || string(b) != "root:x:0:0::/root:/bin/sh\n" {
		t.Fatalf("read %q %v", b, err)
	}
	if b, _ := v.readFile("/etc/shadow", 1<<20); len(b) != 0 {
		t.Fatalf("read the host's /etc/shadow through the image: %d bytes", len(b))
	}
}

func TestUserName(t *testing.T) {
	img := image(t, map[string]string{"etc/passwd": "root:x:0:0::/root:/bin/sh\napp:x:1001:1001::/app:/bin/sh\n"})
	s := &Service{cfg: Config{TmpDir: t.TempDir()}}
	for _, tc := range []struct{ in, want string }{{"", "root"}, {"app", "app"}, {"app:app", "app"}, {"1001", "app"}, {"1001:1001", "app"}, {"0", "root"}} {
		got, err := s.userNameIn(img, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("userName(%q) = %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := s.userNameIn(img, "4242"); err == nil {
		t.Error("an unknown uid was accepted")
	}
}

// debianProfile is Debian 12's /etc/profile (base-files), in part.
const debianProfile = `if [ "$(id -u)" -eq 0 ]; then
  PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
else
  PATH="/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games"
fi
export PATH
`

// TestFastProfile: a profile that runs `id -u` to tell root is rewritten to
// ask the shell's EUID first, and sets the same PATH as the image's for
// root and for user, in bash (no `id` then) and in dash (which has no
// EUID); other profiles (one past 1 MiB too, which does not fail the
// build) are left to the image.
func TestFastProfile(t *testing.T) {
	for _, tc := range []struct {
		name, profile string
		rewritten     bool
	}{
		{"debian", debianProfile, true},
		{"no id", "export PATH=/bin\n", false},
		{"none", "", false},
		// past what provisioning reads: the image's own, the build goes on
		{"huge", debianProfile + strings.Repeat("#", 2<<20), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.profile != "" {
				files["etc/profile"] = tc.profile
			}
			img := image(t, files)
			v, err := openView(t.TempDir(), img)
			if err != nil {
				t.Fatal(err)
			}
			defer v.close()
			out := t.TempDir()
			if err := fastProfile(v, out); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(out, "etc/profile"))
			if !tc.rewritten {
				if err == nil {
					t.Fatalf("profile rewritten:\n%s", got)
				}
				return
			}
			if err != nil || strings.Contains(string(got), `"$(id -u)"`) || !strings.Contains(string(got), `"${EUID:-$(id -u)}"`) {
				t.Fatalf("profile: %v\n%s", err, got)
			}
			// bash runs no id: with none on its PATH, nothing complains
			bash := exec.Command("/bin/bash", "-c", ". "+filepath.Join(out, "etc/profile"))
			bash.Env = []string{"PATH=/nonexistent"}
			if said, err := bash.CombinedOutput(); err != nil || len(said) > 0 {
				t.Errorf("bash with no id on its PATH: %v: %s", err, said)
			}
			for _, sh := range []string{"/bin/bash", "/bin/dash"} {
				for _, uid := range []string{"0", "1000"} {
					want := pathAfter(t, sh, uid, filepath.Join(img, "etc/profile"))
					if have := pathAfter(t, sh, uid, filepath.Join(out, "etc/profile")); have != want {
						t.Errorf("%s as %s: PATH %q, the image's gives %q", sh, uid, have, want)
					}
				}
			}
		})
	}
}

// pathAfter is the PATH shell sh has as uid after sourcing the profile at
// path (copied where uid can read it).
func pathAfter(t *testing.T, sh, uid, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sbx-profile-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	profile := filepath.Join(dir, "profile")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(profile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("setpriv", "--reuid", uid, "--regid", uid, "--clear-groups", sh, "-c", ". "+profile+"; echo $PATH").CombinedOutput()
	if err != nil {
		t.Fatalf("%s as %s: %v: %s", sh, uid, err, out)
	}
	return strings.TrimSpace(string(out))
}
