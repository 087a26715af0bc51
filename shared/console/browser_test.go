package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ora-runtime/ora/shared/observe"
)

// The browser tests drive Debian's headless Chromium against the real `ora
// dev` binary. Without chromium they skip, except under CI=true, where `make
// deps` installs it and a missing browser is a failure.

const (
	approverToken = "browser-approver-token"
	demoSecret    = "browser-demo-secret"
)

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; `make deps` installs it under CI")
	}
	t.Skip("chromium is not installed (apt-get install chromium); the browser tests need it")
	return ""
}

// outputDir is where screenshots go: $ORA_TEST_OUTPUT/browser, by default
// build/test-output/browser in the repository (git-ignored).
func outputDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("ORA_TEST_OUTPUT")
	if root == "" {
		root = filepath.Join("..", "..", "build", "test-output")
	}
	dir := filepath.Join(root, "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startDev builds and starts `ora dev` on a free loopback port; extra
// (optional) is YAML appended to its config, after the tokens list.
func startDev(t *testing.T, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ora")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ora").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ora: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf(`listen: %s
data_dir: %s
sources:
  - name: demo
    type: hmac
    secret: %s
    header: X-Ora-Signature
tokens:
  - token: %s
    subject: browser
    scopes: [ora.approve, orientation.read]
`, addr, dir, demoSecret, approverToken) + strings.Join(extra, "")
	path := filepath.Join(dir, "ora.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "dev", "--config", path)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("ora dev log:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("ora dev did not answer /healthz")
		}
	}
}

