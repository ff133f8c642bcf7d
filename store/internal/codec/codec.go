// Package codec holds the encodings every backend shares: compression of
// blobs, the encoded form of a run's state with its checksum, and page tokens.
// Keeping them here makes a row written by one backend read the same way in
// another, and keeps checksums comparable.
package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/strandhq/strand/store"
)

// Blob formats: the first byte of every stored blob.
const (
	formatRaw  byte = 0
	formatZstd byte = 1
)

// compressAbove is the size from which Compress tries zstd for a blob that
// may be small; below it the CPU and the frame overhead rarely pay (a
// small run state or history block is stored raw).
const compressAbove = 1024

var (
	encOnce sync.Once
	enc     *zstd.Encoder
	dec     *zstd.Decoder
)

func coders() (*zstd.Encoder, *zstd.Decoder) {
	encOnce.Do(func() {
		var err error
		// Both are safe for concurrent EncodeAll/DecodeAll.
		enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
		if err != nil {
			panic(err)
		}
		dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			panic(err)
		}
	})
	return enc, dec
}

// Compress returns data framed with its format byte: zstd when always is set
// or the data is large enough and compression shrinks it, raw otherwise.
func Compress(data []byte, always bool) []byte {
	if always || len(data) >= compressAbove {
		e, _ := coders()
		out := e.EncodeAll(data, []byte{formatZstd})
		if always || len(out) < len(data)+1 {
			return out
		}
	}
	out := make([]byte, 0, len(data)+1)
	out = append(out, formatRaw)
	return append(out, data...)
}

// Decompress reverses Compress.
func Decompress(blob []byte) ([]byte, error) {
	if len(blob) == 0 {
		return nil, errors.New("codec: empty blob")
	}
	switch blob[0] {
	case formatRaw:
		// A copy: drivers may reuse the buffer a blob was read into (gocql
		// does, across the rows of one page).
		return bytes.Clone(blob[1:]), nil
	case formatZstd:
		_, d := coders()
		out, err := d.DecodeAll(blob[1:], nil)
		if err != nil {
			return nil, fmt.Errorf("codec: zstd: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("codec: unknown blob format %d", blob[0])
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodedExecution is the stored form of a run's state.
type EncodedExecution struct {
	Blob []byte
	// Checksum is the CRC-32C of the uncompressed encoding.
	Checksum int64
	// Size is the size of the uncompressed encoding, which the payload limit
	// applies to.
	Size int
}

// EncodeExecution returns the stored form of a run's state.
func EncodeExecution(e *store.Execution) (EncodedExecution, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return EncodedExecution{}, fmt.Errorf("codec: encode execution %s: %w", e.RunKey, err)
	}
	return EncodedExecution{Blob: Compress(raw, false), Checksum: int64(crc32.Checksum(raw, castagnoli)), Size: len(raw)}, nil
}

// EncodeRuns encodes the state of every run of a batch, refusing a state
// above the payload limit.
func EncodeRuns(b *store.Batch, l store.Limits) ([]EncodedExecution, error) {
	out := make([]EncodedExecution, len(b.Runs))
	for i, w := range b.Runs {
		enc, err := EncodeExecution(w.Execution)
		if err != nil {
			return nil, err
		}
		if enc.Size > l.MaxPayload {
			return nil, store.PayloadTooLarge(fmt.Sprintf("runs[%d].execution", i), enc.Size, l.MaxPayload)
		}
		out[i] = enc
	}
	return out, nil
}

// DecodeExecution decodes a run's state and verifies it against its checksum
// and against the columns the backend stores beside it; any mismatch is
// store.ErrChecksumMismatch.
func DecodeExecution(blob []byte, checksum int64, key store.RunKey, nextEventID, dbVersion int64) (*store.Execution, error) {
	raw, err := Decompress(blob)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrChecksumMismatch, key, err)
	}
	if got := int64(crc32.Checksum(raw, castagnoli)); got != checksum {
		return nil, fmt.Errorf("%w: %s: stored %08x, computed %08x", store.ErrChecksumMismatch, key, checksum, got)
	}
	var e store.Execution
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrChecksumMismatch, key, err)
	}
	if e.RunKey != key || e.NextEventID != nextEventID || e.DBVersion != dbVersion {
		return nil, fmt.Errorf("%w: %s: state says %s next_event_id %d db_version %d, row says next_event_id %d db_version %d",
			store.ErrChecksumMismatch, key, e.RunKey, e.NextEventID, e.DBVersion, nextEventID, dbVersion)
	}
	return &e, nil
}

// Marshal encodes a small value stored as a blob (shard ack levels, maps).
func Marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only called with plain data types that always encode.
		panic(fmt.Sprintf("codec: marshal %T: %v", v, err))
	}
	return b
}

// Unmarshal decodes what Marshal encoded.
func Unmarshal(b []byte, v any) error {
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, v)
}

// EncodeToken encodes a page cursor: a kind tag so that a token of one query
// is refused by another, the cursor as JSON, and a CRC-32C trailer.
func EncodeToken(kind string, cursor any) []byte {
	var buf bytes.Buffer
	buf.WriteByte(byte(len(kind)))
	buf.WriteString(kind)
	buf.Write(Marshal(cursor))
	sum := crc32.Checksum(buf.Bytes(), castagnoli)
	return binary.BigEndian.AppendUint32(buf.Bytes(), sum)
}

// DecodeToken decodes a token made by EncodeToken for the same kind; any
// other input is store.ErrInvalidPageToken.
func DecodeToken(token []byte, kind string, cursor any) error {
	n := len(token)
	if n < 5 || int(token[0]) != len(kind) || n < 1+len(kind)+4 {
		return store.InvalidPageToken(errors.New("malformed"))
	}
	body, sum := token[:n-4], binary.BigEndian.Uint32(token[n-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return store.InvalidPageToken(errors.New("checksum"))
	}
	if string(body[1:1+len(kind)]) != kind {
		return store.InvalidPageToken(errors.New("token of another query"))
	}
	if err := json.Unmarshal(body[1+len(kind):], cursor); err != nil {
		return store.InvalidPageToken(err)
	}
	return nil
}

// historyCursor is where the next page of history starts.
type historyCursor struct {
	Next int64 `json:"next"`
}

// EncodeHistoryToken returns the token of a history page that starts at the
// block whose first event id is next.
func EncodeHistoryToken(next int64) []byte {
	return EncodeToken("history", historyCursor{Next: next})
}

// DecodeHistoryToken returns the first event id a history token names; 0
// for no token.
func DecodeHistoryToken(token []byte) (int64, error) {
	var c historyCursor
	if len(token) == 0 {
		return 0, nil
	}
	err := DecodeToken(token, "history", &c)
	return c.Next, err
}

// EncodeTaskToken returns the token of a task page that starts at key k.
func EncodeTaskToken(k store.TaskKey) []byte { return EncodeToken("tasks", k) }

// DecodeTaskToken sets *k to the key a task token names; with no token it
// leaves *k as it is (the range's own minimum).
func DecodeTaskToken(token []byte, k *store.TaskKey) error {
	if len(token) == 0 {
		return nil
	}
	return DecodeToken(token, "tasks", k)
}

// AuditCursor is the position after a page of the audit log, the last
// entry listed: every backend's page token of ListAudit.
type AuditCursor struct {
	Time int64  `json:"time"`
	ID   string `json:"id"`
}

// CeilMilli is t in milliseconds, rounded up: the stored times (at
// store.Precision) before t are those before CeilMilli(t).
func CeilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}
