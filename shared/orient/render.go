package orient

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// DefaultViewTokens is the default size of a packet's view: the part of a
// model's request the packet takes, in estimated tokens (4 characters each).
const DefaultViewTokens = 8000

// noteChars is the room a band keeps for saying how many facts it left out.
const noteChars = 48

// viewPayloadChars bounds the payload excerpt of one related signal or
// action in a view.
const viewPayloadChars = 320

// View is the compact rendering of an orientation packet that a model reads:
// one line per fact, grouped by band; provenance, fact ids and digests are
// left out (they stay in the ledger's packet); repeated lines (the same
// verdict, the same action with the same outcome) are one line with a count
// and the time range; related signals and actions carry an excerpt of their
// payload. Digest is the sha256 of Text: what the model saw, exactly. A view
// is a pure function of the packet and MaxTokens, so Verify can render the
// replayed packet again and compare digests.
type View struct {
	Text      string `json:"-"`
	Digest    string `json:"digest_sha256"`
	MaxTokens int    `json:"max_tokens"`
	// Facts is the number of facts in the packet, Shown the number whose
	// line (alone or aggregated) made it into the view.
	Facts int `json:"facts"`
	Shown int `json:"shown"`
}

// Tokens is the view's size in estimated tokens.
func (v View) Tokens() int { return EstimateTokens([]byte(v.Text)) }

// viewLine is one rendered fact: its text without the parts that vary
// between repeats (key), the time it happened and its band.
type viewLine struct {
	key string
	at  time.Time
}

