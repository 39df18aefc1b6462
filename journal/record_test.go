package journal

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []record{
		{Seq: 1, Kind: kindJournal, Payload: le.AppendUint64(nil, 1)},
		{Seq: 2, Kind: kindNetnsAdd, NSID: 7, Payload: append(make([]byte, 32), "ns-1"...)},
		{Seq: 3, Kind: kindRequest, Flags: flagStrict, NSID: 7, Payload: []byte{20, 0, 0, 0, 32, 0, 5, 6, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0}},
		{Seq: 4, Kind: kindNetnsDel, NSID: 7},
	} {
		b := appendRecord(nil, r)
		if len(b) != recordSize(len(r.Payload)) {
			t.Fatalf("size %d, want %d", len(b), recordSize(len(r.Payload)))
		}
		got, n, err := decodeRecord(b)
		if err != nil || n != len(b) {
			t.Fatalf("decode: %v, %d of %d bytes", err, n, len(b))
		}
		if got.Payload == nil {
			got.Payload = r.Payload
		}
		if diff := cmp.Diff(r, got, cmp.AllowUnexported(record{})); diff != "" && !(len(r.Payload) == 0 && len(got.Payload) == 0) {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	}
}

// TestScanStopsAtOutOfSequenceRecord: a whole record with a good checksum
// but the wrong sequence number (a stale one) ends the file's good part.
func TestScanStopsAtOutOfSequenceRecord(t *testing.T) {
	b := appendRecord(nil, record{Seq: 1, Kind: kindJournal, Payload: le.AppendUint64(nil, 1)})
	good := len(b)
	b = appendRecord(b, record{Seq: 3, Kind: kindNetnsDel, NSID: 1})
	s := scanRecords(b)
	if s.good != good || !s.tail || len(s.recs) != 1 {
		t.Fatalf("scan: good %d tail %v recs %d", s.good, s.tail, len(s.recs))
	}
}

// FuzzScanRecords: any bytes scan without a panic into whole records that
// re-encode to exactly the good prefix.
func FuzzScanRecords(f *testing.F) {
	var seed []byte
	seed = appendRecord(seed, record{Seq: 1, Kind: kindJournal, Payload: le.AppendUint64(nil, 1)})
	seed = appendRecord(seed, record{Seq: 2, Kind: kindNetnsAdd, NSID: 1, Payload: append(make([]byte, 32), 'x')})
	seed = appendRecord(seed, record{Seq: 3, Kind: kindRequest, NSID: 1, Payload: make([]byte, 20)})
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := scanRecords(b)
		if s.good > len(b) || s.tail && allZero(b[s.good:]) || !s.tail && !allZero(b[s.good:]) {
			t.Fatalf("good %d of %d, tail %v", s.good, len(b), s.tail)
		}
		var re []byte
		for _, r := range s.recs {
			re = appendRecord(re, r)
		}
		if !bytes.Equal(re, b[:s.good]) {
			t.Fatal("records do not re-encode to the good prefix")
		}
	})
}

// TestPutRecordIsAppendRecord: putRecord, which stores a record into the
// mapping with its CRC computed from the record's fields, gives the bytes
// appendRecord (the CRC read back from the encoded body) gives, for
// records of every kind, both flags, every payload length up to 300 and
// random contents.
func TestPutRecordIsAppendRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		r := record{Seq: rng.Uint64(), Kind: uint8(1 + n%kindMax), Flags: uint8(n % 2), NSID: rng.Uint64(), Payload: payload}
		want := appendRecord(nil, r)
		got := make([]byte, recordSize(n)+8) // room past the record stays untouched
		putRecord(got, r)
		if diff := cmp.Diff(want, got[:recordSize(n)]); diff != "" {
			t.Fatalf("payload %d bytes (-appendRecord +putRecord):\n%s", n, diff)
		}
		if diff := cmp.Diff(make([]byte, 8), got[recordSize(n):]); diff != "" {
			t.Fatalf("payload %d bytes: putRecord wrote past the record:\n%s", n, diff)
		}
	}
}

// TestPutRecordAllocatesNothing: a store into the mapping allocates
// nothing (a stack array for the header's CRC escaped through hash/crc32:
// an allocation per change).
func TestPutRecordAllocatesNothing(t *testing.T) {
	r := record{Seq: 7, Kind: kindRequest, Flags: flagStrict, NSID: 3, Payload: make([]byte, 36)}
	dst := make([]byte, recordSize(len(r.Payload)))
	if n := testing.AllocsPerRun(100, func() { putRecord(dst, r) }); n != 0 {
		t.Fatalf("putRecord: %v allocations per record, want 0", n)
	}
}
