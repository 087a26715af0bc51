package stepfn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// eagerStore is a MemoryStore the engine does not recognise as one: it
// renders every event when it happens and saves it through the Store
// interface, as with a durable store.
type eagerStore struct{ *stepfn.MemoryStore }

// TestLazyHistoryMatchesEager runs the same execution with a MemoryStore
// (whose events keep their JSON values and render them when the history is
// read) and with a store that receives every event rendered, and compares the
// two histories event by event.
func TestLazyHistoryMatchesEager(t *testing.T) {
	const def = `{"StartAt":"P","States":{
		"P":{"Type":"Pass","Parameters":{"id.$":"$.id","list":[1,2,3],"s":"é \"q\" <>"},"Next":"C"},
		"C":{"Type":"Choice","Choices":[{"Variable":"$.id","StringEquals":"none","Next":"F"}],"Default":"T"},
		"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","ResultPath":"$.t","Next":"Par"},
		"Par":{"Type":"Parallel","ResultPath":"$.par","Next":"M","Branches":[
			{"StartAt":"B","States":{"B":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:g","End":true}}}]},
		"M":{"Type":"Map","ItemsPath":"$.list","MaxConcurrency":1,"ItemSelector":{"i.$":"$$.Map.Item.Index","v.$":"$$.Map.Item.Value"},
			"ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","End":true}}},
			"ResultPath":"$.m","Next":"Done"},
		"F":{"Type":"Fail","Error":"E"},
		"Done":{"Type":"Succeed"}}}`
	histories := map[string][]stepfn.HistoryEvent{}
	for name, store := range map[string]stepfn.Store{"lazy": stepfn.NewMemoryStore(), "eager": eagerStore{stepfn.NewMemoryStore()}} {
		e := newEngine(t, func(o *stepfn.Options) { o.Store = store })
		// f answers with compact JSON in sorted key order (kept as a value);
		// g with spaces and unsorted keys (kept as its bytes).
		e.RegisterHandler("f", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
			return []byte(`{"a":1,"in":` + string(p) + `}`), nil
		}))
		e.RegisterHandler("g", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) { return []byte(`{"z": 1, "a": [true]}`), nil }))
		arn, x := run(t, e, def, `{"id":"x"}`)
		if x.Status != stepfn.StatusSucceeded {
			t.Fatalf("%s: status = %s (%s %s)", name, x.Status, x.Error, x.Cause)
		}
		h, err := e.GetExecutionHistory(context.Background(), arn)
		if err != nil {
			t.Fatalf("%s: GetExecutionHistory: %v", name, err)
		}
		histories[name] = h
	}
	lazy, eager := histories["lazy"], histories["eager"]
	if len(lazy) != len(eager) {
		t.Fatalf("lazy history has %d events, eager %d", len(lazy), len(eager))
	}
	for i := range lazy {
		got, _ := json.Marshal(lazy[i])
		want, _ := json.Marshal(eager[i])
		if string(got) != string(want) {
			t.Errorf("event %d:\n lazy  %s\n eager %s", i+1, got, want)
		}
		if lazy[i].ID != int64(i+1) {
			t.Errorf("event %d has ID %d", i+1, lazy[i].ID)
		}
	}
}

// TakeHistory hands over a finished execution's history as
// GetExecutionHistory showed it, with the states it entered, and removes
// the execution; a running or unknown execution is not taken.
func TestTakeHistory(t *testing.T) {
	const def = `{"StartAt":"P","States":{
		"P":{"Type":"Pass","Next":"Par"},
		"Par":{"Type":"Parallel","Next":"Done","Branches":[
			{"StartAt":"B","States":{"B":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","End":true}}}]},
		"Done":{"Type":"Succeed"}}}`
	store := stepfn.NewMemoryStore()
	e := newEngine(t, func(o *stepfn.Options) { o.Store = store })
	release := make(chan struct{})
	e.RegisterHandler("f", stepfn.HandlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		<-release
		return []byte(`{"ok":true}`), nil
	}))
	ctx := context.Background()
	sm, err := e.CreateStateMachine("take", []byte(def))
	if err != nil {
		t.Fatal(err)
	}
	arn, err := e.StartExecution(ctx, sm, "one", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := store.TakeHistory(ctx, arn); ok {
		t.Error("TakeHistory took a running execution")
	}
	close(release)
	if x, err := e.Wait(ctx, arn); err != nil || x.Status != stepfn.StatusSucceeded {
		t.Fatalf("Wait: %v %+v", err, x)
	}
	want, err := e.GetExecutionHistory(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	taken, ok := store.TakeHistory(ctx, arn)
	if !ok {
		t.Fatal("TakeHistory did not take a finished execution")
	}
	if _, err := e.GetExecutionHistory(ctx, arn); err == nil {
		t.Error("the execution is still in the store after TakeHistory")
	}
	if _, ok := store.TakeHistory(ctx, arn); ok {
		t.Error("TakeHistory took the same execution twice")
	}
	got, _ := json.Marshal(taken.Events())
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("Events:\n got  %s\n want %s", got, wantJSON)
	}
	var wantNames []string
	for _, ev := range want {
		if ev.StateEnteredEventDetails != nil {
			wantNames = append(wantNames, ev.StateEnteredEventDetails.Name)
		}
	}
	if names := taken.StatesEntered(); strings.Join(names, ",") != strings.Join(wantNames, ",") || len(names) != 4 {
		t.Errorf("StatesEntered = %q, want %q (P, Par, B, Done)", names, wantNames)
	}
}
