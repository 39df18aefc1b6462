// Package docs holds nlemu's user documentation (PROTOCOL.md); its tests
// check that the README and these documents say what the code does.
package docs

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/server"
)

const root = ".." // the module root, from this package's directory

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// userDocs lists the documents a user reads: README.md and docs/*.md.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.Join("docs", filepath.Base(d)))
	}
	return out
}

// goModRequires returns go.mod's direct requirements (no `// indirect`).
func goModRequires(t *testing.T) []string {
	t.Helper()
	var mods []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(read(t, "go.mod")))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "require (":
			in = true
		case l == ")":
			in = false
		case strings.HasPrefix(l, "require ") && !strings.HasSuffix(l, "("):
			if !strings.Contains(l, "// indirect") {
				mods = append(mods, strings.Fields(l)[1])
			}
		case in && l != "" && !strings.Contains(l, "// indirect"):
			mods = append(mods, strings.Fields(l)[0])
		}
	}
	sort.Strings(mods)
	return mods
}

// importedModules returns the modules of go.mod's requirements that some
// .go file of this module imports.
func importedModules(t *testing.T, required []string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			for _, m := range required {
				if p == m || strings.HasPrefix(p, m+"/") {
					seen[m] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	for m := range seen {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	return mods
}

// readmeDependencies returns the modules listed in the README's
// "Dependencies and why" table (first column, in backquotes).
func readmeDependencies(t *testing.T) []string {
	t.Helper()
	readme := read(t, "README.md")
	i := strings.Index(readme, "## Dependencies and why")
	if i < 0 {
		t.Fatal(`README.md has no "## Dependencies and why" section`)
	}
	sec := readme[i+len("## Dependencies and why"):]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j]
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|\\s*(\\S.*)\\|$")
	var mods []string
	for _, m := range row.FindAllStringSubmatch(sec, -1) {
		mods = append(mods, m[1])
	}
	sort.Strings(mods)
	return mods
}

// TestReadmeListsExactlyImportedDeps: the README's dependency table listed
// github.com/jsimonetti/rtnetlink/v2, which nothing imports, and left out
// github.com/schollz/progressbar/v3 and golang.org/x/term, which `nlemu
// load` uses. The table, go.mod's direct requirements and what the code
// imports must be the same set (each row also says why).
func TestReadmeListsExactlyImportedDeps(t *testing.T) {
	req := goModRequires(t)
	if diff := cmp.Diff(req, importedModules(t, req)); diff != "" {
		t.Errorf("go.mod requires modules nothing imports (-go.mod +imported):\n%s", diff)
	}
	if diff := cmp.Diff(req, readmeDependencies(t)); diff != "" {
		t.Errorf("README's dependency table differs from go.mod's direct requirements (-go.mod +README):\n%s", diff)
	}
}

// TestDocsStandAlone: the README and docs/ pointed readers at the team's
// notes directory beside the checkout, outside this repository, which users
// do not have. Every relative link and path they mention must be inside the
// repository and exist.
func TestDocsStandAlone(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	for _, name := range userDocs(t) {
		text := read(t, name)
		for i, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "../") {
				t.Errorf("%s:%d refers outside the repository: %s", name, i+1, l)
			}
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			p := filepath.Join(root, filepath.Dir(name), target)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s, which does not exist: %v", name, target, err)
			}
		}
	}
}

// TestQuickStartRunsTheBinary: the quick start started the server with
// `go run ./cmd/nlemu serve &`; killing that `go run` leaves the real
// server running, orphaned, on the socket. The README must build nlemu once
// and run the binary.
func TestQuickStartRunsTheBinary(t *testing.T) {
	readme := read(t, "README.md")
	if strings.Contains(readme, "go run ./cmd/nlemu serve") || regexp.MustCompile(`go run [^\n]*serve`).MatchString(readme) {
		t.Error("README starts the server with `go run ... serve`")
	}
	if !strings.Contains(readme, "go build -o nlemu ./cmd/nlemu") {
		t.Error("README does not build the binary once (`go build -o nlemu ./cmd/nlemu`)")
	}
}

// shBlockAfter returns the first ```sh block after marker in the README.
func shBlockAfter(t *testing.T, marker string) string {
	t.Helper()
	readme := read(t, "README.md")
	i := strings.Index(readme, marker)
	if i < 0 {
		t.Fatalf("README has no %q", marker)
	}
	rest := readme[i:]
	j := strings.Index(rest, "```sh\n")
	if j < 0 {
		t.Fatalf("no sh block after %q", marker)
	}
	rest = rest[j+len("```sh\n"):]
	k := strings.Index(rest, "```")
	if k < 0 {
		t.Fatal("unterminated sh block")
	}
	return rest[:k]
}

