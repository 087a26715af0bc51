package orient

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

// A packet body seen before passes without its digest being recomputed; any
// other body (one byte changed, a digest that does not match) is checked in
// full, before and after the good one was seen.
func TestPacketCheckedOnce(t *testing.T) {
	p := ora.OrientationPacket{ID: "pk-1", WaveID: "s-checked", ProfileID: "default", ProfileVersion: 1, TokenBudget: 100, TokenUsed: 7}
	d, err := PacketDigest(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Digest = d
	good, _ := json.Marshal(p)
	bad := bytes.Replace(good, []byte(`"token_used":7`), []byte(`"token_used":8`), 1)
	if bytes.Equal(good, bad) {
		t.Fatal("the tampered body is the good one")
	}
	entry := func(body []byte) []ora.Entry {
		return []ora.Entry{{SignalID: "s-checked", Kind: ora.KindOrientationPacket, Body: body}}
	}
	if packetChecked(good) {
		t.Fatal("a body never seen counts as checked")
	}
	if _, err := Packet(entry(bad)); ora.ErrorCode(err) != ora.EINVALID {
		t.Fatalf("tampered packet: err %v, want EINVALID", err)
	}
	if got, err := Packet(entry(good)); err != nil || got.TokenUsed != 7 {
		t.Fatalf("good packet: %+v, %v", got, err)
	}
	if !packetChecked(good) {
		t.Error("a checked body is not remembered")
	}
	if packetChecked(bad) {
		t.Error("a body that failed its check is remembered")
	}
	if _, err := Packet(entry(bad)); ora.ErrorCode(err) != ora.EINVALID {
		t.Fatalf("tampered packet after the good one: err %v, want EINVALID", err)
	}
	if got, err := Packet(entry(good)); err != nil || got.ID != "pk-1" {
		t.Fatalf("good packet again: %+v, %v", got, err)
	}
}

// A packet kept by the compile step is what the reason step's read gives,
// and its encoding is the body it is kept under; the packets kept are
// bounded by their bodies' bytes, oldest out first.
func TestRecentPacketsKept(t *testing.T) {
	packet := func(i int) (ora.OrientationPacket, []byte) {
		p := ora.OrientationPacket{ID: fmt.Sprintf("pk-kept-%d", i), WaveID: "s-kept", ProfileID: "default", ProfileVersion: 1,
			Bands: []ora.PacketBand{{Facts: []ora.Fact{{ID: "f", Normalized: json.RawMessage(`"` + strings.Repeat("z", 1<<20) + `"`)}}}}}
		d, err := PacketDigest(p)
		if err != nil {
			t.Fatal(err)
		}
		p.Digest = d
		body, err := encodePacket(&p)
		if err != nil {
			t.Fatal(err)
		}
		return p, body
	}
	p0, body0 := packet(0)
	keepPacket(sha256.Sum256(body0), len(body0), &p0)
	if _, _, kept := lookupPacket(body0); kept == nil || kept.ID != p0.ID {
		t.Fatalf("the packet just kept is not kept: %v", kept)
	}
	got, err := Packet([]ora.Entry{{SignalID: "s-kept", Kind: ora.KindOrientationPacket, Body: body0}})
	if err != nil {
		t.Fatal(err)
	}
	if enc, _ := json.Marshal(got); !bytes.Equal(enc, body0) {
		t.Fatal("the kept packet does not encode to its body")
	}
	n := recentPacketBytes/len(body0) + 2
	for i := 1; i <= n; i++ {
		p, body := packet(i)
		keepPacket(sha256.Sum256(body), len(body), &p)
	}
	recentPackets.mu.Lock()
	total, kept := recentPackets.bytes, len(recentPackets.m)
	recentPackets.mu.Unlock()
	if total > recentPacketBytes || kept == 0 || kept >= n {
		t.Fatalf("%d packets kept in %d bytes after %d, want at most %d bytes", kept, total, n+1, recentPacketBytes)
	}
	if seen, checked, k := lookupPacket(body0); !checked || k != nil {
		t.Fatalf("the oldest packet: checked %v, kept %v (%x), want checked and no longer kept", checked, k != nil, seen[:4])
	}
}

// validJSON remembers only bodies found valid: an invalid one is refused
// every time, before and after a valid one of the same length was seen.
func TestValidJSONRemembersOnlyValid(t *testing.T) {
	good := []byte(`{"m":"` + strings.Repeat("v", 80) + `"}`)
	bad := []byte(`{"m":"` + strings.Repeat("v", 80) + `"`)
	for i := range 2 {
		if validJSON(bad) {
			t.Fatalf("pass %d: an invalid body counts as valid", i)
		}
		if !validJSON(good) {
			t.Fatalf("pass %d: a valid body counts as invalid", i)
		}
	}
	validBodies.Lock()
	_, remembered := validBodies.m[sha256.Sum256(good)]
	validBodies.Unlock()
	if !remembered {
		t.Error("the valid body is not remembered")
	}
}
