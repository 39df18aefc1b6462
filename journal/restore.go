package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/nlemu/nlemu/nsmgr"
	"github.com/nlemu/nlemu/rtnl"
)

// Restored reports what Open found in the state directory.
type Restored struct {
	Snapshot   bool  // a snapshot was read
	Journals   int   // journal files replayed
	Records    int   // records replayed (snapshot and journals)
	Namespaces int   // namespaces restored, the default one included
	TornBytes  int64 // bytes cut from the last journal's torn tail
	// Holes counts the records skipped between valid ones: changes being
	// stored in parallel when the server died, never acknowledged
	// (scanJournal).
	Holes int
	// Failed counts records whose replay failed (each is logged): zero
	// unless the handlers changed between runs, or the state was edited.
	Failed int

	seeded    bool     // the default namespace's seed was replayed
	ephemeral []string // ephemeral namespaces restored, for Open to delete
}

func mkdirPrivate(dir string) error { return os.MkdirAll(dir, 0o700) }

// replayer applies records to the manager.
type replayer struct {
	j    *Journal
	byID map[uint64]*nsmgr.Namespace
	eph  map[uint64]bool // namespaces marked ephemeral
	rs   *Restored
}

func (p *replayer) fail(r record, format string, args ...any) {
	p.rs.Failed++
	p.j.opt.Logf("journal: record %d (namespace id %d) not replayed: %s", r.Seq, r.NSID, fmt.Sprintf(format, args...))
}

func (p *replayer) replay(r record) {
	p.rs.Records++
	mgr := p.j.mgr
	switch r.Kind {
	case kindSeed:
		ns, ok := p.byID[r.NSID]
		if !ok || len(r.Payload) != 32 {
			p.fail(r, "bad seed")
			return
		}
		ns.Seed([32]byte(r.Payload))
		p.rs.seeded = p.rs.seeded || r.NSID == 0
	case kindNetnsAdd:
		if len(r.Payload) < 32 {
			p.fail(r, "netns add without a seed")
			return
		}
		name := string(r.Payload[32:])
		if err := mgr.Add(name); err != nil {
			p.fail(r, "netns add %q: %v", name, err)
			return
		}
		ns, _ := mgr.Get(name)
		ns.Seed([32]byte(r.Payload[:32]))
		p.byID[r.NSID] = ns
		p.j.nextNS = max(p.j.nextNS, r.NSID+1)
	case kindEphemeral:
		if _, ok := p.byID[r.NSID]; !ok || r.NSID == 0 {
			p.fail(r, "ephemeral mark of an unknown namespace")
			return
		}
		p.eph[r.NSID] = true
	case kindNetnsDel:
		delete(p.eph, r.NSID)
		ns, ok := p.byID[r.NSID]
		if !ok {
			p.fail(r, "netns del of an unknown namespace")
			return
		}
		if err := mgr.Del(ns.Name()); err != nil {
			p.fail(r, "netns del %q: %v", ns.Name(), err)
		}
		delete(p.byID, r.NSID)
	case kindRequest:
		ns, ok := p.byID[r.NSID]
		if !ok {
			p.fail(r, "request for an unknown namespace")
			return
		}
		msgs := rtnl.SplitDatagram(r.Payload)
		if len(msgs) != 1 || int(msgs[0].Header.Length) != len(r.Payload) {
			p.fail(r, "not one netlink message")
			return
		}
		// The same handler as the request's first time, with the socket
		// option that shaped it; no socket hears the echo or the
		// notifications, as none is connected yet.
		_, err := ns.Do(&nsmgr.Request{Msg: &msgs[0], Strict: r.Flags&flagStrict != 0})
		if err != nil && err.Errno != 0 {
			p.fail(r, "type %d: %v", msgs[0].Header.Type, err.Errno)
		}
	default:
		p.fail(r, "unexpected kind %d", r.Kind)
	}
}

// readSnapshot checks a snapshot file: whole (it is renamed into place
// only after its fsync, so a tail is corruption, never a crash), header
// first, end record last with the count of the records between.
func readSnapshot(data []byte) (snapshotHeader, []record, error) {
	sc := scanRecords(data)
	if sc.tail {
		return snapshotHeader{}, nil, fmt.Errorf("corrupt at byte %d", sc.good)
	}
	n := len(sc.recs)
	if n < 2 || sc.recs[0].Kind != kindSnapshot || sc.recs[n-1].Kind != kindEnd {
		return snapshotHeader{}, nil, errors.New("no header or no end record")
	}
	if c, ok := u64(sc.recs[n-1].Payload); !ok || c != uint64(n-2) {
		return snapshotHeader{}, nil, errors.New("end record does not match")
	}
	h, err := decodeSnapshotHeader(sc.recs[0].Payload)
	return h, sc.recs[1 : n-1], err
}

