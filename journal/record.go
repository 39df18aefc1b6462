package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The record framing (docs/STATE.md): every file — journal or snapshot — is
// a sequence of records, each
//
//	0  uint32 body length (little endian)
//	4  uint32 CRC32C (Castagnoli) of the body
//	8  body: uint64 seq, uint8 kind, uint8 flags, uint16 0, uint64 nsid, payload
//
// A file's records carry consecutive sequence numbers, its first record is
// a header (kindJournal or kindSnapshot) and a snapshot ends with
// kindEnd.

var le = binary.LittleEndian

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record kinds.
const (
	kindNetnsAdd  = 1 // payload: the namespace's 32-byte random seed, then its name
	kindNetnsDel  = 2 // payload: none
	kindRequest   = 3 // payload: the rtnetlink request as received (nlmsg_len bytes)
	kindJournal   = 4 // a journal's first record; payload: uint64 file number
	kindSnapshot  = 5 // a snapshot's first record; payload: covers, next seq, next nsid
	kindEnd       = 6 // a snapshot's last record; payload: uint64 records before it
	kindSeed      = 7 // the default namespace's seed (32 bytes), on the first start
	kindEphemeral = 8 // the namespace lives while it has sockets; payload: none
	kindMax       = kindEphemeral
)

// Record flags.
const (
	flagStrict = 1 // the request came from a NETLINK_GET_STRICT_CHK socket
)

const (
	frameLen = 8                  // length and CRC
	bodyLen  = 20                 // seq, kind, flags, pad, nsid
	hdrLen   = frameLen + bodyLen // everything before the payload
	// maxPayload bounds a record: larger lengths are garbage, not records
	// (a request is at most the server's message size limit, far below).
	maxPayload = 1 << 24
)

// record is one decoded record. Payload aliases the buffer it came from.
type record struct {
	Seq     uint64
	Kind    uint8
	Flags   uint8
	NSID    uint64
	Payload []byte
}

// recordSize is the encoded size of a record with a payload of n bytes.
func recordSize(n int) int { return hdrLen + n }

// appendRecord encodes r at the end of dst.
func appendRecord(dst []byte, r record) []byte {
	start := len(dst)
	dst = le.AppendUint32(dst, uint32(bodyLen+len(r.Payload)))
	dst = le.AppendUint32(dst, 0) // CRC, below
	dst = le.AppendUint64(dst, r.Seq)
	dst = append(dst, r.Kind, r.Flags, 0, 0)
	dst = le.AppendUint64(dst, r.NSID)
	dst = append(dst, r.Payload...)
	le.PutUint32(dst[start+4:], crc32.Checksum(dst[start+frameLen:], castagnoli))
	return dst
}

// putRecord encodes r into dst, which is exactly recordSize(len(r.Payload))
// bytes, as appendRecord does, in the order a store into the journal's
// mapping needs (storeSeg): the length first and the CRC last. The CRC of
// the payload is computed from r.Payload, not read back from dst: read
// back from the mapping right after the copy stored it, it stalled on
// store forwarding (hash/crc32's SSE4.2 loop was 7% of a change's CPU in
// BenchmarkApplyParallel, interval, 512 clients, more than the copy). The
// 20 bytes of the header are read back (a stack array for them escapes
// through hash/crc32's function value: an allocation per record).
func putRecord(dst []byte, r record) {
	dst = dst[:hdrLen+len(r.Payload)]
	le.PutUint32(dst[0:], uint32(bodyLen+len(r.Payload)))
	le.PutUint64(dst[frameLen:], r.Seq)
	dst[frameLen+8], dst[frameLen+9], dst[frameLen+10], dst[frameLen+11] = r.Kind, r.Flags, 0, 0
	le.PutUint64(dst[frameLen+12:], r.NSID)
	crc := crc32.Update(crc32.Update(0, castagnoli, dst[frameLen:hdrLen]), castagnoli, r.Payload)
	copy(dst[hdrLen:], r.Payload)
	le.PutUint32(dst[4:], crc)
}

// errTorn reports a record that is cut short or fails its checksum: the
// end of what a crash left behind, or corruption.
var errTorn = errors.New("torn or corrupt record")

// decodeRecord decodes the record at the start of b and returns it with
// its encoded length. Any record that is incomplete, too short or too long
// to be one, or whose checksum fails, is errTorn.
func decodeRecord(b []byte) (record, int, error) {
	if len(b) < frameLen {
		return record{}, 0, errTorn
	}
	n := int(le.Uint32(b))
	if n < bodyLen || n > bodyLen+maxPayload || len(b)-frameLen < n {
		return record{}, 0, errTorn
	}
	body := b[frameLen : frameLen+n]
	if crc32.Checksum(body, castagnoli) != le.Uint32(b[4:]) {
		return record{}, 0, errTorn
	}
	r := record{
		Seq:     le.Uint64(body),
		Kind:    body[8],
		Flags:   body[9],
		NSID:    le.Uint64(body[12:]),
		Payload: body[bodyLen:],
	}
	if r.Kind < kindNetnsAdd || r.Kind > kindMax || body[10] != 0 || body[11] != 0 {
		return record{}, 0, errTorn
	}
	return r, frameLen + n, nil
}

