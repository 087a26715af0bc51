package ora

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSizeCheck walks the item-size policy: each row is one case of what a
// ledger does with an entry before writing it.
func TestSizeCheck(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(kind EntryKind, body int, meta string) Entry {
		e := Entry{SignalID: "sig", Kind: kind, Qualifier: "q", Body: []byte(`"` + strings.Repeat("x", body) + `"`), CreatedAt: at}
		e.Digest = Digest(e.Body)
		if meta != "" {
			e.Meta = map[string]string{"m": meta}
		}
		return e
	}
	big := MaxItemBytes
	cases := []struct {
		name      string
		e         Entry
		haveStore bool
		offload   bool
		errWant   string // "" for no error
	}{
		{"fits: stored inline", mk(KindObservedFact, 100, ""), true, false, ""},
		{"fits without a store", mk(KindFinalVerdict, 100, ""), false, false, ""},
		{"offloadable over the limit: by reference", mk(KindObservedFact, big, ""), true, true, ""},
		{"signal over the limit: by reference", mk(KindSignalReceived, big, ""), true, true, ""},
		{"packet over the limit: by reference", mk(KindOrientationPacket, big, ""), true, true, ""},
		{"evidence over the limit: by reference", mk(KindExecutionEvidence, big, ""), true, true, ""},
		{"offloadable, no store: refused", mk(KindObservedFact, big, ""), false, false, "no body store"},
		{"not offloadable: refused", mk(KindFinalVerdict, big, ""), true, false, "not stored by reference"},
		{"meta too large even by reference: refused", mk(KindObservedFact, 10, strings.Repeat("m", big)), true, false, "even with its body stored by reference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			off, err := SizeCheck(tc.e, tc.haveStore)
			if off != tc.offload {
				t.Errorf("offload = %v, want %v", off, tc.offload)
			}
			if tc.errWant == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errWant) || !errors.Is(err, ErrEntryTooLarge) || ErrorCode(err) != EINVALID {
				t.Fatalf("error %v, want EINVALID ErrEntryTooLarge saying %q", err, tc.errWant)
			}
			if !strings.Contains(err.Error(), `"sig/`+string(tc.e.Kind)+`/q"`) {
				t.Errorf("error %q does not name the entry's key", err)
			}
		})
	}
}

// TestSizeCheckAbove: the threshold moves offloadable bodies that fit an item
// to the store; it changes nothing else.
func TestSizeCheckAbove(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(kind EntryKind, body int) Entry {
		e := Entry{SignalID: "sig", Kind: kind, Qualifier: "q", Body: []byte(`"` + strings.Repeat("x", body) + `"`), CreatedAt: at}
		e.Digest = Digest(e.Body)
		return e
	}
	const above = 16 * 1024
	for _, tc := range []struct {
		name      string
		e         Entry
		haveStore bool
		offload   bool
		refused   bool
	}{
		{"packet under the threshold: inline", mk(KindOrientationPacket, 10*1024), true, false, false},
		{"packet over the threshold: by reference", mk(KindOrientationPacket, 20*1024), true, true, false},
		{"facts over the threshold: by reference", mk(KindObservedFact, 100*1024), true, true, false},
		{"over the threshold, no store: inline", mk(KindObservedFact, 100*1024), false, false, false},
		{"not offloadable over the threshold: inline", mk(KindReasonerDecision, 100*1024), true, false, false},
		{"not offloadable over the limit: refused", mk(KindReasonerDecision, MaxItemBytes), true, false, true},
		{"over the limit, no store: refused", mk(KindObservedFact, MaxItemBytes), false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			off, err := SizeCheckAbove(tc.e, tc.haveStore, above)
			if off != tc.offload || (err != nil) != tc.refused {
				t.Errorf("got offload %v, %v; want offload %v, refused %v", off, err, tc.offload, tc.refused)
			}
		})
	}
	// A threshold over the limit is the limit.
	if off, err := SizeCheckAbove(mk(KindObservedFact, MaxItemBytes), true, 2*MaxItemBytes); !off || err != nil {
		t.Errorf("threshold over the limit: got %v, %v; want offload", off, err)
	}
}

// TestBodyKeyOf: bodies of entries that expire within ExpiringBodyAge go
// under the prefix the bucket expires; the rest are kept.
func TestBodyKeyOf(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := func(d time.Duration) *time.Time { x := at.Add(d); return &x }
	for _, tc := range []struct {
		name string
		exp  *time.Time
		want string
	}{
		{"no expiry: kept", nil, BodyPrefix},
		{"30 days (DefaultRetention): expiring", in(ExpiringBodyAge), ExpiringBodyPrefix},
		{"an hour: expiring", in(time.Hour), ExpiringBodyPrefix},
		{"a second past 30 days: kept", in(ExpiringBodyAge + time.Second), BodyPrefix},
	} {
		e := Entry{Digest: "abc", CreatedAt: at, ExpiresAt: tc.exp}
		if got := BodyKeyOf(e); got != tc.want+"abc" {
			t.Errorf("%s: %s, want under %s", tc.name, got, tc.want)
		}
	}
	if ExpiringBodyDays*24*time.Hour <= ExpiringBodyAge {
		t.Errorf("the bucket's expiry, %d days, must exceed the longest expiring entry's life, %v", ExpiringBodyDays, ExpiringBodyAge)
	}
	for k, d := range DefaultRetention() {
		if d > ExpiringBodyAge {
			t.Errorf("%s is retained %v, longer than ExpiringBodyAge: its bodies would be kept forever", k, d)
		}
	}
}

type mapBodies map[string][]byte

func (m mapBodies) PutBody(_ context.Context, k string, b []byte) error { m[k] = b; return nil }
func (m mapBodies) GetBody(_ context.Context, k string) ([]byte, error) {
	b, ok := m[k]
	if !ok {
		return nil, Errorf(ENOTFOUND, "no %s", k)
	}
	return b, nil
}

// TestLoadBody: a body read back must match its digest, and a missing or
// unreachable one is an internal error, never "not found".
func TestLoadBody(t *testing.T) {
	ctx := context.Background()
	body := []byte(`{"a":1}`)
	d := Digest(body)
	store := mapBodies{BodyKey(d): body, BodyKey(Digest([]byte("x"))): []byte("tampered")}
	if got, err := LoadBody(ctx, store, Entry{Digest: d}); err != nil || string(got) != string(body) {
		t.Errorf("LoadBody = %s, %v", got, err)
	}
	for name, c := range map[string]struct {
		store  BodyStore
		digest string
	}{
		"missing":        {store, Digest([]byte("absent"))},
		"tampered":       {store, Digest([]byte("x"))},
		"no store":       {nil, d},
		"not an address": {store, "../x"},
	} {
		if _, err := LoadBody(ctx, c.store, Entry{Digest: c.digest}); ErrorCode(err) != EINTERNAL {
			t.Errorf("%s: %v, want EINTERNAL", name, err)
		}
	}
}
