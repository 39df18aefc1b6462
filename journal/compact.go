package journal

import (
	"errors"
	"fmt"
	"io/fs"
)

// compactor writes snapshots in the background, as the committer asks.
func (j *Journal) compactor() {
	defer close(j.compactEnd)
	for covers := range j.compactCh {
		if err := j.compact(covers); err != nil {
			// Nothing is lost: the journals stay, and the next rotation
			// tries again.
			j.opt.Logf("journal: compaction: %v", err)
		}
	}
}

// compact folds the snapshot and the closed journals numbered below covers
// into a new snapshot: their records in order, less those of the
// namespaces deleted by then (the add, every request, the delete), with
// the rule-only histories of live namespaces rewritten as the requests
// that rebuild their rules (rewriteRuleHistories). It is
// written to a temporary file, synced, renamed over the old snapshot and
// the directory synced; only then are the journals removed. A crash at any
// point leaves either the old snapshot and every journal, or the new
// snapshot (restore removes the journals it covers).
func (j *Journal) compact(covers uint64) error {
	start := uint64(1)
	var h snapshotHeader
	var body []record
	data, err := j.fs.ReadFile(snapName)
	switch {
	case err == nil:
		var recs []record
		if h, recs, err = readSnapshot(data); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		start = h.Covers
		body = recs
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	nums, err := journals(j.fs)
	if err != nil {
		return err
	}
	var folded []uint64
	var foldedBytes int64
	lastSeq, nextNS := h.LastSeq, h.NextNS
	for _, n := range nums {
		if n < start || n >= covers {
			continue
		}
		if len(folded) > 0 && n != folded[len(folded)-1]+1 || len(folded) == 0 && n != start {
			return fmt.Errorf("%s is missing", journalName(n-1))
		}
		d, err := j.fs.ReadFile(journalName(n))
		if err != nil {
			return err
		}
		sc := scanJournal(d) // a restore may have left holes in it
		if sc.tail || len(sc.recs) == 0 || sc.recs[0].Kind != kindJournal {
			return fmt.Errorf("%s is corrupt at byte %d", journalName(n), sc.good)
		}
		body = append(body, sc.recs[1:]...)
		lastSeq = sc.recs[len(sc.recs)-1].Seq
		folded = append(folded, n)
		// What rotate counted: its records, not the room allocated after them
		// (counting the file size made closedBytes negative, and compaction
		// stopped).
		foldedBytes += int64(sc.good)
	}
	if len(folded) == 0 {
		return nil
	}
	deleted := map[uint64]bool{}
	for _, r := range body {
		switch r.Kind {
		case kindNetnsDel:
			deleted[r.NSID] = true
		case kindNetnsAdd:
			nextNS = max(nextNS, r.NSID+1)
		}
	}
	hdr := snapshotHeader{Covers: covers, LastSeq: lastSeq, NextNS: nextNS}
	out := appendRecord(nil, record{Seq: 1, Kind: kindSnapshot, Payload: hdr.encode()})
	kept := body[:0]
	for _, r := range body {
		if !deleted[r.NSID] {
			kept = append(kept, r)
		}
	}
	kept, rewrites := rewriteRuleHistories(kept)
	seq := uint64(1)
	for _, r := range kept {
		seq++
		r.Seq = seq
		out = appendRecord(out, r)
	}
	out = appendRecord(out, record{Seq: seq + 1, Kind: kindEnd, Payload: le.AppendUint64(nil, seq-1)})
	if err := j.writeSnapshot(out); err != nil {
		return err
	}
	for _, n := range folded {
		if err := j.fs.Remove(journalName(n)); err != nil {
			return err
		}
	}
	if err := j.fs.SyncDir(); err != nil {
		return err
	}
	j.mu.Lock()
	j.snapBytes = int64(len(out))
	j.closedBytes -= foldedBytes
	j.stats.Compactions++
	j.stats.Rewrites += uint64(rewrites)
	j.mu.Unlock()
	return nil
}

func (j *Journal) writeSnapshot(b []byte) error {
	if err := j.fs.Remove(snapTmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := j.fs.Create(snapTmp)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = j.fs.Rename(snapTmp, snapName)
	}
	if err == nil {
		err = j.fs.SyncDir()
	}
	if err != nil {
		j.fs.Remove(snapTmp)
	}
	return err
}
