//go:build cgo && linux

package main

// The fast path of `nlemu exec` (see execfast.go for the record it reads):
// a C constructor that runs when the dynamic loader starts this binary,
// before the Go runtime, and execve's CMD straight away when nothing needs
// Go: the arguments are the common ones, the shim's record for this binary
// is there and still describes the library, the server's socket accepts a
// connection, and CMD is a dynamically linked, non-Go, non-set-ID
// executable of the shim's machine (or not ELF at all). Anything else —
// an unknown flag, -h, a missing server or library, a program to refuse,
// a failed execve — returns to the Go code, which does the full checks and
// prints the messages; so the fast path never decides a refusal, it only
// skips the Go start-up (about 1 ms of CPU) when the answer is "run it".

/*
#cgo CFLAGS: -O2 -Wall
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#define FAST_PATH_MAX 4096

// fast_abs makes p absolute in out (as filepath.Abs does for a clean path);
// 0 on success. Paths with "." or ".." components or "//" are left to Go.
static int fast_abs(const char *p, char *out, size_t n)
{
	if (!*p || strstr(p, "/./") || strstr(p, "/../") || strstr(p, "//") || !strcmp(p, ".") ||
	    !strncmp(p, "./", 2) || !strncmp(p, "../", 3) || !strcmp(p, ".."))
		return -1;
	size_t l = strlen(p);
	if (l >= 2 && (!strcmp(p + l - 2, "/.") || (l >= 3 && !strcmp(p + l - 3, "/.."))))
		return -1;
	if (p[0] == '/') {
		if (l >= n)
			return -1;
		memcpy(out, p, l + 1);
	} else {
		if (!getcwd(out, n))
			return -1;
		size_t c = strlen(out);
		if (c + 1 + l >= n || !strcmp(out, "/"))
			return -1;
		out[c] = '/';
		memcpy(out + c + 1, p, l + 1);
	}
	if (l > 1 && out[strlen(out) - 1] == '/')
		return -1;
	return 0;
}

// fast_private: path is a real (not symlinked) file of type `type` owned by
// the caller and not writable by group or others, as privdir checks.
static int fast_private(const char *path, mode_t type, struct stat *st)
{
	if (lstat(path, st) < 0)
		return 0;
	return (st->st_mode & S_IFMT) == type && st->st_uid == getuid() && !(st->st_mode & 022);
}

// fast_privdir is privdir.Check: dir is fast_private and its parent is
// owned by the caller or root, and sticky if others may write to it.
static int fast_privdir(const char *dir)
{
	char parent[FAST_PATH_MAX];
	struct stat st;
	if (strlen(dir) >= sizeof(parent))
		return 0;
	strcpy(parent, dir);
	char *slash = strrchr(parent, '/');
	if (!slash)
		return 0;
	if (slash == parent)
		slash[1] = 0;
	else
		*slash = 0;
	if (stat(parent, &st) < 0 || (st.st_uid != 0 && st.st_uid != getuid()) ||
	    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
		return 0;
	return fast_private(dir, S_IFDIR, &st);
}

// fast_lib finds the shim through the record `nlemu exec` wrote for this
// very binary (execfast.go), and checks that it still describes the file.
static int fast_lib(char *lib, size_t n, unsigned *cls, unsigned *mach)
{
	char base[FAST_PATH_MAX], rec[FAST_PATH_MAX];
	const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	if (x && *x) {
		if (x[0] != '/' || snprintf(base, sizeof(base), "%s/nlemu", x) >= (int)sizeof(base))
			return -1;
	} else if (h && h[0] == '/') {
		if (snprintf(base, sizeof(base), "%s/.cache/nlemu", h) >= (int)sizeof(base))
			return -1;
	} else {
		return -1;
	}
	struct stat st, self;
	if (!fast_privdir(base) || stat("/proc/self/exe", &self) < 0)
		return -1;
	if (snprintf(rec, sizeof(rec), "%s/exec-fast-%lx-%lx-%lld.%09ld-%lld", base,
		     (unsigned long)self.st_dev, (unsigned long)self.st_ino, (long long)self.st_mtim.tv_sec,
		     self.st_mtim.tv_nsec, (long long)self.st_size) >= (int)sizeof(rec))
		return -1;
	int fd = open(rec, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[FAST_PATH_MAX + 256];
	ssize_t r = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() && !(st.st_mode & 022))
		r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -1;
	buf[r] = 0;
	unsigned long long dev, ino, size;
	long long sec;
	long nsec;
	char *nl = strchr(buf, '\n');
	if (!nl || (size_t)(nl - buf) >= n)
		return -1;
	*nl = 0;
	strcpy(lib, buf);
	if (sscanf(nl + 1, "%llx %llx %llu %lld.%ld %u %u", &dev, &ino, &size, &sec, &nsec, cls, mach) != 7)
		return -1;
	// the library lives in a private directory under base
	size_t bl = strlen(base);
	if (strncmp(lib, base, bl) || lib[bl] != '/')
		return -1;
	char dir[FAST_PATH_MAX];
	strcpy(dir, lib);
	char *slash = strrchr(dir, '/');
	*slash = 0;
	if (!fast_privdir(dir) || !fast_private(lib, S_IFREG, &st))
		return -1;
	if (st.st_dev != dev || st.st_ino != ino || (unsigned long long)st.st_size != size ||
	    st.st_mtim.tv_sec != sec || st.st_mtim.tv_nsec != nsec)
		return -1;
	return 0;
}

// fast_server: a server accepts connections at path (one connect, no
// handshake: a missing namespace is the shim's to report).
static int fast_server(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return r;
}

// fast_lookpath is exec.LookPath for a name without a slash: the first
// executable regular file in $PATH; relative $PATH entries are Go's to
// judge (exec.ErrDot).
static int fast_lookpath(const char *name, char *out, size_t n)
{
	if (strchr(name, '/')) {
		if (fast_abs(name, out, n) < 0)
			return -1;
	} else {
		const char *path = getenv("PATH");
		if (!path || !*name)
			return -1;
		for (const char *p = path;;) {
			const char *e = strchr(p, ':');
			size_t l = e ? (size_t)(e - p) : strlen(p);
			if (l == 0 || p[0] != '/')
				return -1;
			if (l + 1 + strlen(name) < n) {
				memcpy(out, p, l);
				out[l] = '/';
				strcpy(out + l + 1, name);
				struct stat st;
				if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) &&
				    faccessat(AT_FDCWD, out, X_OK, AT_EACCESS) == 0)
					break;
			}
			if (!e)
				return -1;
			p = e + 1;
		}
		// exec.LookPath returns what it found as is; argv[0] stays
		// the name, as in the Go path
		return 0;
	}
	struct stat st;
	return stat(out, &st) == 0 && S_ISREG(st.st_mode) ? 0 : -1;
}

// fast_attaches is shimAttaches' "yes": a dynamically linked (PT_INTERP)
// ELF64 executable without a .go.buildinfo section, of the shim's class and
// machine, neither set-ID nor with file capabilities (for non-root) — or
// not ELF at all. Anything it cannot read or decide is Go's.
static int fast_attaches(const char *bin, unsigned cls, unsigned mach)
{
	int fd = open(bin, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ok = -1;
	struct stat st;
	Elf64_Ehdr eh;
	ssize_t r = pread(fd, &eh, sizeof(eh), 0);
	if (fstat(fd, &st) < 0 || (st.st_mode & (S_ISUID | S_ISGID)))
		goto out;
	if (geteuid() != 0 && fgetxattr(fd, "security.capability", NULL, 0) >= 0)
		goto out;
	if (r < 4 || memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		ok = r >= 0 ? 0 : -1; // not ELF (#! scripts): execve decides, as in Go
		goto out;
	}
	if (r != sizeof(eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_ident[EI_CLASS] != cls || eh.e_machine != mach || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_phnum == 0 || eh.e_phnum > 256 ||
	    eh.e_shnum > 4096 || eh.e_shstrndx >= eh.e_shnum)
		goto out;
	Elf64_Phdr ph[256];
	if (pread(fd, ph, eh.e_phnum * sizeof(ph[0]), eh.e_phoff) != (ssize_t)(eh.e_phnum * sizeof(ph[0])))
		goto out;
	int interp = 0;
	for (int i = 0; i < eh.e_phnum; i++)
		interp |= ph[i].p_type == PT_INTERP;
	if (!interp)
		goto out;
	if (eh.e_shnum > 0) {
		size_t shsz = eh.e_shnum * sizeof(Elf64_Shdr);
		Elf64_Shdr *sh = malloc(shsz);
		if (!sh)
			goto out;
		if (pread(fd, sh, shsz, eh.e_shoff) != (ssize_t)shsz) {
			free(sh);
			goto out;
		}
		Elf64_Shdr *strs = &sh[eh.e_shstrndx];
		size_t sl = strs->sh_size;
		char *names = sl > 0 && sl < (1 << 20) ? malloc(sl + 1) : NULL;
		if (!names || pread(fd, names, sl, strs->sh_offset) != (ssize_t)sl) {
			free(names);
			free(sh);
			goto out;
		}
		names[sl] = 0;
		int gobin = 0;
		for (int i = 0; i < eh.e_shnum; i++)
			if (sh[i].sh_name < sl && !strcmp(names + sh[i].sh_name, ".go.buildinfo"))
				gobin = 1;
		free(names);
		free(sh);
		if (gobin)
			goto out;
	}
	ok = 0;
out:
	close(fd);
	return ok;
}

// fast_env is execEnv: env without LD_PRELOAD/NLEMU_SOCKET/NLEMU_NETNS,
// then LD_PRELOAD (the shim first, then the caller's others), NLEMU_SOCKET
// and NLEMU_NETNS.
static char **fast_env(char **envp, const char *lib, const char *sock, const char *ns)
{
	size_t n = 0;
	const char *pre = NULL;
	for (char **e = envp; *e; e++) {
		n++;
		if (!strncmp(*e, "LD_PRELOAD=", 11))
			pre = *e + 11;
	}
	char **out = malloc((n + 4) * sizeof(*out));
	size_t pl = strlen(lib) + 12 + (pre ? 2 * strlen(pre) + 2 : 0);
	char *ldp = malloc(pl), *s = malloc(strlen(sock) + 14), *nse = malloc(strlen(ns) + 13);
	if (!out || !ldp || !s || !nse)
		return NULL;
	size_t k = 0;
	for (char **e = envp; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "NLEMU_SOCKET=", 13) &&
		    strncmp(*e, "NLEMU_NETNS=", 12))
			out[k++] = *e;
	char *w = ldp + sprintf(ldp, "LD_PRELOAD=%s", lib);
	if (pre) {
		// the caller's preloads, split on ':' and ' ', without the shim
		const char *p = pre;
		while (*p) {
			size_t l = strcspn(p, ": ");
			if (l > 0 && !(l == strlen(lib) && !strncmp(p, lib, l))) {
				*w++ = ':';
				memcpy(w, p, l);
				w += l;
			}
			p += l;
			if (*p)
				p++;
		}
		*w = 0;
	}
	sprintf(s, "NLEMU_SOCKET=%s", sock);
	sprintf(nse, "NLEMU_NETNS=%s", ns);
	out[k++] = ldp;
	out[k++] = s;
	out[k++] = nse;
	out[k] = NULL;
	return out;
}

// default_dir_bad: the socket is in the default directory under the temp
// dir (os.TempDir()/nlemu-UID) and that directory fails privdir.Check, as
// server.CheckSocketPath would say (a missing one fails the connect).
static int default_dir_bad(const char *sock)
{
	const char *t = getenv("TMPDIR");
	char d[FAST_PATH_MAX];
	if (snprintf(d, sizeof(d), "%s/nlemu-%u", t && *t ? t : "/tmp", (unsigned)getuid()) >= (int)sizeof(d))
		return 1;
	size_t l = strlen(d);
	if (strncmp(sock, d, l) || sock[l] != '/' || strchr(sock + l + 1, '/'))
		return 0;
	struct stat st;
	if (lstat(d, &st) < 0)
		return 0;
	return !fast_privdir(d);
}

__attribute__((constructor)) static void nlemu_exec_fast(int argc, char **argv, char **envp)
{
	if (argc < 3 || strcmp(argv[1], "exec") || !envp)
		return;
	const char *sock = NULL, *ns = "default";
	int i = 2;
	// the flag package's syntax for the flags nlemu exec has: -x or --x,
	// value as the next argument or after '='; "--" ends them, and so
	// does the first argument that is not a flag
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		const char *name = a + 1 + (a[1] == '-');
		const char *eq = strchr(name, '=');
		size_t nl = eq ? (size_t)(eq - name) : strlen(name);
		const char **dst;
		if (nl == 6 && !strncmp(name, "socket", 6))
			dst = &sock;
		else if ((nl == 1 && name[0] == 'n') || (nl == 5 && !strncmp(name, "netns", 5)))
			dst = &ns;
		else
			return; // -h, --seccomp, --preload, unknown: Go's
		if (eq) {
			*dst = eq + 1;
		} else {
			if (i + 1 >= argc)
				return;
			*dst = argv[++i];
		}
	}
	if (i >= argc || !*ns)
		return;
	if (!sock || !*sock) {
		sock = getenv("NLEMU_SOCKET");
		if (!sock || !*sock) {
			// server.DefaultSocketPath
			const char *x = getenv("XDG_RUNTIME_DIR"), *t = getenv("TMPDIR");
			static char def[FAST_PATH_MAX];
			int n = x && *x ? snprintf(def, sizeof(def), "%s/nlemu.sock", x)
					: snprintf(def, sizeof(def), "%s/nlemu-%u/nlemu.sock",
						   t && *t ? t : "/tmp", (unsigned)getuid());
			if (n >= (int)sizeof(def))
				return;
			sock = def;
		}
	}
	static char abs_sock[FAST_PATH_MAX], lib[FAST_PATH_MAX], bin[FAST_PATH_MAX];
	unsigned cls, mach;
	if (fast_abs(sock, abs_sock, sizeof(abs_sock)) < 0 || default_dir_bad(abs_sock))
		return;
	if (fast_lib(lib, sizeof(lib), &cls, &mach) < 0)
		return;
	if (fast_server(abs_sock) < 0)
		return; // Go says why
	if (fast_lookpath(argv[i], bin, sizeof(bin)) < 0 || fast_attaches(bin, cls, mach) < 0)
		return;
	char **env = fast_env(envp, lib, abs_sock, ns);
	if (!env)
		return;
	execve(bin, argv + i, env);
	// execve failed: the Go path reports it
}
*/
import "C"
