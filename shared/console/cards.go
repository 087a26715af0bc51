package console

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/httpapi"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// Summary is the wave page's header: what came in, what was decided, what
// ran and how it ended.
type Summary struct {
	Event, Source, Received string
	Actions                 []ActionSummary
	Band, Confidence        string
	DecidedBy               string
	Outcome                 string // completed, rejected, failed, in progress, waiting for a human
	Reason                  string // a rejection's reason, a failure's error
	Checks                  []Check
	Duration                string
}

// Check is one validator's verdict.
type Check struct {
	Name, Verdict, Summary, Responsible string
}

// Card is one ledger entry, or the orientation's entries grouped, as the
// wave page shows it.
type Card struct {
	Kind, Title, Time, Author string
	Badge, BadgeClass         string // a verdict or outcome, and its style
	Facts                     [][2]string
	Text                      string
	Blocks                    []Block
	Links                     []Link
	Checks                    []Check
	Bands                     []BandView
	Top                       []FactView // the packet's highest-utility facts
	Items                     []Card     // the orientation group's entries
	Raw                       httpapi.Rendering
	RawURL                    string
	Incident                  bool
	check                     *Check // a validator's, for its group
}

// Block is a JSON body shown pretty-printed within the size bound.
type Block struct {
	Label string
	Body  httpapi.Rendering
	URL   string // the raw body, when truncated
}

// Link points at what an action touched.
type Link struct {
	Label, URL string
	Text       string // shown when there is no URL
}

// BandView is one band of an orientation packet.
type BandView struct {
	Band            string
	UsedTokens, Max int
	Facts           []FactView
}

// FactView is one fact of a packet.
type FactView struct {
	Source  string
	Ref     string
	Utility string
	Tokens  int
	utility float64
}

// topFacts is how many of a packet's facts the orientation card lists.
const topFacts = 5

var titles = map[ora.EntryKind]string{
	ora.KindSignalReceived:      "Signal",
	ora.KindObservedFact:        "Facts observed",
	ora.KindOrientationPacket:   "Packet compiled",
	ora.KindOrientationPin:      "Profile pinned",
	ora.KindOrientationAudit:    "Audit",
	ora.KindOrientationFeedback: "Feedback",
	ora.KindOrientationProfile:  "Profile",
	ora.KindProfileProposal:     "Profile proposal",
	ora.KindProposalDecision:    "Proposal decision",
	ora.KindReasonerDecision:    "Decision",
	ora.KindReviewRequested:     "Review requested",
	ora.KindArchitectIntent:     "Escalated to a human",
	ora.KindHumanVerdict:        "Human verdict",
	ora.KindExecutionEvidence:   "Action",
	ora.KindValidatorResult:     "Validator verdict",
	ora.KindWitnessResult:       "Witness verdict",
	ora.KindOperatorDecision:    "Operator incident",
	ora.KindFinalVerdict:        "Final verdict",
}

// orientation reports whether an entry kind belongs to the orientation
// group: the work before the decision, internal to ora.
func orientation(k ora.EntryKind) bool {
	switch k {
	case ora.KindObservedFact, ora.KindOrientationPacket, ora.KindOrientationPin, ora.KindOrientationAudit,
		ora.KindOrientationFeedback, ora.KindOrientationProfile, ora.KindProfileProposal, ora.KindProposalDecision:
		return true
	}
	return false
}

// decoded bodies of the entries the cards read.
type (
	signalBody struct {
		Source  ora.Source      `json:"source"`
		Payload json.RawMessage `json:"payload"`
	}
	evidenceBody struct {
		Index      int             `json:"index"`
		Type       string          `json:"type"`
		Parameters json.RawMessage `json:"parameters"`
		Outcome    string          `json:"outcome"`
		ErrorType  string          `json:"error_type"`
		Error      string          `json:"error"`
		Receipt    *struct {
			Target     string `json:"target"`
			ID         string `json:"id"`
			StatusCode int    `json:"status_code"`
			Digest     string `json:"digest"`
			Error      string `json:"error"`
			OutputRef  string `json:"output_ref"`
		} `json:"receipt"`
	}
	verdictBody struct {
		Outcome    string          `json:"outcome"`
		Reason     string          `json:"reason"`
		Error      string          `json:"error"`
		Validators []validatorBody `json:"validators"`
		Actions    []struct {
			Index   int    `json:"index"`
			Type    string `json:"type"`
			Outcome string `json:"outcome"`
			Error   string `json:"error"`
		} `json:"actions"`
	}
	validatorBody struct {
		Validator   string `json:"validator"`
		Verdict     string `json:"verdict"`
		Summary     string `json:"summary"`
		Attribution struct {
			AuthorType     string `json:"author_type"`
			ResponsibleFor string `json:"responsible_for"`
		} `json:"attribution"`
	}
	humanBody struct {
		Verdict, Reason, By string
	}
)