// scan is the result of reading one file's records.
type scan struct {
	recs []record
	good int // bytes of whole, valid, consecutive records
	// tail is set when bytes other than zeros follow the last good record:
	// a torn or corrupt record (a crash in the middle of a write leaves
	// one). Zeros after it are the room the journal allocated ahead.
	tail bool
	// later counts valid-looking records found after the tail's start:
	// with them the tail is corruption, not a torn write.
	later int
	// holes and holeBytes count the records and bytes scanJournal
	// skipped between valid records.
	holes, holeBytes int
}

// scanRecords decodes b's records until the first one that is torn, corrupt
// or out of sequence (a record must carry the sequence number after its
// predecessor's). A record never straddles that point: either it is whole
// and valid, or it and everything after it is the tail.
func scanRecords(b []byte) scan {
	var s scan
	off := 0
	for off < len(b) {
		r, n, err := decodeRecord(b[off:])
		if err == nil && len(s.recs) > 0 && r.Seq != s.recs[len(s.recs)-1].Seq+1 {
			err = errTorn
		}
		if err != nil {
			s.tail = true
			break
		}
		s.recs = append(s.recs, r)
		off += n
	}
	s.good = off
	if s.tail && allZero(b[off:]) {
		s.tail = false
	}
	if s.tail {
		var last uint64
		if len(s.recs) > 0 {
			last = s.recs[len(s.recs)-1].Seq
		}
		// A record that decodes further on, with a later sequence number,
		// means bytes in the middle went bad: say so instead of dropping
		// it quietly.
		for o := off + 1; o+hdrLen <= len(b); o++ {
			if r, _, err := decodeRecord(b[o:]); err == nil && r.Seq > last {
				s.later++
			}
		}
	}
	return s
}

// maxHoles bounds the records one hole in a journal may stand for.
const maxHoles = 1 << 20

// scanJournal is scanRecords for a journal file, which may hold holes:
// records claimed and being stored, in parallel, when the server died
// (storeSeg), with whole records after them. At a record that does not
// decode, it looks further on for a valid record whose sequence number
// skips at least one (the hole's) and goes on from there; holes and
// holeBytes count what was skipped. A hole is a change that was never
// acknowledged, and no later record is of its namespace (leader.go), so
// the records after it replay as they were applied. A hole's CRC is zero:
// a store writes it last, over the zeros allocated ahead; a bad record
// with a CRC was stored whole and is corruption. Bytes that do not decode
// and are followed by no such record are the tail, as in scanRecords.
func scanJournal(b []byte) scan {
	s := scanRecords(b)
	for s.tail && len(s.recs) > 0 {
		if bad := b[s.good:]; len(bad) >= frameLen && le.Uint32(bad[4:]) != 0 {
			// A store writes the CRC last (appendRecord) over zeros, so a
			// record with one was stored whole and went bad since:
			// corruption, not a hole.
			break
		}
		last := s.recs[len(s.recs)-1].Seq
		found := -1
		for o := s.good + 1; o+hdrLen <= len(b); o++ {
			if r, _, err := decodeRecord(b[o:]); err == nil && r.Seq >= last+2 && r.Seq-last-1 <= maxHoles {
				found = o
				break
			}
		}
		if found < 0 {
			break
		}
		rest := scanRecords(b[found:])
		s.holes += int(rest.recs[0].Seq - last - 1)
		s.holeBytes += found - s.good
		s.recs = append(s.recs, rest.recs...)
		s.good = found + rest.good
		s.tail, s.later = rest.tail, rest.later
	}
	return s
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// snapshotHeader is a snapshot's first record's payload.
type snapshotHeader struct {
	Covers  uint64 // journals numbered below this are in the snapshot
	LastSeq uint64 // the last sequence number before journal Covers
	NextNS  uint64 // the namespace ids below this have been used
}

func (h snapshotHeader) encode() []byte {
	b := le.AppendUint64(nil, h.Covers)
	b = le.AppendUint64(b, h.LastSeq)
	return le.AppendUint64(b, h.NextNS)
}

func decodeSnapshotHeader(p []byte) (snapshotHeader, error) {
	if len(p) != 24 {
		return snapshotHeader{}, fmt.Errorf("snapshot header of %d bytes", len(p))
	}
	return snapshotHeader{le.Uint64(p), le.Uint64(p[8:]), le.Uint64(p[16:])}, nil
}

func u64(p []byte) (uint64, bool) {
	if len(p) != 8 {
		return 0, false
	}
	return le.Uint64(p), true
}
