package dynamo

import (
	"bytes"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/dynamo/dynamotest"
	"github.com/ora-runtime/ora/shared/ora"
)

// Execution evidence as a wave writes it (about 750 bytes).
const evidenceBody = `{"id":"dec-01JD7Q3M8X4K2N5P6R7S8T9V0W","signal_id":"gh-7f3a9c2e-5b1d-4e8f-a6c3-2d9e8b7f1a4c","author_type":"executor","action":{"type":"github.label","parameters":{"repository":"acme/widgets","issue":4812,"labels":["bug","needs-triage"]}},"confidence":0.97,"rationale":"The issue reports a crash with a stack trace on the 2.3 release and no existing label; the triage profile labels crash reports as bug and needs-triage.","packet_digest":"sha256:4b0f3c6a1e9d2f8b7a5c4e3d2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a","view_digest":"sha256:9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a4b0f3c6a1e9d2f8b7a5c4e3d2b1a0f","stage":1,"stages":1,"model":"us.anthropic.claude-sonnet-4-5-20250929-v1:0","tokens":{"input":110,"cache_write":10028,"cache_read":3137,"output":243}}`

func TestEntryItemCompressesBody(t *testing.T) {
	now := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		body       string
		compressed bool
	}{
		{"evidence body", evidenceBody, true},
		{"short body stays text", `{"confidence":"high","n":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := prepareEntry(ora.Entry{SignalID: "gh-7f3a9c2e", Kind: ora.KindExecutionEvidence, Qualifier: "dec-1", AuthorType: ora.AuthorExecutor, Body: []byte(tc.body)}, now)
			if err != nil {
				t.Fatal(err)
			}
			item := entryItemSharded(e, DefaultRecentShards)
			if _, ok := item[attrBodyZ]; ok != tc.compressed {
				t.Fatalf("compressed = %v, want %v", ok, tc.compressed)
			}
			if tc.compressed {
				if n := dynamotest.ItemSize(item); n > 1024 {
					t.Errorf("item is %d bytes, over one write unit", n)
				}
			}
			got, err := decodeEntry(item)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Body, e.Body) || got.Digest != e.Digest || got.SignalID != e.SignalID || got.Kind != e.Kind || got.Qualifier != e.Qualifier {
				t.Errorf("decoded %+v, want %+v", got, e)
			}
		})
	}
}

// Items written before carried copies of their keys and the body as text:
// they decode as they did.
func TestDecodeEntryWrittenBefore(t *testing.T) {
	item := map[string]types.AttributeValue{
		AttrPK: sv("SIGNAL#s-1"), AttrSK: sv("ENTRY#final-verdict#v-1"),
		"type": sv(typeEntry), "signal_id": sv("s-1"), "kind": sv("final-verdict"), "qualifier": sv("v-1"),
		"body": sv(`{"outcome":"succeeded"}`), "digest": sv("sha256:00"), "created_at": sv("2026-11-26T22:00:00.000000000Z"),
	}
	e, err := decodeEntry(item)
	if err != nil {
		t.Fatal(err)
	}
	if e.SignalID != "s-1" || e.Kind != ora.KindFinalVerdict || e.Qualifier != "v-1" || string(e.Body) != `{"outcome":"succeeded"}` {
		t.Errorf("decoded %+v", e)
	}
}

func TestDecodeEntryBadBody(t *testing.T) {
	item := map[string]types.AttributeValue{
		AttrPK: sv("SIGNAL#s-1"), AttrSK: sv("ENTRY#final-verdict#v-1"), "type": sv(typeEntry),
		attrBodyZ: &types.AttributeValueMemberB{Value: []byte("not deflate")}, "created_at": sv("2026-11-26T22:00:00.000000000Z"),
	}
	_, err := decodeEntry(item)
	if ora.ErrorCode(err) != ora.EINVALID {
		t.Fatalf("err = %v, want EINVALID", err)
	}
}