func (v validatorBody) check() Check {
	return Check{Name: v.Validator, Verdict: v.Verdict, Summary: v.Summary, Responsible: v.Attribution.ResponsibleFor}
}

// summarize reads the header from the ledger and the run.
func summarize(entries []ora.Entry, wr waveRun, now time.Time) Summary {
	s := Summary{Duration: waveDuration(wr.wave.History, wr.wave.Status, now)}
	var verdict *verdictBody
	waiting := false
	for _, e := range entries {
		switch e.Kind {
		case ora.KindSignalReceived:
			var b signalBody
			if json.Unmarshal(e.Body, &b) == nil {
				s.Event, s.Source = b.Source.EventType, b.Source.Name
			}
			if s.Source == "" {
				s.Source = e.Meta["source"]
			}
			s.Received = e.CreatedAt.UTC().Format("2006-01-02 15:04:05")
		case ora.KindReasonerDecision:
			var d ora.ReasonerDecision
			if json.Unmarshal(e.Body, &d) == nil {
				s.Actions = nil
				for _, a := range d.Plan() {
					s.Actions = append(s.Actions, ActionSummary{Type: a.Type})
				}
				s.Band, s.Confidence = string(d.Band()), fmt.Sprintf("%.2f", d.Confidence)
				s.DecidedBy = string(d.AuthorType)
				if d.RulesVersion != "" && d.Model == nil {
					s.DecidedBy = "rules " + d.RulesVersion
				} else if d.Model != nil {
					s.DecidedBy = d.Model.ModelID
				}
			}
		case ora.KindArchitectIntent:
			waiting = true
		case ora.KindHumanVerdict:
			waiting = false
		case ora.KindExecutionEvidence:
			var b evidenceBody
			if json.Unmarshal(e.Body, &b) == nil && b.Index < len(s.Actions) {
				s.Actions[b.Index].Outcome = b.Outcome
			}
		case ora.KindFinalVerdict:
			var v verdictBody
			if json.Unmarshal(e.Body, &v) == nil {
				verdict = &v
			}
		}
	}
	switch {
	case verdict != nil:
		s.Outcome, s.Reason = verdict.Outcome, firstOf(verdict.Reason, verdict.Error)
		for _, v := range verdict.Validators {
			s.Checks = append(s.Checks, v.check())
		}
		for _, a := range verdict.Actions {
			if a.Index < len(s.Actions) && s.Actions[a.Index].Type == a.Type {
				s.Actions[a.Index].Outcome = a.Outcome
			}
		}
	case wr.wave.Status == "RUNNING" && waiting:
		s.Outcome = "waiting for a human"
	case wr.wave.Status == "RUNNING":
		s.Outcome = OutcomeInProgress
	default:
		s.Outcome = outcome(wr.wave.Status, ended{}, false)
		s.Reason = strings.TrimSpace(wr.wave.Error + " " + wr.wave.Cause)
	}
	if s.Event == "" {
		s.Event = s.Source
	}
	return s
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// groupOf is the card an entry kind is grouped under: the orientation's
// internal entries, and the validators' verdicts with the final verdict;
// "" for a card of its own.
func groupOf(k ora.EntryKind) string {
	switch {
	case orientation(k):
		return "orientation"
	case k == ora.KindValidatorResult || k == ora.KindWitnessResult || k == ora.KindFinalVerdict:
		return "verdict"
	}
	return ""
}

// cards renders the ledger: one card per entry, the orientation's entries
// grouped in one card, the validators' verdicts and the final verdict in
// another, each where the first of its entries stands. linkObjects links
// the objects that object.put receipts name (the console's object route).
func cards(id string, entries []ora.Entry, linkObjects bool) []Card {
	var out []Card
	groups := map[string]int{}
	for i, e := range entries {
		c := card(id, i, e, linkObjects)
		name := groupOf(e.Kind)
		if name == "" {
			out = append(out, c)
			continue
		}
		at, ok := groups[name]
		if !ok {
			at, groups[name] = len(out), len(out)
			g := Card{Kind: name, Title: "Orientation", Time: c.Time, Author: "orientation"}
			if name == "verdict" {
				g.Title, g.Author, g.Badge, g.BadgeClass = "Verdict", "", "pending", "f-in-progress"
			}
			out = append(out, g)
		}
		g := &out[at]
		g.Items = append(g.Items, c)
		switch e.Kind {
		case ora.KindOrientationPacket:
			g.Facts, g.Bands, g.Top = c.Facts, c.Bands, c.Top
		case ora.KindFinalVerdict:
			g.Badge, g.BadgeClass, g.Text, g.Facts, g.Time = c.Badge, c.BadgeClass, c.Text, c.Facts, c.Time
			g.Checks = c.Checks
		case ora.KindValidatorResult, ora.KindWitnessResult:
			if !hasFinal(g.Items) && c.check != nil {
				g.Checks = append(g.Checks, *c.check)
			}
		}
	}
	if at, ok := groups["orientation"]; ok {
		facts := 0
		for _, it := range out[at].Items {
			if it.Kind == string(ora.KindObservedFact) {
				for _, f := range it.Facts {
					if f[0] == "facts" {
						n, _ := strconv.Atoi(f[1])
						facts += n
					}
				}
			}
		}
		if facts > 0 {
			out[at].Facts = append(out[at].Facts, [2]string{"facts observed", strconv.Itoa(facts)})
		}
	}
	return out
}

func hasFinal(items []Card) bool {
	for _, it := range items {
		if it.Kind == string(ora.KindFinalVerdict) {
			return true
		}
	}
	return false
}

// card renders entry i; linkObjects links the objects receipts name.
func card(id string, i int, e ora.Entry, linkObjects bool) Card {
	c := Card{Kind: string(e.Kind), Author: string(e.AuthorType), Title: titles[e.Kind],
		Time: e.CreatedAt.UTC().Format("15:04:05.000"), Raw: pretty(e.Body),
		RawURL: "/console/waves/" + url.PathEscape(id) + "/raw?entry=" + strconv.Itoa(i)}
	if c.Title == "" {
		c.Title = strings.ReplaceAll(string(e.Kind), "-", " ")
	}
	add := func(label, value string) {
		if value != "" {
			c.Facts = append(c.Facts, [2]string{label, value})
		}
	}
	block := func(label string, body json.RawMessage) {
		if len(body) > 0 && string(body) != "null" {
			c.Blocks = append(c.Blocks, Block{Label: label, Body: pretty(body), URL: c.RawURL})
		}
	}
	switch e.Kind {
	case ora.KindSignalReceived:
		var b signalBody
		if json.Unmarshal(e.Body, &b) == nil {
			add("event type", b.Source.EventType)
			add("source", strings.TrimSpace(b.Source.Name+" ("+string(b.Source.Type)+", "+b.Source.Provider+")"))
			add("path", b.Source.Path)
			add("schedule", b.Source.Schedule)
			block("Payload", b.Payload)
		}
	case ora.KindObservedFact:
		c.Title += ": " + e.Meta["job_id"]
		add("facts", e.Meta["facts"])
	case ora.KindOrientationPin:
		var b struct {
			ProfileID string `json:"profile_id"`
			Version   int    `json:"orientation_profile_version"`
		}
		if json.Unmarshal(e.Body, &b) == nil {
			c.Text = fmt.Sprintf("profile %s v%d", b.ProfileID, b.Version)
		}
	case ora.KindOrientationAudit:
		var b struct{ Action, Actor, Result string }
		if json.Unmarshal(e.Body, &b) == nil {
			c.Title += ": " + b.Action
			c.Text = strings.TrimSpace(b.Actor + " " + b.Result)
		}
	case ora.KindOrientationPacket:
		var p ora.OrientationPacket
		if json.Unmarshal(e.Body, &p) == nil {
			add("tokens", fmt.Sprintf("%d of %d", p.TokenUsed, p.TokenBudget))
			add("profile", fmt.Sprintf("%s v%d", p.ProfileID, p.ProfileVersion))
			if p.Truncated {
				add("truncated", "yes")
			}
			var all []FactView
			for _, b := range p.Bands {
				bv := BandView{Band: string(b.Band), UsedTokens: b.UsedTokens, Max: b.MaxTokens}
				for _, f := range b.Facts {
					fv := FactView{Source: f.SourceType, Ref: f.SourceRef, Utility: fmt.Sprintf("%.2f", f.Utility), Tokens: f.EstimatedTokens, utility: f.Utility}
					bv.Facts = append(bv.Facts, fv)
					all = append(all, fv)
				}
				c.Bands = append(c.Bands, bv)
			}
			sort.SliceStable(all, func(i, j int) bool { return all[i].utility > all[j].utility })
			c.Top = all[:min(len(all), topFacts)]
		}
	case ora.KindReasonerDecision:
		var d ora.ReasonerDecision
		if json.Unmarshal(e.Body, &d) == nil {
			var types []string
			for _, a := range d.Plan() {
				types = append(types, a.Type)
			}
			c.Title += ": " + strings.Join(types, ", ")
			add("confidence", fmt.Sprintf("%.2f (%s), tier %d", d.Confidence, d.Band(), d.Tier))
			add("rules version", d.RulesVersion)
			if d.MotorVersion != d.RulesVersion {
				add("motor version", d.MotorVersion)
			}
			if p := d.AppPatch; p != nil {
				add("app patch", fmt.Sprintf("%s of %s = %s (sha256 %.12s), supplied with the resume", p.Kind, p.Target, p.Value, p.Digest))
			}
			if d.Model != nil {
				add("model", d.Model.ModelID)
				add("model tokens", fmt.Sprintf("%d in, %d out", d.Model.Usage.InputTokens, d.Model.Usage.OutputTokens))
				add("model cost", fmt.Sprintf("$%.6f", d.Model.CostUSD))
			}
			c.Text = d.Reasoning
			for i, a := range d.Plan() {
				label := "Parameters of " + a.Type
				if len(a.DependsOn) > 0 {
					label += fmt.Sprintf(" (after %v)", a.DependsOn)
				}
				if len(d.Plan()) > 1 {
					label = fmt.Sprintf("%d. %s", i+1, label)
				}
				block(label, a.Parameters)
			}
		}
	case ora.KindReviewRequested:
		var b struct{ Reason string }
		if json.Unmarshal(e.Body, &b) == nil {
			c.Text = b.Reason
		}
	case ora.KindArchitectIntent:
		// The decision's card shows its actions and reasoning.
		var b struct{ Attempt int }
		if json.Unmarshal(e.Body, &b) == nil && b.Attempt > 1 {
			add("attempt", strconv.Itoa(b.Attempt))
		}
		c.Text = "Sent to a human for a verdict."
	case ora.KindHumanVerdict:
		var h humanBody
		if json.Unmarshal(e.Body, &h) == nil {
			c.Badge, c.BadgeClass = h.Verdict, "v-"+strings.ToLower(h.Verdict)
			add("by", h.By)
			c.Text = h.Reason
		}
	case ora.KindExecutionEvidence:
		var b evidenceBody
		if json.Unmarshal(e.Body, &b) == nil {
			c.Title = fmt.Sprintf("Action %d: %s", b.Index+1, b.Type)
			c.Badge, c.BadgeClass = b.Outcome, "o-"+b.Outcome
			add("error", strings.TrimSpace(b.ErrorType+" "+b.Error))
			if rc := b.Receipt; rc != nil {
				l := receiptLink(rc.Target)
				if b.Type == objectPut && linkObjects && rc.Target != "" {
					l.URL, l.Text = "/console/waves/"+url.PathEscape(id)+"/object?entry="+strconv.Itoa(i), rc.Target
				}
				c.Links = append(c.Links, l)
				add("receipt id", rc.ID)
				if rc.StatusCode != 0 {
					add("status code", strconv.Itoa(rc.StatusCode))
				}
				add("receipt error", rc.Error)
				if rc.OutputRef != "" {
					c.Links = append(c.Links, Link{Label: "output", Text: rc.OutputRef})
				}
			}
			// The parameters are the decision's (its card shows them) and
			// stay in the raw body.
		}
	case ora.KindValidatorResult, ora.KindWitnessResult:
		var v validatorBody
		if json.Unmarshal(e.Body, &v) == nil {
			c.Title += ": " + v.Validator
			c.Badge, c.BadgeClass = v.Verdict, "v-"+v.Verdict
			c.Text = v.Summary
			add("checks", v.Attribution.ResponsibleFor)
			ck := v.check()
			c.check = &ck
		}
	case ora.KindFinalVerdict:
		var v verdictBody
		if json.Unmarshal(e.Body, &v) == nil {
			c.Badge, c.BadgeClass = v.Outcome, "f-"+v.Outcome
			c.Text = firstOf(v.Reason, v.Error)
			for _, val := range v.Validators {
				c.Checks = append(c.Checks, val.check())
			}
			for _, a := range v.Actions {
				add(fmt.Sprintf("action %d: %s", a.Index+1, a.Type), strings.TrimSpace(a.Outcome+" "+a.Error))
			}
		}
	case ora.KindOperatorDecision:
		c.Incident = true
		generic(e.Body, add)
	default:
		generic(e.Body, add)
	}
	return c
}

// generic lists a body's top-level strings, the secret-named ones left out.
func generic(body []byte, add func(label, value string)) {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s, ok := m[k].(string); ok && !telemetry.Sensitive(k) && len(s) < 200 {
			add(strings.ReplaceAll(k, "_", " "), s)
		}
	}
}

// receiptLink links what an action touched: a URL as it is; anything else
// (an object key, a commitment, a topic) as text to copy.
func receiptLink(target string) Link {
	if u, err := url.Parse(target); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		return Link{Label: "target", URL: target}
	}
	return Link{Label: "target", Text: target}
}

// OutcomeClass is the outcome as a CSS class name.
func (s Summary) OutcomeClass() string { return "f-" + strings.ReplaceAll(s.Outcome, " ", "-") }