// Render returns the view of p within maxTokens (<= 0: DefaultViewTokens).
// Bands keep the packet's order; within a band, facts keep theirs (utility,
// then time). Each band first gets a share of the room in proportion to its
// max_tokens, then the room left over goes to the bands still short, in
// order; a band that could not show every line says how many it left out.
func Render(p ora.OrientationPacket, maxTokens int) View {
	if maxTokens <= 0 {
		maxTokens = DefaultViewTokens
	}
	var b strings.Builder
	facts := 0
	for _, band := range p.Bands {
		facts += len(band.Facts)
	}
	fmt.Fprintf(&b, "profile %s v%d; %d facts, %d of %d tokens", p.ProfileID, p.ProfileVersion, facts, p.TokenUsed, p.TokenBudget)
	if p.Truncated {
		b.WriteString("; truncated: some facts were left out for room")
	}
	b.WriteString("\n")
	room := maxTokens*4 - b.Len()

	type section struct {
		name   ora.Band
		lines  []string
		counts []int // facts behind each line
		weight int
		take   int // lines shown
		used   int // characters shown
	}
	secs := make([]*section, 0, len(p.Bands))
	total := 0
	for _, band := range p.Bands {
		if len(band.Facts) == 0 {
			continue
		}
		lines, counts := renderBand(band.Facts)
		s := &section{name: band.Band, lines: lines, counts: counts, weight: max(1, band.MaxTokens)}
		secs = append(secs, s)
		total += s.weight
		room -= len(band.Band) + 3 + noteChars // its heading, and room for a note of what it left out
	}
	// Pass 1: each band's share; pass 2: what is left, in band order.
	left := room
	for _, s := range secs {
		share := room * s.weight / max(1, total)
		for s.take < len(s.lines) && s.used+len(s.lines[s.take])+1 <= share {
			s.used += len(s.lines[s.take]) + 1
			s.take++
		}
		left -= s.used
	}
	for _, s := range secs {
		for s.take < len(s.lines) && len(s.lines[s.take])+1 <= left {
			left -= len(s.lines[s.take]) + 1
			s.take++
		}
	}
	shown := 0
	for _, s := range secs {
		fmt.Fprintf(&b, "[%s]\n", s.name)
		for i := 0; i < s.take; i++ {
			b.WriteString(s.lines[i])
			b.WriteString("\n")
			shown += s.counts[i]
		}
		if s.take < len(s.lines) {
			hidden := 0
			for _, c := range s.counts[s.take:] {
				hidden += c
			}
			fmt.Fprintf(&b, "(%d more %s facts not shown)\n", hidden, s.name)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return View{Text: b.String(), Digest: hex.EncodeToString(sum[:]), MaxTokens: maxTokens, Facts: facts, Shown: shown}
}

// renderBand renders a band's facts, aggregating lines whose key repeats:
// the first occurrence's place keeps the line, with "xN" and the time range.
func renderBand(facts []ora.Fact) ([]string, []int) {
	var order []string
	groups := map[string][]time.Time{}
	for i := range facts {
		l := renderFact(&facts[i])
		if _, ok := groups[l.key]; !ok {
			order = append(order, l.key)
		}
		groups[l.key] = append(groups[l.key], l.at)
	}
	lines := make([]string, len(order))
	counts := make([]int, len(order))
	for i, key := range order {
		ts := groups[key]
		counts[i] = len(ts)
		var known []time.Time
		for _, t := range ts {
			if !t.IsZero() {
				known = append(known, t)
			}
		}
		sort.Slice(known, func(a, b int) bool { return known[a].Before(known[b]) })
		switch {
		case len(ts) > 1 && len(known) > 0:
			lines[i] = fmt.Sprintf("- %dx %s (%s .. %s)", len(ts), key, stamp(known[0]), stamp(known[len(known)-1]))
		case len(ts) > 1:
			lines[i] = fmt.Sprintf("- %dx %s", len(ts), key)
		case len(known) > 0:
			lines[i] = fmt.Sprintf("- %s %s", stamp(known[0]), key)
		default:
			lines[i] = "- " + key
		}
	}
	return lines, counts
}

// stamp writes a time to the minute, in UTC.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04Z") }

// renderFact renders one fact by its source type; a type it does not know
// is its source type and its normalized body, compact and cut short.
func renderFact(f *ora.Fact) viewLine {
	switch f.SourceType {
	case SourceSignal:
		var s struct {
			SignalID  string     `json:"signal_id"`
			Source    ora.Source `json:"source"`
			Timestamp time.Time  `json:"timestamp"`
		}
		if json.Unmarshal(f.Normalized, &s) == nil {
			return viewLine{key: "this signal " + s.SignalID + " from " + DescribeSource(s.Source), at: s.Timestamp}
		}
	case string(JobOpenCommitments):
		var c struct {
			ID       string          `json:"id"`
			Title    string          `json:"title"`
			Status   string          `json:"status"`
			OpenedAt time.Time       `json:"opened_at"`
			Origin   string          `json:"origin_signal_id"`
			Body     json.RawMessage `json:"body"`
		}
		if json.Unmarshal(f.Normalized, &c) == nil {
			key := fmt.Sprintf("commitment %s %q %s, opened by signal %s", c.ID, c.Title, c.Status, c.Origin)
			if ex := excerpt(c.Body); ex != "" {
				key += ": " + ex
			}
			return viewLine{key: key, at: c.OpenedAt}
		}
	case string(JobWorkspaceState):
		var s struct {
			Source    ora.Source      `json:"source"`
			Timestamp time.Time       `json:"timestamp"`
			Payload   json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(f.Normalized, &s) == nil {
			key := "signal from " + DescribeSource(s.Source)
			if ex := excerpt(s.Payload); ex != "" {
				key += ": " + ex
			}
			return viewLine{key: key, at: s.Timestamp}
		}
	case string(JobRecentActions), string(JobActorHistory):
		var e struct {
			Body      json.RawMessage `json:"body"`
			CreatedAt time.Time       `json:"created_at"`
			Kind      ora.EntryKind   `json:"kind"`
		}
		if json.Unmarshal(f.Normalized, &e) == nil {
			if f.SourceType == string(JobRecentActions) {
				return viewLine{key: "action " + action(e.Body), at: e.CreatedAt}
			}
			return viewLine{key: "verdict " + verdict(e.Body), at: e.CreatedAt}
		}
	}
	key := f.SourceType
	if ex := excerpt(f.Normalized); ex != "" {
		key += ": " + ex
	}
	return viewLine{key: key, at: f.CreatedAt}
}

// DescribeSource names a source in a few words: its type and the fields it
// has (name, event type, schedule, job, bucket, path, table, event).
func DescribeSource(s ora.Source) string {
	parts := []string{string(s.Type)}
	for _, v := range []string{s.Name, s.EventType, s.Schedule, s.JobName, s.Bucket, s.Path, s.Table, s.Event} {
		if v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " ")
}

// action renders an execution's evidence: type, outcome, targets, error and
// an excerpt of its parameters.
func action(body json.RawMessage) string {
	var ev struct {
		Type       string          `json:"type"`
		Parameters json.RawMessage `json:"parameters"`
		Targets    []string        `json:"targets"`
		Outcome    string          `json:"outcome"`
		ErrorType  string          `json:"error_type"`
		Error      string          `json:"error"`
	}
	if json.Unmarshal(body, &ev) != nil || ev.Type == "" {
		return excerpt(body)
	}
	s := ev.Type + " " + ev.Outcome
	if len(ev.Targets) > 0 {
		s += " on " + strings.Join(ev.Targets, ",")
	}
	if ev.ErrorType != "" || ev.Error != "" {
		s += " (" + strings.TrimSpace(ev.ErrorType+" "+cut(ev.Error, 160)) + ")"
	}
	if ex := excerpt(ev.Parameters); ex != "" && ex != "{}" {
		s += " " + ex
	}
	return s
}

// verdict renders a wave's final verdict: its outcome, each validator's
// verdict (in name order) and its reason or error, without the ids.
func verdict(body json.RawMessage) string {
	var v struct {
		Outcome    string `json:"outcome"`
		Reason     string `json:"reason"`
		Error      string `json:"error"`
		Validators []struct {
			Validator string `json:"validator"`
			Verdict   string `json:"verdict"`
			Summary   string `json:"summary"`
		} `json:"validators"`
	}
	if json.Unmarshal(body, &v) != nil || v.Outcome == "" {
		return excerpt(body)
	}
	s := v.Outcome
	sort.SliceStable(v.Validators, func(i, j int) bool { return v.Validators[i].Validator < v.Validators[j].Validator })
	for _, r := range v.Validators {
		s += " " + r.Validator + "=" + r.Verdict
		if r.Verdict != string(ora.Pass) && r.Summary != "" {
			s += " (" + cut(r.Summary, 160) + ")"
		}
	}
	if v.Error != "" {
		s += " error " + v.Error
	}
	if v.Reason != "" {
		s += ": " + cut(v.Reason, 200)
	}
	return s
}

// excerpt is a JSON body compacted and cut to viewPayloadChars; a body kept
// by reference (body_digest) says only its size.
func excerpt(b json.RawMessage) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return ""
	}
	var ref struct {
		Digest  string `json:"body_digest"`
		Bytes   int    `json:"body_bytes"`
		Excerpt string `json:"excerpt"`
	}
	if b[0] == '{' && json.Unmarshal(b, &ref) == nil && ref.Digest != "" {
		if ref.Excerpt != "" {
			return cut(ref.Excerpt, viewPayloadChars)
		}
		return fmt.Sprintf("(body of %d bytes, in the ledger)", ref.Bytes)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return cut(string(b), viewPayloadChars)
	}
	return cut(buf.String(), viewPayloadChars)
}

// cut shortens s to n bytes (on a rune boundary), marking the cut.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8Start(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

// Merge is the shared packet of a batch of waves reasoned together: the
// first packet's bands and facts, then each later packet's facts that no
// earlier one had (by dedupe key, else source type and content). Signals of
// one source arriving within a batch window read nearly the same ledger, so
// the merged packet is little larger than one; each signal's own identity
// fact is kept. It is a pure function of the packets in batch order, so
// Verify can merge them again.
func Merge(packets []ora.OrientationPacket) ora.OrientationPacket {
	out := ora.OrientationPacket{ID: "batch"}
	if len(packets) > 0 {
		out.ProfileID, out.ProfileVersion = packets[0].ProfileID, packets[0].ProfileVersion
	}
	index := map[ora.Band]int{}
	seen := map[string]bool{}
	for _, p := range packets {
		out.TokenBudget = max(out.TokenBudget, p.TokenBudget)
		out.Truncated = out.Truncated || p.Truncated
		for _, band := range p.Bands {
			i, ok := index[band.Band]
			if !ok {
				i = len(out.Bands)
				index[band.Band] = i
				out.Bands = append(out.Bands, ora.PacketBand{BandBudget: band.BandBudget})
			}
			for _, f := range band.Facts {
				key := f.DedupeKey
				if key == "" {
					key = f.SourceType + "\x00" + string(f.Normalized)
				}
				if seen[key] {
					continue
				}
				seen[key] = true
				out.Bands[i].Facts = append(out.Bands[i].Facts, f)
				out.Bands[i].UsedTokens += f.EstimatedTokens
				out.TokenUsed += f.EstimatedTokens
			}
		}
	}
	return out
}