// restore replays the snapshot and the journals into the manager and opens
// the last journal (or a new one) for appending.
func (j *Journal) restore() (*Restored, error) {
	rs := &Restored{}
	def, _ := j.mgr.Get(nsmgr.DefaultName)
	p := &replayer{j: j, byID: map[uint64]*nsmgr.Namespace{0: def}, eph: map[uint64]bool{}, rs: rs}
	if err := j.fs.Remove(snapTmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	covers, lastSeq := uint64(1), uint64(0)
	data, err := j.fs.ReadFile(snapName)
	switch {
	case err == nil:
		h, recs, err := readSnapshot(data)
		if err != nil {
			return nil, fmt.Errorf("state snapshot: %w", err)
		}
		rs.Snapshot = true
		covers, lastSeq = h.Covers, h.LastSeq
		j.nextNS = max(j.nextNS, h.NextNS)
		for _, r := range recs {
			p.replay(r)
		}
		j.snapBytes = int64(len(data))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	nums, err := journals(j.fs)
	if err != nil {
		return nil, err
	}
	var live []uint64
	for _, n := range nums {
		if n < covers {
			// Compacted into the snapshot; a crash came before their
			// removal.
			if err := j.fs.Remove(journalName(n)); err != nil {
				return nil, err
			}
			continue
		}
		live = append(live, n)
	}
	if k := len(live); k > 0 {
		// A crash while rotate() or startFile() wrote the last file's
		// header leaves it without a record: nothing was recorded in it.
		// Go on with the one before it, or start it again.
		data, err := j.fs.ReadFile(journalName(live[k-1]))
		if err != nil {
			return nil, err
		}
		if len(scanRecords(data).recs) == 0 {
			if err := j.fs.Remove(journalName(live[k-1])); err != nil {
				return nil, err
			}
			live = live[:k-1]
		}
	}
	var good, size int64
	for i := 0; i < len(live); i++ {
		n := live[i]
		if n != covers+uint64(i) {
			return nil, fmt.Errorf("state: %s is missing", journalName(covers+uint64(i)))
		}
		last := i == len(live)-1
		data, err := j.fs.ReadFile(journalName(n))
		if err != nil {
			return nil, err
		}
		sc := scanJournal(data)
		if len(sc.recs) == 0 || sc.recs[0].Kind != kindJournal || sc.recs[0].Seq != lastSeq {
			return nil, fmt.Errorf("state: %s has no valid header", journalName(n))
		}
		if num, ok := u64(sc.recs[0].Payload); !ok || num != n {
			return nil, fmt.Errorf("state: %s has the header of another file", journalName(n))
		}
		if sc.holes > 0 {
			rs.Holes += sc.holes
			j.opt.Logf("journal: skipped %d record(s) (%d bytes) in %s that were being stored when the server died (never acknowledged)", sc.holes, sc.holeBytes, journalName(n))
		}
		if sc.tail {
			if !last {
				// Only the last file is ever written unsynced.
				return nil, fmt.Errorf("state: %s is corrupt at byte %d", journalName(n), sc.good)
			}
			rs.TornBytes = int64(len(data) - sc.good)
			j.opt.Logf("journal: cut a torn tail of %d bytes from %s", rs.TornBytes, journalName(n))
			if sc.later > 0 {
				j.opt.Logf("journal: %d record(s) after the torn tail were dropped too: never acknowledged after a crash, or corruption", sc.later)
			}
		}
		for _, r := range sc.recs[1:] {
			p.replay(r)
		}
		lastSeq = sc.recs[len(sc.recs)-1].Seq
		rs.Journals++
		if last {
			good, size = int64(sc.good), int64(len(data))
		} else {
			j.closedBytes += int64(len(data))
		}
	}
	j.seq, j.lastWritten = lastSeq, lastSeq
	for id, ns := range p.byID {
		j.ents.Store(ns, &entry{id: id, j: j})
		j.nextNS = max(j.nextNS, id+1)
	}
	for id := range p.eph {
		rs.ephemeral = append(rs.ephemeral, p.byID[id].Name())
	}
	sort.Strings(rs.ephemeral)
	rs.Namespaces = len(p.byID) - len(p.eph)
	if len(live) == 0 {
		if err := j.startFile(covers); err != nil {
			return nil, err
		}
		return rs, nil
	}
	n := live[len(live)-1]
	f, err := j.fs.OpenAppend(journalName(n))
	if err != nil {
		return nil, err
	}
	if rs.TornBytes > 0 {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
	}
	j.cur, j.curNum, j.written, j.used, j.alloc = f, n, good, good, good
	if err := j.openLanes(n); err != nil {
		return nil, err
	}
	if rs.TornBytes == 0 {
		j.alloc = size // zeros allocated ahead
	} else if j.allocate(f, good, j.opt.allocChunk) == nil {
		j.alloc += j.opt.allocChunk
	}
	if j.closedBytes > 0 && j.closedBytes >= j.snapBytes {
		j.compactCh <- n
	}
	return rs, nil
}

// startFile creates journal n, empty but for its header, as the current
// file.
func (j *Journal) startFile(n uint64) error {
	name := journalName(n)
	f, err := j.fs.Create(name)
	if err != nil {
		return err
	}
	hdr := appendRecord(nil, record{Seq: j.lastWritten, Kind: kindJournal, Payload: le.AppendUint64(nil, n)})
	if _, err := f.WriteAt(hdr, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := j.fs.SyncDir(); err != nil {
		f.Close()
		return err
	}
	j.cur, j.curNum = f, n
	j.written, j.used, j.alloc = int64(len(hdr)), int64(len(hdr)), int64(len(hdr))
	if err := j.openLanes(n); err != nil {
		return err
	}
	if j.allocate(f, j.alloc, j.opt.allocChunk) == nil {
		j.alloc += j.opt.allocChunk
	}
	return nil
}
