package orient

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// The normalized facts of ledger entries encode to the bytes the maps they
// replaced encoded to: facts already stored and facts written now compare.
func TestEntryFactEncodingUnchanged(t *testing.T) {
	at := time.Date(2026, 11, 24, 5, 0, 0, 123, time.FixedZone("X", 3600))
	sig := ora.NormalizedSignal{ID: "sig-w", Source: ora.Source{Type: ora.SourceWebhook, Name: "demo"}, Timestamp: at, DedupKey: "k<&>"}
	sigBody, _ := json.Marshal(sig)
	withPayload := sig
	withPayload.ID, withPayload.Payload = "sig-p", json.RawMessage(`{"action":"opened","n":1}`)
	payloadBody, _ := json.Marshal(withPayload)
	entries := []struct {
		job JobKind
		e   ora.Entry
		old map[string]any
	}{
		{JobWorkspaceState, ora.Entry{SignalID: "sig-w", Kind: ora.KindSignalReceived, Body: sigBody, CreatedAt: at},
			map[string]any{"signal_id": sig.ID, "source": sig.Source, "timestamp": sig.Timestamp.UTC(), "dedup_key": sig.DedupKey}},
		// A related signal's payload is part of its fact (since the packet's
		// view shows it); one without a payload encodes as before.
		{JobWorkspaceState, ora.Entry{SignalID: "sig-p", Kind: ora.KindSignalReceived, Body: payloadBody, CreatedAt: at},
			map[string]any{"signal_id": "sig-p", "source": sig.Source, "timestamp": sig.Timestamp.UTC(), "dedup_key": sig.DedupKey, "payload": withPayload.Payload}},
		{JobRecentActions, ora.Entry{SignalID: "s2", Kind: ora.KindExecutionEvidence, Qualifier: "0/1", AuthorType: ora.AuthorExecutor, Body: json.RawMessage(`{ "outcome" : "success", "h": "<b>" }`), CreatedAt: at}, nil},
		{JobActorHistory, ora.Entry{SignalID: "s3", Kind: ora.KindFinalVerdict, Body: json.RawMessage(`{"big":"` + strings.Repeat("x", 2000) + `"}`), CreatedAt: at}, nil},
		{JobActorHistory, ora.Entry{SignalID: "s4", Kind: ora.KindFinalVerdict, CreatedAt: at}, nil},
	}
	l := Ledger{}
	for _, c := range entries {
		t.Run(string(c.e.Kind)+"/"+c.e.SignalID, func(t *testing.T) {
			old := c.old
			if old == nil {
				old = map[string]any{"signal_id": c.e.SignalID, "kind": c.e.Kind, "qualifier": c.e.Qualifier,
					"author_type": c.e.AuthorType, "created_at": c.e.CreatedAt.UTC(), "body": l.body(c.e.Body)}
			}
			want, err := json.Marshal(old)
			if err != nil {
				t.Fatal(err)
			}
			f, err := l.entryFact(c.job, c.e)
			if err != nil {
				t.Fatalf("entryFact: %v", err)
			}
			if string(f.Normalized) != string(want) {
				t.Fatalf("normalized\n got  %s\n want %s", f.Normalized, want)
			}
		})
	}
}

// A ledger entry's normalized fact is encoded once and kept by what it is a
// function of: the same entry read again gives the same bytes, an entry
// under the same name with another body (another digest) or read with
// another inline limit gives its own.
func TestEntryFactKeptByContent(t *testing.T) {
	at := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	entry := func(body string) ora.Entry {
		return ora.Entry{SignalID: "s-kept", Kind: ora.KindExecutionEvidence, Qualifier: "0/1", AuthorType: ora.AuthorExecutor,
			Body: json.RawMessage(body), Digest: ora.Digest([]byte(body)), CreatedAt: at}
	}
	fresh := func(l Ledger, e ora.Entry) string {
		n, err := l.normalize(JobRecentActions, e)
		if err != nil {
			t.Fatal(err)
		}
		return string(n)
	}
	l := Ledger{}
	a, b := entry(`{"outcome":"success"}`), entry(`{"outcome":"failure","detail":"`+strings.Repeat("y", 40)+`"}`)
	for i, c := range []struct {
		l Ledger
		e ora.Entry
	}{{l, a}, {l, a}, {l, b}, {Ledger{InlineBodyBytes: 16}, b}, {l, b}} {
		f, err := c.l.entryFact(JobRecentActions, c.e)
		if err != nil {
			t.Fatal(err)
		}
		if want := fresh(c.l, c.e); string(f.Normalized) != want {
			t.Fatalf("read %d: normalized %s, want %s", i, f.Normalized, want)
		}
	}
	if fresh(l, b) == fresh(Ledger{InlineBodyBytes: 16}, b) || fresh(l, a) == fresh(l, b) {
		t.Fatal("the cases do not differ: the test proves nothing")
	}
}
