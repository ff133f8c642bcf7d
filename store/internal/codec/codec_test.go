package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/strandhq/strand/store"
)

func TestCompressRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   []byte
		always bool
		format byte
	}{
		{"empty", nil, false, formatRaw},
		{"small stays raw", []byte("hello"), false, formatRaw},
		{"small forced", []byte("hello"), true, formatZstd},
		{"large compressible", bytes.Repeat([]byte("strand "), 10000), false, formatZstd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blob := Compress(tc.data, tc.always)
			if blob[0] != tc.format {
				t.Fatalf("format byte %d, want %d", blob[0], tc.format)
			}
			got, err := Decompress(blob)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("round trip changed %d bytes into %d", len(tc.data), len(got))
			}
		})
	}
	for _, bad := range [][]byte{nil, {9, 1, 2}, {formatZstd, 1, 2, 3}} {
		if _, err := Decompress(bad); err == nil {
			t.Errorf("Decompress(%v) succeeded", bad)
		}
	}
}

func TestDecodeExecutionDetectsCorruption(t *testing.T) {
	key := store.RunKey{Namespace: "ns", WorkflowID: "wf", RunID: "r1"}
	e := &store.Execution{RunKey: key, State: store.StateRunning, Status: store.StatusRunning, NextEventID: 5, DBVersion: 2,
		Info: store.RunInfo{Type: "order", BusinessKey: strings.Repeat("k", 5000)}}
	enc, err := EncodeExecution(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeExecution(enc.Blob, enc.Checksum, key, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Info.Type != "order" || got.NextEventID != 5 {
		t.Fatalf("decoded %+v", got)
	}
	cases := map[string]func() error{
		"wrong checksum": func() error { _, err := DecodeExecution(enc.Blob, enc.Checksum^1, key, 5, 2); return err },
		"flipped byte": func() error {
			b := bytes.Clone(enc.Blob)
			b[len(b)/2] ^= 0xff
			_, err := DecodeExecution(b, enc.Checksum, key, 5, 2)
			return err
		},
		"columns disagree": func() error { _, err := DecodeExecution(enc.Blob, enc.Checksum, key, 6, 2); return err },
		"other run": func() error {
			_, err := DecodeExecution(enc.Blob, enc.Checksum, store.RunKey{Namespace: "ns", WorkflowID: "wf", RunID: "r2"}, 5, 2)
			return err
		},
	}
	for name, f := range cases {
		if err := f(); !errors.Is(err, store.ErrChecksumMismatch) {
			t.Errorf("%s: got %v, want ErrChecksumMismatch", name, err)
		}
	}
}

func TestPageTokens(t *testing.T) {
	type cursor struct{ After int64 }
	tok := EncodeToken("runs", cursor{After: 42})
	var c cursor
	if err := DecodeToken(tok, "runs", &c); err != nil || c.After != 42 {
		t.Fatalf("decode: %v %+v", err, c)
	}
	flipped := bytes.Clone(tok)
	flipped[len(flipped)/2] ^= 1
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"short":     {1, 2, 3},
		"tampered":  flipped,
		"truncated": tok[:len(tok)-1],
	} {
		if err := DecodeToken(bad, "runs", &c); !errors.Is(err, store.ErrInvalidPageToken) {
			t.Errorf("%s: got %v, want ErrInvalidPageToken", name, err)
		}
	}
	if err := DecodeToken(tok, "hist", &c); !errors.Is(err, store.ErrInvalidPageToken) {
		t.Errorf("token of another kind: got %v", err)
	}
}
