package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// TestCoalescedBurst sends 20 GitHub issues deliveries for one issue over
// about 200 ms (each its own request, as GitHub sends them) to ora dev with
// a 2 s coalescing window, on SQLite and on DynamoDB Local: every delivery
// is recorded, all name one wave, that wave holds the 20 signals in the
// order they were captured and its orientation packet carries the 19
// attached ones as facts; no other wave starts. The window is wider than
// the usual 500 ms because under -race on a loaded machine the last of the
// 20 requests can reach the observer more than 500 ms after the first, and
// a signal after the window rightly opens a second wave.
func TestCoalescedBurst(t *testing.T) {
	for _, store := range []string{"sqlite", "dynamodb"} {
		t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(t, t.TempDir())
			cfg.Coalesce.Window = Duration(2 * time.Second)
			if store == "dynamodb" {
				onDynamoDBLocal(t, &cfg, "coalesce")
			}
			r, err := New(ctx, cfg, func(o *Options) { o.Logger = discard() })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Close() })
			srv := httptest.NewServer(r.Handler())
			t.Cleanup(srv.Close)
			src, _ := cfg.Source("github")

			const n = 20
			receipts := make([]observe.Receipt, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				time.Sleep(10 * time.Millisecond)
				go func() {
					defer wg.Done()
					body := fmt.Sprintf(`{"action":"labeled","issue":{"number":42,"title":"Wave stuck after deploy","state":"open","body":null,"user":{"login":"octocat"}},`+
						`"label":{"id":%d,"name":"triage-%d","color":"d73a4a"},"repository":{"id":186853002,"full_name":"ora-runtime/ora-demo"},"sender":{"login":"octocat"}}`, 208045946+i, i)
					h, err := observe.SignDelivery(src, []byte(body), time.Now(), fmt.Sprintf("72d3162e-cc78-11e3-81ab-4c9367dc%04d", i))
					if err != nil {
						errs[i] = err
						return
					}
					h.Set("X-GitHub-Event", "issues")
					req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/github", strings.NewReader(body))
					req.Header = h
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						errs[i] = err
						return
					}
					defer resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						errs[i] = fmt.Errorf("status %s", resp.Status)
						return
					}
					errs[i] = json.NewDecoder(resp.Body).Decode(&receipts[i])
				}()
			}
			wg.Wait()
			wave := receipts[0].WaveID
			for i, err := range errs {
				if err != nil {
					t.Fatalf("delivery %d: %v", i, err)
				}
				if receipts[i].Duplicate || receipts[i].WaveID != wave {
					t.Fatalf("delivery %d: receipt %+v, want a new signal in wave %s", i, receipts[i], wave)
				}
				if receipts[i].SignalID != wave {
					if _, err := (waves{r}).Wave(ctx, receipts[i].SignalID); ora.ErrorCode(err) != ora.ENOTFOUND {
						t.Errorf("attached signal %s has a wave of its own (%v)", receipts[i].SignalID, err)
					}
				}
			}
			// The wave runs on (it may wait for a human); its packet is compiled early.
			var entries []ora.Entry
			var packet ora.OrientationPacket
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if entries, err = r.ledger.Entries(ctx, wave); err != nil {
					t.Fatal(err)
				}
				if packet, err = orient.Packet(entries); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("wave %s compiled no packet: %v", wave, err)
				}
			}
			sigs, err := observe.Coalesced(entries)
			if err != nil {
				t.Fatal(err)
			}
			if len(sigs) != n {
				t.Fatalf("the wave holds %d signals, want %d", len(sigs), n)
			}
			for i := 1; i < len(sigs); i++ {
				if sigs[i].NormalizedAt.Before(sigs[i-1].NormalizedAt) {
					t.Errorf("signal %d (%s) was captured before the one ahead of it", i, sigs[i].ID)
				}
			}
			attached := 0
			for _, b := range packet.Bands {
				for _, f := range b.Facts {
					if strings.HasPrefix(f.ID, observe.CoalescedQualifier("")) {
						attached++
					}
				}
			}
			if attached != n-1 {
				t.Errorf("the packet carries %d attached signals, want %d", attached, n-1)
			}
		})
	}
}

// The coalesce block of the configuration file: the window and, by source,
// off (a plain YAML word, not a boolean) or a payload path.
func TestCoalesceConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		window  time.Duration
		sources map[string]string
		err     string
	}{
		{"absent is off", "", 0, nil, ""},
		{"window and sources", "coalesce:\n  window: 500ms\n  sources: {slack: off, orders: order.id}\n",
			500 * time.Millisecond, map[string]string{"slack": "off", "orders": "order.id"}, ""},
		{"a negative window", "coalesce:\n  window: -1s\n", 0, nil, "coalesce.window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ora.yaml")
			if err := os.WriteFile(path, []byte("data_dir: "+t.TempDir()+"\nsources: [{name: ci, type: hmac, secret: ci-secret-0123}]\n"+tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadConfig(path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("LoadConfig: %v, want an error naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Duration(cfg.Coalesce.Window) != tt.window || !maps.Equal(cfg.Coalesce.Sources, tt.sources) {
				t.Errorf("coalesce = %+v, want window %v, sources %v", cfg.Coalesce, tt.window, tt.sources)
			}
		})
	}
}
