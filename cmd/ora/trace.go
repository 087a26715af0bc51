package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

var _ = register("trace", "print a signal's ledger entries and its wave, in order", runTrace)

const traceUsage = `usage: ora trace SIGNAL_ID [--config FILE] [--url URL] [--token T] [--json]

Prints the signal, every ledger entry of its wave in order (time, kind,
qualifier, author type and a one-line summary of the body) and the wave's
status, error and the states it went through.

flags:
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --token T       the bearer token (default: the first config token with
                  scope orientation.read; none when there is none)
  --json          print {"signal", "entries", "wave"} as the API returns them

exit status: 0 printed, 1 the signal could not be read, 2 bad usage.
`

func runTrace(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, true)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	pos, code := parseInterleaved(fs, args, traceUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "ora trace: want one SIGNAL_ID, got %d argument(s)\n\n%s", len(pos), traceUsage)
		return 2
	}
	id := pos[0]
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora trace: %v\n", err)
		return 1
	}
	header := cf.jsonHeader(cfg, httpapi.ScopeRead)
	status, sigBody, err := apiCall(ctx, http.MethodGet, base+"/signals/"+url.PathEscape(id), header, nil)
	if err != nil {
		fmt.Fprintf(stderr, "ora trace: %v\n", err)
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "ora trace: signal %s: %d %s: %s\n", id, status, http.StatusText(status), apiErrorMessage(sigBody))
		return 1
	}
	var sig struct {
		Signal  json.RawMessage `json:"signal"`
		Entries []ora.Entry     `json:"entries"`
	}
	if err := json.Unmarshal(sigBody, &sig); err != nil {
		fmt.Fprintf(stderr, "ora trace: signal %s: the API answered something that is not a signal: %v\n", id, err)
		return 1
	}
	wstatus, waveBody, werr := apiCall(ctx, http.MethodGet, base+"/waves/"+url.PathEscape(id), header, nil)
	if *asJSON {
		out := map[string]json.RawMessage{"signal": sig.Signal, "entries": marshalOrNull(sig.Entries)}
		if werr == nil && wstatus == http.StatusOK {
			out["wave"] = waveBody
		}
		b := marshalOrNull(out)
		if ora.Deeper(b, ora.MaxBodyDepth) >= 0 {
			// Indenting a deep body multiplies its size by its depth: print
			// it as the API answered it.
			_, _ = stdout.Write(append(b, '\n'))
		} else {
			writeJSONIndented(stdout, b)
		}
	} else {
		printTraceSignal(stdout, id, sig.Signal)
		printTraceEntries(stdout, sig.Entries)
		printTraceWave(stdout, id, wstatus, waveBody, werr)
		if d := awaitingHuman(sig.Entries); d != "" {
			flags := cf.hintFlags()
			fmt.Fprintf(stdout, "\ndecision %s awaits a human:\n  %s --reason \"...\"\n  %s --reason \"...\"\n", d,
				hint(append([]string{"approve", d}, flags...)...), hint(append([]string{"reject", d}, flags...)...))
		}
	}
	switch {
	case werr != nil:
		fmt.Fprintf(stderr, "ora trace: wave %s: %v\n", id, werr)
	case wstatus != http.StatusOK && wstatus != http.StatusNotFound:
		fmt.Fprintf(stderr, "ora trace: wave %s: %d %s: %s\n", id, wstatus, http.StatusText(wstatus), apiErrorMessage(waveBody))
	}
	return 0
}

func marshalOrNull(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

const traceTime = "2006-01-02 15:04:05.000"

func printTraceSignal(w io.Writer, id string, raw json.RawMessage) {
	if cut := notServed(raw); cut != "" {
		fmt.Fprintf(w, "signal %s\n  %s\n\n", id, cut)
		return
	}
	var s ora.NormalizedSignal
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &s) != nil {
		fmt.Fprintf(w, "signal %s (no signal-received entry)\n\n", id)
		return
	}
	fmt.Fprintf(w, "signal %s\n", s.ID)
	fmt.Fprintf(w, "  source     %s\n", describeSource(s.Source))
	fmt.Fprintf(w, "  time       %s (normalized %s)\n", s.Timestamp.UTC().Format(traceTime), s.NormalizedAt.UTC().Format(traceTime))
	fmt.Fprintf(w, "  dedup key  %s\n", s.DedupKey)
	fmt.Fprintf(w, "  payload    %s\n\n", clipText(compactJSON(s.Payload), 100))
}

