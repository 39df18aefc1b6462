#!/usr/bin/env python3
"""trace-moves.py PARSED [STACK-WORD]: count a test's goroutine moves between OS threads.

PARSED is `go tool trace -d=parsed TRACE` of a test binary run with
-test.trace (hack/peer-suite.sh -trace makes both). The goroutines counted
are those whose own stack, at one of their state transitions, mentions
STACK-WORD (default rule_test.go: TestRuleListFiltered's and the other rule
tests' goroutines). A move is a goroutine starting to run on another M (OS
thread) than the one it last ran on: for a test whose goroutines are not
locked to their thread, a move is a move to another network namespace
(docs/PEER-SUITE.md). Moves are counted by how the goroutine left its last
thread; a goroutine woken from a wait is further told apart by whether it
resumed on the thread that woke it (it followed its waker, as t.Run's
parent follows its subtest) or on another (another P's thread took it from
the waker's run queue: runqsteal of runnext, or the global queue).
"""
import collections
import re
import sys

EV = re.compile(r'^M=(-?\d+) P=(-?\d+) G=(-?\d+) StateTransition Time=(\d+) '
                r'GoID=(\d+) (\w+)->(\w+) Reason="([^"]*)"')


def events(path):
    """Yields (M, G running, goroutine, from, to, reason, stack text)."""
    cur, stack = None, []
    with open(path) as f:
        for ln in f:
            if ln.startswith('M='):
                if cur:
                    yield cur + ('\n'.join(stack),)
                m = EV.match(ln)
                cur = None
                stack = []
                if m:
                    M, _, G, _, g, fr, to, why = m.groups()
                    cur = (int(M), int(G), int(g), fr, to, why)
            elif cur:
                stack.append(ln)
    if cur:
        yield cur + ('\n'.join(stack),)


def main():
    path = sys.argv[1]
    word = sys.argv[2] if len(sys.argv) > 2 else 'rule_test.go'
    interest = set()
    for M, G, g, fr, to, why, st in events(path):
        if G == g and word in st:
            interest.add(g)
    last_m, left, waker = {}, {}, {}
    moves, resumes = collections.Counter(), collections.Counter()
    for M, G, g, fr, to, why, st in events(path):
        if g not in interest:
            continue
        if fr == 'Waiting' and to == 'Runnable':
            waker[g] = M
        if to == 'Running':
            how = left.get(g, 'created')
            if how.startswith('wait'):
                how += ', resumed on its waker\'s thread' if waker.get(g) == M else ', resumed elsewhere'
            resumes[how] += 1
            if g in last_m and last_m[g] != M and M >= 0:
                moves[how] += 1
            last_m[g] = M
        elif fr == 'Running' and to == 'Syscall':
            left[g] = 'system call (kept its P)'
        elif fr == 'Syscall' and to == 'Runnable':
            left[g] = 'system call that lost its P'
        elif fr == 'Running' and to == 'Runnable':
            left[g] = 'preempted (%s)' % (why or 'runnable')
        elif fr == 'Running' and to == 'Waiting':
            left[g] = 'wait: ' + (why or '?')
    print('goroutines whose stacks mention %s: %d' % (word, len(interest)))
    print('moves to another OS thread, by how the goroutine had left its thread:')
    for how, n in sorted(moves.items(), key=lambda kv: -kv[1]):
        print('  %-60s %5d of %d' % (how, n, resumes[how]))
    print('  %-60s %5d' % ('total', sum(moves.values())))


if __name__ == '__main__':
    main()
