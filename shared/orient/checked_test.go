package orient

import (
	"bytes"
	"encoding/json"
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