// send posts a signed signal and returns its wave id.
func send(t *testing.T, base string, payload string) string {
	t.Helper()
	src := observe.SourceConfig{Name: "demo", Type: observe.TypeHMAC, Secret: demoSecret, Header: "X-Ora-Signature", Hash: "sha256"}
	h, err := observe.Sign(src, []byte(payload), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/demo", strings.NewReader(payload))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("send: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var rec struct {
		WaveID string `json:"wave_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	return rec.WaveID
}

// into runs a and keeps its value in dst.
func into[T any](dst *T, a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		v, err := a(ctx, tg)
		*dst = v
		return chromedp.Void{}, err
	}
}

// ev evaluates a JavaScript expression into dst.
func ev[T any](dst *T, expr string) chromedp.Action[chromedp.Void] {
	return into(dst, chromedp.Evaluate[T](expr))
}

// browser starts headless Chromium (extra: more flags) for the length of t
// and returns its context, bounded to 3 minutes of work.
func browser(t *testing.T, chrome string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.NoFirstRun,
		chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), append(opts, extra...)...)
	t.Cleanup(cancelA)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	if err := chromedp.Do(ctx); err != nil { // start the browser with no timeout
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	return ctx
}

func TestConsoleInBrowser(t *testing.T) {
	chrome := chromiumPath(t)
	if testing.Short() {
		t.Skip("starts ora dev and a browser; skipped with -short")
	}
	out := outputDir(t)
	base := startDev(t)

	ctx := browser(t, chrome)
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	view := func(name string) chromedp.Action[chromedp.Void] { // the visible part only
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.CaptureScreenshot()(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(out, name+".png"), png, 0o644)
		})
	}
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(out, name+".png"), png, 0o644)
		})
	}

	// The waves list, empty; then a wave appears without a reload.
	run("open the console", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible(chromedp.CSS(`#wave-rows`)))
	wave := send(t, base, `{"confidence":"low","note":"from the browser test"}`)
	link := fmt.Sprintf(`a.wave-link[href="/console/waves/%s"]`, wave)
	run("the wave appears in the list", chromedp.WaitVisible(chromedp.CSS(link)), shot("waves"))

	// Open it: states coloured, ledger entries, a pending approval.
	run("open the wave", chromedp.Click(chromedp.CSS(link)),
		chromedp.WaitVisible(chromedp.CSS(`g.node[data-state="Escalate to a human"][data-status="running"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.settle`)),
		shot("wave-waiting"))
	var statuses map[string]string
	run("read the graph", ev(&statuses, `Object.fromEntries([...document.querySelectorAll("g.node")].map(n => [n.dataset.state, n.dataset.status]))`))
	for state, want := range map[string]string{"Plan observations": "succeeded", "Orient and reason": "succeeded", "Escalate to a human": "running", "Act and validate": "not-run"} {
		if statuses[state] != want {
			t.Errorf("state %q is %q, want %q (all: %v)", state, statuses[state], want, statuses)
		}
	}
	var fill map[string]string
	run("read the node colours", ev(&fill, `Object.fromEntries([...document.querySelectorAll("g.node")].map(n => [n.dataset.status, getComputedStyle(n.querySelector("rect")).fill]))`))
	if fill["succeeded"] == "" || fill["succeeded"] == fill["running"] || fill["running"] == fill["not-run"] {
		t.Errorf("statuses share colours: %v", fill)
	}
	var kinds []string
	run("read the ledger", ev(&kinds, `[...document.querySelectorAll("li.entry")].map(e => e.dataset.kind)`))
	for _, k := range []string{"signal-received", "orientation-packet", "reasoner-decision", "architect-intent"} {
		if !strings.Contains(strings.Join(kinds, " "), k) {
			t.Errorf("ledger entries %v lack %s", kinds, k)
		}
	}
	var page string
	run("read the page", into(&page, chromedp.OuterHTML(chromedp.CSS("html"))))
	if !strings.Contains(page, "Reasoning") && !strings.Contains(page, "confidence") {
		t.Errorf("the decision shows no confidence")
	}

	// Accessibility basics: every form control has a label; Tab reaches the
	// skip link first.
	var unlabelled int
	run("labels", ev(&unlabelled, `[...document.querySelectorAll("input:not([type=hidden]), select")].filter(e => e.labels.length === 0).length`))
	if unlabelled != 0 {
		t.Errorf("%d form controls without a label", unlabelled)
	}
	var focused string
	run("keyboard", chromedp.KeyEvent("\t"), ev(&focused, `document.activeElement.className`))
	if focused != "skip" {
		t.Errorf("first Tab focuses %q, want the skip link", focused)
	}

	// 375 px wide: nothing overflows the page sideways.
	var overflow bool
	run("narrow screen", chromedp.EmulateViewport(375, 800),
		ev(&overflow, `document.documentElement.scrollWidth > 375`), shot("wave-375px"))
	if overflow {
		t.Errorf("the wave page is wider than 375 px")
	}
	run("wide again", chromedp.EmulateViewport(1280, 900))

	// Approve with the button; the wave finishes.
	run("approve", chromedp.SendKeys(chromedp.CSS(`form.settle input[name=token]`), approverToken),
		chromedp.SendKeys(chromedp.CSS(`form.settle input[name=reason]`), "fine by the browser"),
		chromedp.Click(chromedp.CSS(`form.settle button.approve`)),
		chromedp.WaitVisible(chromedp.CSS(`p.note`)))
	var status string
	for deadline := time.Now().Add(60 * time.Second); status != "SUCCEEDED" && time.Now().Before(deadline); {
		run("wait for the wave", chromedp.Sleep(300*time.Millisecond), into(&status, chromedp.Text(chromedp.CSS(`#wave-status`))))
	}
	if status != "SUCCEEDED" {
		t.Fatalf("wave status %q after the approval, want SUCCEEDED", status)
	}
	run("reload the finished wave", chromedp.Navigate(base+"/console/waves/"+wave),
		chromedp.WaitVisible(chromedp.CSS(`g.node[data-state="Act and validate"][data-status="succeeded"]`)),
		chromedp.WaitVisible(chromedp.CSS(`li.entry[data-kind="verdict"]`)),
		shot("wave"), chromedp.EmulateViewport(1000, 1100), view("wave-top"), chromedp.EmulateViewport(1280, 900))
	run("read the graph again", ev(&statuses, `Object.fromEntries([...document.querySelectorAll("g.node")].map(n => [n.dataset.state, n.dataset.status]))`))
	for _, state := range []string{"Plan observations", "Orient and reason", "Escalate to a human", "Act and validate"} {
		if statuses[state] != "succeeded" {
			t.Errorf("state %q is %q after the wave, want succeeded", state, statuses[state])
		}
	}

	// The approvals page is empty again; the metrics page counts the wave.
	run("approvals", chromedp.Navigate(base+"/console/approvals"), chromedp.WaitVisible(chromedp.CSS(`#no-approvals`)), shot("approvals"))
	var completed string
	run("metrics", chromedp.Navigate(base+"/console/metrics"), chromedp.WaitVisible(chromedp.CSS(`#metrics`)),
		ev(&completed, `[...document.querySelectorAll("#metrics tr")].find(r => r.textContent.includes("Waves completed")).querySelector("td").textContent`),
		shot("metrics"))
	if completed == "" || completed == "0" {
		t.Errorf("metrics page: waves completed %q, want at least 1", completed)
	}
	run("filter by band", chromedp.Navigate(base+"/console/?band=high"), chromedp.WaitVisible(chromedp.CSS(`#wave-rows`)))
	var rows int
	run("count rows", ev(&rows, `document.querySelectorAll("#wave-rows a.wave-link[href$='`+wave+`']").length`))
	if rows != 0 {
		t.Errorf("the low-band wave is listed under band=high")
	}
}

// An attacker's page reaches `ora dev` on loopback in the two ways a browser
// allows: a name of theirs rebound to 127.0.0.1 (DNS rebinding, here the
// browser's own host resolver rule), and a form on their site posting to
// 127.0.0.1 with the published token. Both are refused, and the decision
// still waits.
func TestConsoleRefusesRebindingAndCrossSitePosts(t *testing.T) {
	chrome := chromiumPath(t)
	if testing.Short() {
		t.Skip("starts ora dev and a browser; skipped with -short")
	}
	base := startDev(t)
	wave := send(t, base, `{"confidence":"low","note":"an attacker wants this approved"}`)
	decision := awaitDecision(t, base, wave)

	// The attacker's site: auto-submitting forms aimed at the console.
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := base + "/console/decisions/" + decision + "/approve"
		fields := `<input name="token" value="` + approverToken + `"><input name="reason" value="pwned">`
		if r.URL.Path == "/login" {
			target, fields = base+"/console/login", `<input name="token" value="attacker-token-000"><input name="next" value="/console/">`
		}
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s">%s</form><script>document.getElementById("f").submit()</script>`, target, fields)
	}))
	defer attacker.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(attacker.URL, "http://"))
	_, devPort, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))

	ctx := browser(t, chrome, chromedp.Flag("host-resolver-rules", "MAP rebind.attacker.example 127.0.0.1, MAP attacker.example 127.0.0.1"))
	text := func(step, url string) string {
		t.Helper()
		var body string
		if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.Sleep(500*time.Millisecond),
			into(&body, chromedp.Text(chromedp.CSS("body")))); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return body
	}
	for _, path := range []string{"/console/", "/signals/" + wave} {
		if body := text("rebinding", "http://rebind.attacker.example:"+devPort+path); !strings.Contains(body, "not this server's loopback address") || strings.Contains(body, "an attacker wants") {
			t.Errorf("GET %s through a rebound name showed %.300q, want the 421 refusal", path, body)
		}
	}
	if body := text("cross-site approve", "http://attacker.example:"+port+"/approve"); !strings.Contains(body, "cross-origin request refused") {
		t.Errorf("the cross-site approval showed %.300q, want the refusal", body)
	}
	if body := text("cross-site login", "http://attacker.example:"+port+"/login"); !strings.Contains(body, "cross-origin request refused") {
		t.Errorf("the cross-site sign-in showed %.300q, want the refusal", body)
	}
	if d := awaitDecision(t, base, wave); d != decision {
		t.Fatalf("decision %q, want %q still waiting", d, decision)
	}
	resp, err := http.Get(base + "/signals/" + wave)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Entries []struct{ Kind string } }
	_ = json.NewDecoder(resp.Body).Decode(&got)
	for _, e := range got.Entries {
		if e.Kind == "human-verdict" {
			t.Errorf("the cross-site post settled the decision")
		}
	}
}

// awaitDecision waits for wave's escalated decision and returns its id.
func awaitDecision(t *testing.T, base, wave string) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(base + "/signals/" + wave)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Entries []struct {
				Kind string
				Meta map[string]string
			}
		}
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		for _, e := range got.Entries {
			if e.Kind == "architect-intent" && e.Meta["decision_id"] != "" {
				return e.Meta["decision_id"]
			}
		}
	}
	t.Fatalf("wave %s never escalated", wave)
	return ""
}