// TestQuickStartServerSession runs the quick start's server session as a
// user would paste it, with the binary built as the README says. It used to
// start the server with `go run ... &` and talk to it at once: the first
// command raced the server's listen ("no server at ...") and the server
// outlived its killed `go run`. The session must print the added rule as
// the kernel would, and the server must be gone afterwards (its socket
// removed).
func TestQuickStartServerSession(t *testing.T) {
	for _, tool := range []string{"ip", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the session runs the real ip through the LD_PRELOAD shim", tool)
		}
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "nlemu"), "./cmd/nlemu")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -o nlemu ./cmd/nlemu: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "run", "nlemu.sock")
	if err := os.Mkdir(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	session := shBlockAfter(t, "Unmodified `ip` against a server")
	// Run it twice: a race between the server's listen and the first
	// client shows up only sometimes.
	for run := 0; run < 2; run++ {
		cmd := exec.Command("bash", "-e", "-c", session+"wait\n")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NLEMU_SOCKET="+sock)
		// When a command of the session fails, bash exits and leaves the
		// background server holding the output pipe: run the session in
		// its own process group, stop waiting for the pipe shortly after
		// bash exits (a hang guard, not a timing check), and kill what
		// is left of the group.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		if err != nil {
			t.Fatalf("quick start session: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "32765:\tfrom 10.0.0.0/8 lookup 5\n") {
			t.Errorf("quick start session printed:\n%s\nwant the added rule, as `ip rule show` prints it", out)
		}
		if _, err := os.Lstat(sock); err == nil {
			t.Errorf("the socket %s is still there after the session: the server did not stop", sock)
		}
	}
}

// pythonExample returns the first ```python block of PROTOCOL.md.
func pythonExample(t *testing.T) string {
	t.Helper()
	text := read(t, "docs/PROTOCOL.md")
	i := strings.Index(text, "```python\n")
	if i < 0 {
		t.Fatal("docs/PROTOCOL.md has no python example")
	}
	code := text[i+len("```python\n"):]
	j := strings.Index(code, "```")
	if j < 0 {
		t.Fatal("unterminated python example")
	}
	return code[:j]
}

// TestProtocolExampleFindsTheDefaultSocket: the Python client of
// PROTOCOL.md connected to /run/user/0/nlemu.sock, which is not where a
// server listens by default (and not even the right uid for most users).
// Run the example, as a user would, against a server on the path
// server.SocketPath resolves in each case: $NLEMU_SOCKET, else
// $XDG_RUNTIME_DIR/nlemu.sock, else $TMPDIR/nlemu-$UID/nlemu.sock. The
// example prints the HELLO answer's version and port id.
func TestProtocolExampleFindsTheDefaultSocket(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: cannot run PROTOCOL.md's example")
	}
	code := pythonExample(t)
	for _, tc := range []struct {
		name                   string
		socket, xdg, useTmpdir bool
	}{
		{name: "NLEMU_SOCKET", socket: true, xdg: true},
		{name: "XDG_RUNTIME_DIR", xdg: true},
		{name: "TMPDIR", useTmpdir: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"NLEMU_SOCKET": "", "XDG_RUNTIME_DIR": "", "TMPDIR": filepath.Join(dir, "tmp")}
			if tc.socket {
				env["NLEMU_SOCKET"] = filepath.Join(dir, "explicit.sock")
			}
			if tc.xdg {
				env["XDG_RUNTIME_DIR"] = filepath.Join(dir, "xdg")
			}
			for _, d := range []string{env["TMPDIR"], env["XDG_RUNTIME_DIR"]} {
				if d != "" {
					if err := os.MkdirAll(d, 0o700); err != nil {
						t.Fatal(err)
					}
				}
			}
			for k, v := range env {
				t.Setenv(k, v)
			}
			sock := server.SocketPath("")
			srv := server.New(server.Config{})
			defer srv.Close()
			if _, err := srv.ListenUnix(sock); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py, "-c", code)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python example (server on %s): %v\n%s", sock, err, out)
			}
			f := strings.Fields(string(out))
			if len(f) != 2 || f[0] != "1" || f[1] == "0" {
				t.Errorf("python example printed %q, want `1 PORTID` (HELLO version 1, a nonzero port id)", out)
			}
		})
	}
}