func describeSource(s ora.Source) string {
	parts := []string{string(s.Type)}
	add := func(label, v string) {
		if v != "" {
			parts = append(parts, label+v)
		}
	}
	add("", s.Name)
	if s.Provider != "" && s.Provider != s.Name {
		add("", "("+s.Provider+")")
	}
	add("event type ", s.EventType)
	add("job ", s.JobName)
	add("schedule ", s.Schedule)
	add("bucket ", s.Bucket)
	add("path ", s.Path)
	add("table ", s.Table)
	if s.EventType == "" {
		add("change ", s.Event)
	}
	return strings.Join(parts, " ")
}

func printTraceEntries(w io.Writer, entries []ora.Entry) {
	fmt.Fprintf(w, "ledger: %s\n", count(len(entries), "entry"))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TIME\tKIND\tQUALIFIER\tAUTHOR\tSUMMARY")
	for _, e := range entries {
		author := string(e.AuthorType)
		if author == "" {
			author = "-"
		}
		q := e.Qualifier
		if q == "" {
			q = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.CreatedAt.UTC().Format(traceTime), e.Kind, clipText(q, 56), author, summarizeEntry(e))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

// summarizeEntry is a one-line account of an entry's body.
func summarizeEntry(e ora.Entry) string {
	if cut := notServed(e.Body); cut != "" {
		return cut
	}
	s, err := entrySummary(e)
	if err != nil {
		s = "body: " + compactJSON(e.Body)
	}
	return clipText(strings.Join(strings.Fields(s), " "), 140)
}

func entrySummary(e ora.Entry) (string, error) {
	switch e.Kind {
	case ora.KindSignalReceived:
		var s ora.NormalizedSignal
		if err := json.Unmarshal(e.Body, &s); err != nil {
			return "", err
		}
		return describeSource(s.Source) + ", dedup " + s.DedupKey, nil
	case ora.KindObservedFact:
		facts, err := orient.FactsOf([]ora.Entry{e})
		if err != nil {
			return "", err
		}
		if len(facts) == 1 {
			f := facts[0]
			return fmt.Sprintf("%s %s, utility %.2f, %d tokens", f.SourceType, f.SourceRef, f.Utility, f.EstimatedTokens), nil
		}
		tokens, best := 0, 0.0
		for _, f := range facts {
			tokens += f.EstimatedTokens
			best = max(best, f.Utility)
		}
		var part orient.JobFacts
		_ = json.Unmarshal(e.Body, &part) // FactsOf read it
		return fmt.Sprintf("%s of job %s, utility up to %.2f, %s", count(len(facts), "fact"), part.JobID, best, count(tokens, "token")), nil
	case ora.KindOrientationPacket:
		var p ora.OrientationPacket
		if err := json.Unmarshal(e.Body, &p); err != nil {
			return "", err
		}
		facts := 0
		for _, b := range p.Bands {
			facts += len(b.Facts)
		}
		s := fmt.Sprintf("packet %s: %s in %s, %d/%d tokens, digest %s", p.ID, count(facts, "fact"), count(len(p.Bands), "band"), p.TokenUsed, p.TokenBudget, clipText(p.Digest, 12))
		if p.Truncated {
			s += ", truncated"
		}
		return s, nil
	case ora.KindReasonerDecision:
		var d ora.ReasonerDecision
		if err := json.Unmarshal(e.Body, &d); err != nil {
			return "", err
		}
		s := fmt.Sprintf("%s, confidence %.2f (%s band), tier %d", describeActions(d.Plan()), d.Confidence, d.Band(), d.Tier)
		if p := d.AppPatch; p != nil { // first: the summary is clipped
			s += fmt.Sprintf(", decided under the operator's %s patch of %s (sha256 %.12s)", p.Kind, p.Target, p.Digest)
		}
		return s + ": " + d.Reasoning, nil
	case ora.KindReviewRequested:
		var r struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(e.Body, &r); err != nil {
			return "", err
		}
		return "review requested: " + r.Reason, nil
	case ora.KindArchitectIntent:
		var in struct {
			DecisionID         string       `json:"decision_id"`
			Actions            []ora.Action `json:"actions"`
			Confidence         float64      `json:"confidence"`
			RequiresHumanAudit bool         `json:"requires_human_audit"`
		}
		if err := json.Unmarshal(e.Body, &in); err != nil {
			return "", err
		}
		s := fmt.Sprintf("intends %s, confidence %.2f", describeActions(in.Actions), in.Confidence)
		if in.RequiresHumanAudit {
			s = "awaits a human: " + s
		}
		return s, nil
	case ora.KindHumanVerdict:
		var v struct {
			Verdict string `json:"verdict"`
			Reason  string `json:"reason"`
			By      string `json:"by"`
		}
		if err := json.Unmarshal(e.Body, &v); err != nil {
			return "", err
		}
		return joinReason(v.Verdict+" by "+v.By, v.Reason), nil
	case ora.KindExecutionEvidence:
		var ev struct {
			Index     int      `json:"index"`
			Type      string   `json:"type"`
			Targets   []string `json:"targets"`
			Outcome   string   `json:"outcome"`
			ErrorType string   `json:"error_type"`
			Error     string   `json:"error"`
		}
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			return "", err
		}
		s := fmt.Sprintf("action %d %s: %s", ev.Index, ev.Type, ev.Outcome)
		if len(ev.Targets) > 0 {
			s += " -> " + strings.Join(ev.Targets, ", ")
		}
		if ev.ErrorType != "" || ev.Error != "" {
			s += " (" + strings.TrimPrefix(ev.ErrorType+": "+ev.Error, ": ") + ")"
		}
		return s, nil
	case ora.KindValidatorResult, ora.KindWitnessResult:
		var r ora.ValidatorResult
		if err := json.Unmarshal(e.Body, &r); err != nil {
			return "", err
		}
		s := fmt.Sprintf("%s %s: %s", r.Validator, r.Verdict, r.Summary)
		if r.Verdict == ora.Fail && r.Attribution != nil {
			s += " (responsible: " + string(r.Attribution.AuthorType) + ")"
		}
		return s, nil
	case ora.KindOperatorDecision:
		var r struct {
			Classification string `json:"classification"`
			Taxonomy       string `json:"taxonomy"`
			Stage          string `json:"stage"`
			Action         string `json:"action"`
			State          string `json:"state"`
			MotorVersion   string `json:"motor_version"`
			Result         string `json:"result"`
			Steps          []struct {
				Step   string `json:"step"`
				Result string `json:"result"`
			} `json:"steps"`
			Failure struct {
				Error string `json:"Error"`
				Cause string `json:"Cause"`
			} `json:"failure"`
		}
		if err := json.Unmarshal(e.Body, &r); err != nil {
			return "", err
		}
		switch q := e.Qualifier; {
		case strings.HasPrefix(q, "pause/"):
			return "paused: waiting for ora resume", nil
		case strings.HasPrefix(q, "redrive/"):
			var rd struct {
				By string `json:"by"`
			}
			_ = json.Unmarshal(e.Body, &rd)
			return fmt.Sprintf("redriven by %s (redrive %s): the execution continues at the state that did not finish", rd.By, strings.TrimPrefix(q, "redrive/")), nil
		case r.State != "": // a resume's lifecycle step, with what it did
			s := fmt.Sprintf("%s (motor %s)", r.State, r.MotorVersion)
			if r.Result != "" {
				s += ": " + r.Result
			}
			for _, st := range r.Steps {
				s += fmt.Sprintf("; %s: %s", st.Step, st.Result)
			}
			return s, nil
		}
		cause := r.Failure.Cause
		var lambdaErr struct {
			ErrorMessage string `json:"errorMessage"`
		}
		if json.Unmarshal([]byte(cause), &lambdaErr) == nil && lambdaErr.ErrorMessage != "" {
			cause = lambdaErr.ErrorMessage // a Lambda error's cause is its JSON
		}
		s := fmt.Sprintf("%s failure (%s): %s", r.Classification, r.Taxonomy, joinReason(r.Failure.Error, cause))
		if r.Stage != "" {
			s += fmt.Sprintf(" at %s; %s", r.Stage, r.Action)
		}
		return s, nil
	case ora.KindFinalVerdict:
		var v struct {
			Outcome    string                `json:"outcome"`
			Reason     string                `json:"reason"`
			Error      string                `json:"error"`
			Validators []ora.ValidatorResult `json:"validators"`
		}
		if err := json.Unmarshal(e.Body, &v); err != nil {
			return "", err
		}
		s := joinReason(v.Outcome, v.Reason)
		if v.Error != "" {
			s += " (" + v.Error + ")"
		}
		if len(v.Validators) > 0 {
			vs := make([]string, len(v.Validators))
			for i, r := range v.Validators {
				vs[i] = string(r.Validator) + " " + string(r.Verdict)
			}
			s += " (" + strings.Join(vs, ", ") + ")"
		}
		return s, nil
	}
	return "body: " + compactJSON(e.Body), nil
}

// awaitingHuman returns the decision an architect-intent put before a human
// that has neither a human verdict nor a final verdict yet, or "".
func awaitingHuman(entries []ora.Entry) string {
	pending := ""
	for _, e := range entries {
		switch e.Kind {
		case ora.KindArchitectIntent:
			var in struct {
				DecisionID         string `json:"decision_id"`
				RequiresHumanAudit bool   `json:"requires_human_audit"`
			}
			if json.Unmarshal(e.Body, &in) == nil && in.RequiresHumanAudit {
				pending = in.DecisionID
			}
		case ora.KindHumanVerdict, ora.KindFinalVerdict:
			pending = ""
		}
	}
	return pending
}

func describeActions(as []ora.Action) string {
	types := make([]string, len(as))
	for i, a := range as {
		types[i] = a.Type
	}
	return strings.Join(types, " + ")
}

func joinReason(s, reason string) string {
	if reason == "" {
		return s
	}
	return s + ": " + reason
}

func printTraceWave(w io.Writer, id string, status int, body []byte, err error) {
	switch {
	case err != nil:
		fmt.Fprintf(w, "wave %s: unavailable (%v)\n", id, err)
		return
	case status == http.StatusNotFound:
		fmt.Fprintf(w, "wave %s: not found (not started, or its history has expired)\n", id)
		return
	case status != http.StatusOK:
		fmt.Fprintf(w, "wave %s: unavailable (%d %s: %s)\n", id, status, http.StatusText(status), apiErrorMessage(body))
		return
	}
	var wave httpapi.Wave
	if err := json.Unmarshal(body, &wave); err != nil {
		fmt.Fprintf(w, "wave %s: the API answered something that is not a wave: %v\n", id, err)
		return
	}
	fmt.Fprintf(w, "wave %s: %s\n", id, wave.Status)
	if wave.Error != "" {
		fmt.Fprintf(w, "  error   %s\n", wave.Error)
	}
	if wave.Cause != "" {
		fmt.Fprintf(w, "  cause   %s\n", clipText(strings.Join(strings.Fields(wave.Cause), " "), 200))
	}
	if len(wave.Output) > 0 && string(wave.Output) != "null" {
		fmt.Fprintf(w, "  output  %s\n", clipText(compactJSON(wave.Output), 200))
	}
	if states, took := waveStates(wave.History); states != "" {
		fmt.Fprintf(w, "  states  %s\n", states)
		if took > 0 {
			fmt.Fprintf(w, "  took    %s\n", took)
		}
	}
}

// waveStates lists the states the wave entered, in first-entered order
// with how often each was entered when more than once, and the time from the
// first event to the last.
func waveStates(raw json.RawMessage) (string, time.Duration) {
	var events []struct {
		Timestamp time.Time `json:"timestamp"`
		Entered   *struct {
			Name string `json:"name"`
		} `json:"stateEnteredEventDetails"`
	}
	if json.Unmarshal(raw, &events) != nil || len(events) == 0 {
		return "", 0
	}
	var order []string
	count := map[string]int{}
	for _, e := range events {
		if e.Entered == nil || e.Entered.Name == "" {
			continue
		}
		if count[e.Entered.Name] == 0 {
			order = append(order, e.Entered.Name)
		}
		count[e.Entered.Name]++
	}
	for i, n := range order {
		if count[n] > 1 {
			order[i] = fmt.Sprintf("%s (x%d)", n, count[n])
		}
	}
	first, last := events[0].Timestamp, events[len(events)-1].Timestamp
	var took time.Duration
	if !first.IsZero() && last.After(first) {
		took = last.Sub(first).Round(time.Millisecond)
	}
	return strings.Join(order, " > "), took
}

// compactJSON is JSON on one line, or the bytes as they are.
func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return strings.TrimSpace(string(b))
	}
	return buf.String()
}

// clipText shortens s to n runes, marking the cut.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}

// count words n things in English: "1 fact", "2 facts", "1 entry", "3 entries".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// notServed says why a body the API left out (one nested deeper than
// httpapi.ServedDepth) is not shown, "" for any other body.
func notServed(raw json.RawMessage) string {
	var m struct {
		Truncated string `json:"truncated"`
		Bytes     int    `json:"bytes"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Truncated == "" || m.Bytes == 0 {
		return ""
	}
	return fmt.Sprintf("body of %d bytes %s (the console's raw link serves it)", m.Bytes, m.Truncated)
}
