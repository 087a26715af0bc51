package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// awaitStatus waits until wave's execution reaches status.
func awaitStatus(t *testing.T, base, wave, status string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(base + "/waves/" + wave)
		if err != nil {
			t.Fatal(err)
		}
		var w struct{ Status string }
		_ = json.NewDecoder(resp.Body).Decode(&w)
		resp.Body.Close()
		if got = w.Status; got == status {
			return
		}
	}
	t.Fatalf("wave %s is %q, want %s", wave, got, status)
}

// The wave list and the wave page in Chromium at a laptop's width and a
// phone's: each row says what happened in one line and the filters narrow
// the list; the wave page's graph fits the screen with the path taken drawn
// strong; clicking a state shows its input and output in the side panel;
// no page is taller than three screens. UPDATE_DOCS=1 also writes the
// screenshots the docs show (docs/console-list.png, docs/console-wave.png).
func TestWaveListAndPageInBrowser(t *testing.T) {
	chrome := chromiumPath(t)
	if testing.Short() {
		t.Skip("starts ora dev and a browser; skipped with -short")
	}
	out := outputDir(t)
	base := startDev(t)
	high := send(t, base, `{"confidence":"high","note":"a high one"}`)
	medium := send(t, base, `{"confidence":"medium","note":"a medium one"}`)
	low := send(t, base, `{"confidence":"low","note":"waits for a human"}`)
	awaitStatus(t, base, high, "SUCCEEDED")
	awaitStatus(t, base, medium, "SUCCEEDED")
	awaitDecision(t, base, low)

	ctx := browser(t, chrome)
	shot := func(name string, full bool) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			capture := chromedp.CaptureScreenshot()
			if full {
				capture = chromedp.FullScreenshot(100)
			}
			png, err := capture(ctx, tg)
			if err != nil {
				return err
			}
			if os.Getenv("UPDATE_DOCS") == "1" && strings.HasPrefix(name, "console-") {
				if err := os.WriteFile(filepath.Join("..", "..", "docs", name+".png"), png, 0o644); err != nil {
					return err
				}
			}
			return os.WriteFile(filepath.Join(out, name+".png"), png, 0o644)
		})
	}

	for _, vp := range []struct {
		name   string
		w, h   int64
		narrow bool
	}{{"1280", 1280, 800, false}, {"390", 390, 844, true}} {
		t.Run(vp.name, func(t *testing.T) {
			run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
				t.Helper()
				if err := chromedp.Do(ctx, actions...); err != nil {
					t.Fatalf("%s: %v", step, err)
				}
			}
			run("viewport", chromedp.EmulateViewport(vp.w, vp.h))
			pageFits := func(page string) {
				t.Helper()
				var dims struct{ Width, Height float64 }
				run("measure "+page, ev(&dims, `({Width: document.documentElement.scrollWidth, Height: document.documentElement.scrollHeight})`))
				if dims.Width > float64(vp.w) {
					t.Errorf("%s is %.0f px wide at %d px", page, dims.Width, vp.w)
				}
				if dims.Height > 3*float64(vp.h) {
					t.Errorf("%s is %.0f px tall, more than 3 screens of %d px", page, dims.Height, vp.h)
				}
			}

			// The list: one line per wave, event -> action -> outcome.
			run("the list", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible(chromedp.CSS(`tr.wave-row[data-wave="`+low+`"]`)))
			var rows []struct {
				Wave, Text, Outcome string
				Height, Line        float64
			}
			run("read the rows", ev(&rows, `[...document.querySelectorAll("tr.wave-row")].map(r => { const a = r.querySelector("a.wave-link"); return {
				Wave: r.dataset.wave, Text: a.textContent.replace(/\s+/g, " ").trim(), Outcome: r.dataset.outcome,
				Height: a.getBoundingClientRect().height, Line: parseFloat(getComputedStyle(a).lineHeight) } })`))
			want := map[string]string{high: "completed", medium: "completed", low: "in progress"}
			for _, r := range rows {
				if w, ok := want[r.Wave]; ok {
					if r.Outcome != w || !strings.Contains(r.Text, "→") || !strings.HasSuffix(r.Text, w) {
						t.Errorf("row of %s reads %q (outcome %q), want event → action → %s", r.Wave, r.Text, r.Outcome, w)
					}
					if !vp.narrow && r.Height > 1.6*r.Line {
						t.Errorf("row of %s is %.0f px tall, more than one line (%.0f px)", r.Wave, r.Height, r.Line)
					}
					delete(want, r.Wave)
				}
			}
			if len(want) > 0 {
				t.Errorf("waves missing from the list: %v (rows %v)", want, rows)
			}
			pageFits("the list")
			if !vp.narrow {
				run("shoot the list", shot("console-list", false))
			}

			// Filter by outcome with the form, then by event type.
			run("filter by outcome", chromedp.SetValue(chromedp.CSS(`#f-outcome`), "completed"),
				chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)),
				chromedp.WaitReady(chromedp.CSS(`#f-outcome option[value="completed"][selected]`)))
			var outcomes []string
			var loc string
			run("read the filtered rows", ev(&outcomes, `[...document.querySelectorAll("tr.wave-row")].map(r => r.dataset.outcome)`), ev(&loc, `location.search`))
			if !strings.Contains(loc, "outcome=completed") || len(outcomes) < 2 || strings.Contains(strings.Join(outcomes, ","), "in progress") {
				t.Errorf("outcome filter: %s lists %v, want only completed waves", loc, outcomes)
			}
			var events []string
			run("event types", ev(&events, `[...document.querySelectorAll("#f-event option")].map(o => o.value).filter(v => v)`))
			if len(events) == 0 {
				t.Fatalf("the event filter offers no event type")
			}
			run("filter by event", chromedp.Navigate(base+"/console/?event=no-such-event"), chromedp.WaitVisible(chromedp.CSS(`#wave-rows`)))
			var n int
			run("count", ev(&n, `document.querySelectorAll("tr.wave-row").length`))
			if n != 0 {
				t.Errorf("event=no-such-event lists %d waves", n)
			}
			run("filter by the real event", chromedp.Navigate(base+"/console/?event="+events[0]), chromedp.WaitVisible(chromedp.CSS(`tr.wave-row`)))

			// The wave page of the high wave: the path taken is highlighted.
			run("open the wave", chromedp.Navigate(base+"/console/waves/"+high), chromedp.WaitVisible(chromedp.CSS(`svg#wave`)))
			var taken map[string]string
			run("read the graph", ev(&taken, `Object.fromEntries([...document.querySelectorAll("svg#wave g.node")].map(n => [n.dataset.state, n.dataset.taken + " " + n.getAttribute("class")]))`))
			for _, s := range []string{"Plan observations", "Fetch inline?", "Orient and reason", "Route on confidence", "Act and validate"} {
				if !strings.HasPrefix(taken[s], "true ") || !strings.Contains(taken[s], " taken") {
					t.Errorf("state %q on the path taken reads %q, want taken", s, taken[s])
				}
			}
			for _, s := range []string{"Escalate to a human", "Operate on failure", "Wave failed"} {
				if !strings.HasPrefix(taken[s], "false ") || strings.Contains(taken[s], " taken") {
					t.Errorf("state %q off the path reads %q, want not taken", s, taken[s])
				}
			}
			var strokes struct{ Taken, Catch, TakenWidth, CatchWidth string }
			run("edge styles", ev(&strokes, `(() => { const t = document.querySelector("svg#wave polyline.edge.taken"), c = document.querySelector("svg#wave polyline.edge.caught:not(.taken)");
				return {Taken: getComputedStyle(t).stroke, Catch: getComputedStyle(c).stroke, TakenWidth: getComputedStyle(t).strokeWidth, CatchWidth: getComputedStyle(c).strokeWidth} })()`))
			if strokes.Taken == strokes.Catch || strokes.TakenWidth <= strokes.CatchWidth {
				t.Errorf("taken and untaken Catch edges look alike: %+v", strokes)
			}
			if !vp.narrow {
				var box struct{ Right, Bottom float64 }
				run("the graph's box", ev(&box, `(() => { const r = document.querySelector("svg#wave").getBoundingClientRect(); return {Right: r.right, Bottom: r.bottom} })()`))
				if box.Right > float64(vp.w) || box.Bottom > float64(vp.h) {
					t.Errorf("the graph ends at %.0f x %.0f, outside the %d x %d screen", box.Right, box.Bottom, vp.w, vp.h)
				}
				run("shoot the wave", shot("console-wave", false))
			}
			pageFits("the wave page")

			// Click a state: the panel shows its input and output.
			run("click Plan observations", chromedp.Click(chromedp.CSS(`svg#wave g.node[data-state="Plan observations"] rect`)),
				chromedp.WaitVisible(chromedp.CSS(`.state-panel[data-state="Plan observations"]`)))
			var panel struct{ Input, Output, Duration, URL string }
			var shown int
			run("read the panel", ev(&panel, `(() => { const p = document.querySelector('.state-panel[data-state="Plan observations"]');
				return {Input: p.querySelector('[data-field=input]').textContent, Output: p.querySelector('[data-field=output]').textContent,
					Duration: p.querySelector('[data-field=duration]').textContent, URL: location.search} })()`),
				ev(&shown, `[...document.querySelectorAll(".state-panel")].filter(p => !p.hidden).length`))
			if !strings.Contains(panel.Input, high) || !strings.Contains(panel.Output, `"plan"`) || panel.Duration == "-" || shown != 1 {
				t.Errorf("the panel after a click: %+v, %d panels shown; want Plan observations' input (the signal id), output (the plan), duration", panel, shown)
			}
			if !strings.Contains(panel.URL, "state=Plan") {
				t.Errorf("the address %q does not name the selected state", panel.URL)
			}
			var sel []string
			run("selected", ev(&sel, `[...document.querySelectorAll("g.node.selected")].map(n => n.dataset.state)`))
			if fmt.Sprint(sel) != "[Plan observations]" {
				t.Errorf("selected nodes %v, want Plan observations", sel)
			}

			// Clicking a state that runs a child expands the child inline, its
			// states selectable the same way.
			var open bool
			run("click Orient and reason", chromedp.Click(chromedp.CSS(`svg#wave g.node[data-state="Orient and reason"] rect`)),
				chromedp.WaitVisible(chromedp.CSS(`svg#child-reason`)), ev(&open, `document.getElementById("child-reason").open`))
			if !open {
				t.Errorf("the reason child did not open")
			}
			run("select the child's Reason", chromedp.Click(chromedp.CSS(`svg#child-reason g.node[data-state="reason/Reason"] rect`)),
				chromedp.WaitVisible(chromedp.CSS(`.state-panel[data-state="reason/Reason"]`)))
			var reasonOut string
			run("read the child's panel", into(&reasonOut, chromedp.Text(chromedp.CSS(`.state-panel[data-state="reason/Reason"] [data-field=output]`))))
			if !strings.Contains(reasonOut, "decision") {
				t.Errorf("the child state Reason shows output %.200q, want its decision", reasonOut)
			}
			if vp.narrow {
				run("shoot the narrow wave", shot("wave-390px", true))
			}

			// The wave waiting for a human, with its approval form, and the
			// medium one, which asked for a review, stay within three screens too.
			for _, w := range []string{low, medium} {
				run("open "+w, chromedp.Navigate(base+"/console/waves/"+w), chromedp.WaitVisible(chromedp.CSS(`svg#wave`)))
				pageFits("the wave page of " + w)
			}
		})
	}
}
