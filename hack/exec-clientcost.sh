#!/usr/bin/env bash
# exec-clientcost.sh [P] [R]: what one `ip -batch` client costs per rule,
# under the shim against `nlemu serve` and on kernel namespaces, side by
# side in one run (docs/SHIM.md). P parallel clients (default 1), each one
# `ip -4 -batch` of R `rule add from all table i` (default 1024), the
# seed's loop. Per side it prints, per rule: the clients' CPU (perf stat
# task-clock over every process of the loop), context switches and system
# calls (raw_syscalls:sys_enter); with P=1 also `strace -c -f` of one more
# client (every system call by name) on each side. PERF_RECORD=1 adds a
# `perf record -g` of the shim side and where its samples fall (kernel
# send, receive, the switch in the receive, page faults, ip, libc, the
# shim). SHIM=/path/to/libnlemu_preload.so runs the shim side with that
# library instead of the one nlemu exec builds (an older or patched shim,
# side by side). Needs root (kernel namespaces, named KNS_PREFIX<i>,
# default h-exec-cc-, all deleted on exit), perf, go.
set -euo pipefail
P=${1:-1}
R=${2:-1024}
kns=${KNS_PREFIX:-h-exec-cc-}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
srv=""
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null || true
	for i in $(seq "$P"); do ip netns del "$kns$i" 2>/dev/null || true; done
	ip netns del "${kns}s" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
(cd "$root" && go build -o "$tmp/nlemu" ./cmd/nlemu)
export NLEMU_SOCKET=$tmp/nlemu.sock
"$tmp/nlemu" serve --socket "$NLEMU_SOCKET" >"$tmp/serve.log" 2>&1 &
srv=$!
for _ in $(seq 100); do [ -S "$NLEMU_SOCKET" ] && break; sleep 0.05; done
"$tmp/nlemu" exec -- true # builds the shim and the exec fast path's record
F=$tmp/rules.txt
printf 'rule add from all table %d\n' $(seq "$R") >"$F"
for i in $(seq "$P"); do "$tmp/nlemu" netns add "c$i"; ip netns add "$kns$i"; done
"$tmp/nlemu" netns add cs
ip netns add "${kns}s"

# the shim side runs ip as after `eval "$(nlemu env -n NS)"` (no nlemu
# process), so both sides time the same ip binary and nothing else
lib=${SHIM:-$("$tmp/nlemu" env -n c1 | sed -n "s/^export LD_PRELOAD='\(.*\)'$/\1/p")}
shimloop="for i in \$(seq $P); do LD_PRELOAD='$lib' NLEMU_NETNS=c\$i ip -4 -batch '$F' & done; wait"
kernloop="for i in \$(seq $P); do ip -n $kns\$i -4 -batch '$F' & done; wait"
perrule() { # perf stat output -> "cpu_us cs sysc" per rule
	awk -F, -v n=$((P * R)) '
		$3 == "task-clock" {t = $1}
		$3 == "context-switches" {c = $1}
		$3 == "raw_syscalls:sys_enter" {s = $1}
		END {printf "%8.2f %8.3f %8.3f\n", t * 1000 / n, c / n, s / n}'
}
stat() { perf stat -x, -e task-clock,context-switches,raw_syscalls:sys_enter -o "$tmp/stat" -- bash -c "$1"; perrule <"$tmp/stat"; }
echo "$P client(s) x $R rules; per rule:"
printf '%-8s %8s %8s %8s\n' side "cpu us" switches syscalls
printf '%-8s %s\n' shim "$(stat "$shimloop")"
printf '%-8s %s\n' kernel "$(stat "$kernloop")"
if [ "$P" = 1 ]; then
	echo "--- strace -c -f, shim (one more ip -batch)"
	LD_PRELOAD=$lib NLEMU_NETNS=cs strace -c -f -o "$tmp/st.shim" ip -4 -batch "$F"
	sed -n '1,14p' "$tmp/st.shim"
	echo "--- strace -c -f, kernel"
	strace -c -f -o "$tmp/st.kern" ip -n "${kns}s" -4 -batch "$F"
	sed -n '1,14p' "$tmp/st.kern"
fi
if [ "${PERF_RECORD:-0}" = 1 ]; then
	for i in $(seq "$P"); do "$tmp/nlemu" netns del "c$i"; "$tmp/nlemu" netns add "c$i"; done
	perf record -q -F 10000 -g -o "$tmp/perf.data" -- bash -c "$shimloop" 2>/dev/null
	echo "--- where the shim side's ip samples fall (perf record -g)"
	perf script -i "$tmp/perf.data" -F comm,ip,sym,dso 2>/dev/null | awk '
		function flush() {
			if (comm == "ip" && top != "") {
				k = "kernel, other"
				if (top !~ /kernel.kallsyms/) { d = top; sub(/.*\//, "", d); sub(/\)$/, "", d); k = "user " d }
				else if (st ~ / __sys_sendmsg/) k = "kernel sendmsg"
				else if (st ~ / __sys_recvmsg/) k = (st ~ / schedule/) ? "kernel recvmsg: the switch" : "kernel recvmsg"
				else if (st ~ / exc_page_fault/) k = "kernel page faults"
				else if (st ~ /execve|do_exit|exit_mmap|load_elf/) k = "kernel exec, exit"
				c[k]++; n++
			}
			top = ""; st = ""
		}
		/^[^ \t]/ { flush(); comm = $1; next }
		/^[ \t]+[0-9a-f]+ / { if (top == "") top = $0; st = st " " $2; next }
		/^$/ { flush() }
		END { flush(); for (k in c) printf "%6.2f%%  %s\n", 100 * c[k] / n, k; printf "(%d samples)\n", n }' | sort -rn
fi
