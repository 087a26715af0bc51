package handler

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
	"github.com/ora-runtime/ora/shared/sqlite"
)

var at = time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)

func signal(id string, at time.Time) ora.NormalizedSignal {
	raw := []byte(`{"confidence":"high"}`)
	return ora.NormalizedSignal{
		ID: id, Source: ora.Source{Type: ora.SourceWebhook, Name: "test", Provider: "test"},
		Timestamp: at, NormalizedAt: at, Payload: raw, DedupKey: "d-" + id, RawDigest: ora.Digest(raw),
	}
}

func appendEntry(t *testing.T, db *sqlite.DB, id string, kind ora.EntryKind, body any, created time.Time) {
	t.Helper()
	e, err := ora.NewEntry(id, kind, "", body)
	if err != nil {
		t.Fatal(err)
	}
	e.CreatedAt = created
	if _, err := db.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

func TestHandle(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	earlier := at.Add(-time.Minute)
	appendEntry(t, db, "earlier", ora.KindSignalReceived, signal("earlier", earlier), earlier)
	appendEntry(t, db, "earlier", ora.KindFinalVerdict, map[string]string{"final": "completed"}, earlier)
	appendEntry(t, db, "sig-1", ora.KindSignalReceived, signal("sig-1", at), at)
	f := orient.NewFetcher(db)
	for _, j := range orient.Plan(signal("sig-1", at)) {
		if _, err := f.Fetch(ctx, "sig-1", j); err != nil {
			t.Fatal(err)
		}
	}
	h := lambda.NewHandler(Handler{Compiler: orient.NewCompiler(db)}.Handle)

	var first Output
	for run := range 2 { // the second run is a crash-retry: same packet, no second entry
		out, err := h.Invoke(ctx, []byte(`{"signal_id":"sig-1","plan":{"jobs":[]}}`))
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		var got Output
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			first = got
		}
		if got != first {
			t.Errorf("run %d: got %+v, want %+v", run, got, first)
		}
	}
	in, err := orient.Input(ctx, db, "sig-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Output{PacketID: in.Packet.ID, Digest: in.Packet.Digest, TokenUsed: in.Packet.TokenUsed, TokenBudget: ora.DefaultTokenBudget}
	if first != want {
		t.Errorf("got %+v, want the stored packet's %+v", first, want)
	}
	facts := 0
	for _, b := range in.Packet.Bands {
		facts += len(b.Facts)
	}
	if facts != 3 { // the signal, the earlier signal, its verdict
		t.Errorf("the packet holds %d facts, want 3", facts)
	}

	tests := []struct {
		name, payload, want string
	}{
		{"missing signal id", `{}`, "InvalidInput"},
		{"unknown signal", `{"signal_id":"nope"}`, "NotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Invoke(ctx, []byte(tt.payload))
			if got := errorType(err); got != tt.want {
				t.Errorf("got %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

// errorType is the name Step Functions sees for err (aws-lambda-go reports
// the element type's name for a pointer).
func errorType(err error) string {
	if err == nil {
		return "<nil>"
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// The Compile task as the Lambda runs it, with the app_patch the state
// machine passes ("$app_patch": null for a wave never resumed with one):
// an input patch is recorded in the packet; a patch whose digest is not its
// sha256 is InvalidInput, and no packet is written.
func TestCompileAppliesAnInputPatch(t *testing.T) {
	ctx := context.Background()
	patch := ora.AppPatch{Kind: ora.PatchInput, Target: "confidence", Value: json.RawMessage(`"medium"`)}
	patch.Digest = patch.Sum()
	handed, _ := json.Marshal(patch)
	tests := []struct {
		name, payload string
		wantErr       string // the error type Step Functions sees
		wantPatch     string // the patch the packet records
	}{
		{name: "never resumed", payload: `{"signal_id":"sig-1","app_patch":null}`},
		{name: "an input patch", payload: `{"signal_id":"sig-1","app_patch":` + string(handed) + `}`, wantPatch: patch.Digest},
		{name: "a digest that is not its sha256", payload: `{"signal_id":"sig-1","app_patch":{"kind":"input","target":"confidence","value":"low","digest":"` + patch.Digest + `"}}`, wantErr: "InvalidInput"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "l.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			appendEntry(t, db, "sig-1", ora.KindSignalReceived, signal("sig-1", at), at)
			h := lambda.NewHandler(Handler{Compiler: orient.NewCompiler(db)}.Handle)
			_, err = h.Invoke(ctx, []byte(tt.payload))
			if tt.wantErr != "" {
				if got := errorType(err); got != tt.wantErr {
					t.Fatalf("got %s (%v), want %s", got, err, tt.wantErr)
				}
				if _, err := orient.Input(ctx, db, "sig-1"); ora.ErrorCode(err) != ora.ENOTFOUND {
					t.Errorf("a refused patch left a packet: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			in, err := orient.Input(ctx, db, "sig-1")
			if err != nil {
				t.Fatal(err)
			}
			if got := orient.PatchOf(in.Packet); got != tt.wantPatch {
				t.Errorf("the packet records patch %q, want %q", got, tt.wantPatch)
			}
		})
	}
}
