package privdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnsure: what Ensure accepts, creates and refuses, as OpenSSH's
// safe_path judges ~/.ssh: the directory itself by lstat (caller's, no
// group/other write, no symlink), its parent by who could rename it away.
func TestEnsure(t *testing.T) {
	root := os.Getuid() == 0
	cases := []struct {
		name     string
		root     bool                              // needs chown
		setup    func(t *testing.T, parent string) // parent exists, 0700
		want     string                            // "" accepted, else in the error
		wantMode fs.FileMode                       // when accepted
	}{
		{"Missing", false, func(t *testing.T, p string) {}, "", 0o700},
		{"Private", false, func(t *testing.T, p string) { mkdir(t, filepath.Join(p, "d"), 0o700) }, "", 0o700},
		{"ReadableByOthers", false, func(t *testing.T, p string) { mkdir(t, filepath.Join(p, "d"), 0o755) }, "", 0o755},
		{"GroupWritable", false, func(t *testing.T, p string) { mkdir(t, filepath.Join(p, "d"), 0o770) }, "mode 0770", 0},
		{"WorldWritable", false, func(t *testing.T, p string) { mkdir(t, filepath.Join(p, "d"), 0o777) }, "mode 0777", 0},
		{"Symlink", false, func(t *testing.T, p string) {
			mkdir(t, filepath.Join(p, "real"), 0o700)
			if err := os.Symlink(filepath.Join(p, "real"), filepath.Join(p, "d")); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link", 0},
		{"RegularFile", false, func(t *testing.T, p string) {
			if err := os.WriteFile(filepath.Join(p, "d"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a directory", 0},
		{"ParentWorldWritableNotSticky", false, func(t *testing.T, p string) { chmod(t, p, 0o777) }, "not sticky", 0},
		{"ParentWorldWritableSticky", false, func(t *testing.T, p string) { chmod(t, p, 0o777|os.ModeSticky) }, "", 0o700},
		{"OtherOwner", true, func(t *testing.T, p string) {
			mkdir(t, filepath.Join(p, "d"), 0o700)
			chown(t, filepath.Join(p, "d"), 65534)
		}, "owned by uid 65534", 0},
		{"ParentOtherOwner", true, func(t *testing.T, p string) { chown(t, p, 65534) }, "owned by uid 65534, neither you", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && !root {
				t.Skip("chown to another uid needs root")
			}
			parent := filepath.Join(t.TempDir(), "parent")
			mkdir(t, parent, 0o700)
			tc.setup(t, parent)
			dir := filepath.Join(parent, "d")
			err := Ensure(dir)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				fi, err := os.Lstat(dir)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != tc.wantMode {
					t.Errorf("mode %04o, want %04o", fi.Mode().Perm(), tc.wantMode)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Ensure: %v, want a one-line *Error saying %q", err, tc.want)
			}
		})
	}
}

// TestCheckMissing: Check does not create, and a missing directory is
// fs.ErrNotExist (clients then report that no server answers).
func TestCheckMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := Check(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Check: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Check created %s", dir)
	}
}

// TestCheckFile: a file is trusted only if it is a regular file of the
// caller's that no one else can write.
func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name  string
		setup func(t *testing.T, p string)
		want  string
	}{
		{"Private", func(t *testing.T, p string) { write(t, p, 0o555) }, ""},
		{"GroupWritable", func(t *testing.T, p string) { write(t, p, 0o775) }, "mode 0775"},
		{"Symlink", func(t *testing.T, p string) {
			write(t, p+".target", 0o555)
			if err := os.Symlink(p+".target", p); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"OtherOwner", func(t *testing.T, p string) {
			if os.Getuid() != 0 {
				t.Skip("chown to another uid needs root")
			}
			write(t, p, 0o555)
			chown(t, p, 65534)
		}, "owned by uid 65534"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			tc.setup(t, p)
			_, err := CheckFile(p)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckFile: %v, want %q", err, tc.want)
			}
		})
	}
}

func mkdir(t *testing.T, p string, m fs.FileMode) {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	chmod(t, p, m)
}

func chmod(t *testing.T, p string, m fs.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Lchown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p string, m fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, p, m)
}
