package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/ora"
)

// technical checks that every planned action has success evidence and that
// its receipt agrees with the world.
func (s *Service) technical(ctx context.Context, w act.Wave, _ settings) ([]string, error) {
	var problems []string
	plan := w.Decision.Plan()
	var open map[string]bool
	for i, a := range plan {
		ev, ok := w.Evidence[i]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("action %d (%s): no evidence", i, a.Type))
			continue
		case ev.Outcome != act.OutcomeSuccess:
			problems = append(problems, fmt.Sprintf("action %d (%s): outcome %s: %s", i, a.Type, ev.Outcome, ev.Error))
			continue
		case ev.ResolvedBy != "":
			// The outcome was unknown and an operator said the action ran:
			// their word is the evidence; the receipt holds no answer to check.
			continue
		case ev.Receipt == nil:
			problems = append(problems, fmt.Sprintf("action %d (%s): no receipt", i, a.Type))
			continue
		case ev.Receipt.Type != a.Type || ev.Type != a.Type:
			problems = append(problems, fmt.Sprintf("action %d: receipt for %q, planned %q", i, ev.Receipt.Type, a.Type))
			continue
		}
		r := *ev.Receipt
		switch a.Type {
		case act.TypeHTTPRequest:
			if !act.HTTPOK(r) {
				problems = append(problems, fmt.Sprintf("action %d (http.request): status %d is not 2xx", i, r.StatusCode))
			}
		case act.TypeFunctionInvoke:
			// The output ora read is the proof: its digest must be the
			// receipt's (when it is kept inline and whole).
			if r.Output != "" && !r.OutputTruncated && ora.Digest([]byte(r.Output)) != r.Digest {
				problems = append(problems, fmt.Sprintf("action %d (function.invoke): the output's digest differs from the receipt's %s", i, r.Digest))
			}
		case act.TypeMCPCall:
			// The tool answered (a digest of its result) and the receipt
			// names the tool the decision planned.
			var p act.MCPParams
			_ = json.Unmarshal(a.Parameters, &p)
			if want := "mcp://" + p.Server + "/" + p.Tool; r.OutputDigest == "" || r.Target != want {
				problems = append(problems, fmt.Sprintf("action %d (mcp.call): receipt for %q with result digest %q, planned %q", i, r.Target, r.OutputDigest, want))
			}
		case act.TypeNotify:
			if r.ID == "" {
				problems = append(problems, fmt.Sprintf("action %d (notify): no message id", i))
			}
		case act.TypeObjectPut:
			if s.o.Objects == nil {
				problems = append(problems, fmt.Sprintf("action %d (object.put): no object store to check %q", i, r.Target))
				continue
			}
			info, err := s.o.Objects.HeadObject(ctx, r.Target)
			switch {
			case ora.ErrorCode(err) == ora.ENOTFOUND:
				problems = append(problems, fmt.Sprintf("action %d (object.put): object %q does not exist", i, r.Target))
			case err != nil:
				return nil, fmt.Errorf("head object %s: %w", r.Target, err)
			case r.Digest != "" && info.Digest != r.Digest:
				problems = append(problems, fmt.Sprintf("action %d (object.put): object %q holds digest %s, the receipt claims %s", i, r.Target, info.Digest, r.Digest))
			}
		case act.TypeCommitmentOpen, act.TypeCommitmentClose:
			if s.o.Commitments == nil {
				problems = append(problems, fmt.Sprintf("action %d (%s): no commitment store to check %q", i, a.Type, r.ID))
				continue
			}
			if open == nil {
				cs, err := s.o.Commitments.OpenCommitments(ctx, 0)
				if err != nil {
					return nil, fmt.Errorf("open commitments: %w", err)
				}
				open = map[string]bool{}
				for _, c := range cs {
					open[c.ID] = true
				}
			}
			want := a.Type == act.TypeCommitmentOpen && !closedLater(w, plan, i, r.ID)
			if open[r.ID] != want {
				problems = append(problems, fmt.Sprintf("action %d (%s): commitment %q open=%v, want open=%v", i, a.Type, r.ID, open[r.ID], want))
			}
		}
	}
	return problems, nil
}

// closedLater reports whether an action after i closed commitment id.
func closedLater(w act.Wave, plan []ora.Action, i int, id string) bool {
	for j := i + 1; j < len(plan); j++ {
		if ev, ok := w.Evidence[j]; ok && ev.Type == act.TypeCommitmentClose && ev.Receipt != nil && ev.Receipt.ID == id {
			return true
		}
	}
	return false
}

// safety checks every recorded action, planned or not, against the
// decision's scope and the motor's forbidden paths; targets come from the
// evidence, the receipt and the raw parameters, so an executor that
// under-reports its targets is still caught.
func (s *Service) safety(ctx context.Context, w act.Wave, set settings) ([]string, error) {
	var problems []string
	scope := w.Decision.Scope
	for _, i := range indexes(w) {
		ev := w.Evidence[i]
		if ev.DecisionDigest != w.DecisionEntry.Digest {
			problems = append(problems, fmt.Sprintf("action %d: evidence names decision digest %s, not %s", i, ev.DecisionDigest, w.DecisionEntry.Digest))
		}
		if ev.Outcome == act.OutcomeFailure && ev.ErrorType == "ScopeViolation" {
			continue // refused before it ran: the boundary held
		}
		if !act.Allowed(ev.Type, scope.AllowedOperations) {
			problems = append(problems, fmt.Sprintf("action %d: operation %q is not in allowed_operations %v", i, ev.Type, scope.AllowedOperations))
		}
		targets := append([]string{}, ev.Targets...)
		if ev.Receipt != nil && ev.Receipt.Target != "" {
			targets = append(targets, ev.Receipt.Target)
		}
		targets = append(targets, act.ParamTargets(ev.Parameters)...)
		for _, t := range targets {
			if p, bad := act.Forbidden(t, scope.ForbiddenPaths); bad {
				problems = append(problems, fmt.Sprintf("action %d: target %q matches forbidden path %q", i, t, p))
				break
			}
			if p, bad := act.Forbidden(t, set.Safety.ForbiddenPaths); bad {
				problems = append(problems, fmt.Sprintf("action %d: target %q matches forbidden path %q of motor %s's validator settings", i, t, p, set.version))
				break
			}
		}
	}
	if s.o.Guardrail != nil && w.Decision.Tier >= set.Safety.GuardrailFrom() && set.Safety.GuardrailOn() {
		more, err := s.guardrail(ctx, w)
		if err != nil {
			return nil, err
		}
		problems = append(problems, more...)
	}
	return problems, nil
}

// guardrail applies the guardrail to the decision's action parameters (as
// model OUTPUT) and to the signal's payload (as INPUT).
func (s *Service) guardrail(ctx context.Context, w act.Wave) ([]string, error) {
	var problems []string
	var params []string
	for _, a := range w.Decision.Plan() {
		if p := compact(a.Parameters); p != "" {
			params = append(params, p)
		}
	}
	if len(params) > 0 {
		v, err := s.o.Guardrail.Check(ctx, "OUTPUT", params...)
		if err != nil {
			return nil, fmt.Errorf("guardrail on the action parameters: %w", err)
		}
		if v.Intervened {
			problems = append(problems, fmt.Sprintf("the guardrail intervened on the action parameters (%s)", guardWhy(v)))
		}
	}
	for _, e := range w.Entries {
		if e.Kind != ora.KindSignalReceived {
			continue
		}
		var sig ora.NormalizedSignal
		if err := json.Unmarshal(e.Body, &sig); err != nil {
			return []string{fmt.Sprintf("the signal-received entry does not decode: %v", err)}, nil
		}
		if text := compact(sig.Payload); text != "" {
			v, err := s.o.Guardrail.Check(ctx, "INPUT", text)
			if err != nil {
				return nil, fmt.Errorf("guardrail on the signal text: %w", err)
			}
			if v.Intervened {
				problems = append(problems, fmt.Sprintf("the guardrail intervened on the signal text the decision acts on (%s)", guardWhy(v)))
			}
		}
		break
	}
	return problems, nil
}

func guardWhy(v bedrock.GuardVerdict) string {
	why := strings.Join(v.Policies, ", ")
	if v.Reason != "" {
		why = strings.TrimPrefix(why+"; "+v.Reason, "; ")
	}
	if why == "" {
		why = "no policy named"
	}
	return why
}

// intent checks that the executed actions are exactly the plan and, for a
// tier-3 decision with an IntentJudge, that the evidence fulfils the
// decision's stated intent.
func (s *Service) intent(ctx context.Context, w act.Wave, set settings) ([]string, error) {
	var problems []string
	plan := w.Decision.Plan()
	for i, a := range plan {
		ev, ok := w.Evidence[i]
		if !ok {
			problems = append(problems, fmt.Sprintf("action %d (%s): planned, not executed", i, a.Type))
			continue
		}
		if ev.Type != a.Type {
			problems = append(problems, fmt.Sprintf("action %d: executed %q, planned %q", i, ev.Type, a.Type))
		}
		if !sameJSON(ev.Parameters, a.Parameters) {
			problems = append(problems, fmt.Sprintf("action %d (%s): executed parameters %s differ from the plan's %s", i, a.Type, compact(ev.Parameters), compact(a.Parameters)))
		}
		if ev.Outcome != act.OutcomeSuccess {
			problems = append(problems, fmt.Sprintf("action %d (%s): did not succeed", i, a.Type))
		}
	}
	for _, i := range indexes(w) {
		if i >= len(plan) || i < 0 {
			problems = append(problems, fmt.Sprintf("action %d (%s): executed, not planned", i, w.Evidence[i].Type))
		}
	}
	if s.o.IntentJudge != nil && w.Decision.Tier >= 3 && set.Intent.JudgeOn() {
		evidence := make([]act.Evidence, 0, len(w.Evidence))
		for _, i := range indexes(w) {
			evidence = append(evidence, w.Evidence[i])
		}
		v, err := s.o.IntentJudge.Judge(ctx, w.Decision, evidence)
		if err != nil {
			return nil, fmt.Errorf("intent judge: %w", err)
		}
		if !v.Fulfilled {
			problems = append(problems, fmt.Sprintf("the model judged that the evidence does not fulfil the decision's stated intent: %s (unmet: %s)", v.Reasoning, strings.Join(v.Unmet, "; ")))
		}
	}
	return problems, nil
}

// witness re-normalizes the stored raw signal and compares it with the
// recorded one, normalized_at aside. A signal captured redacted (its raw
// input held registered secrets) is checked in its stored, redacted form:
// every field is normalized from that form, and what redaction it went
// through (redacted, received_digest) is recorded at capture, not derived
// from the raw, so it is carried over; the PASS summary says so.
func (s *Service) witness(_ context.Context, w act.Wave, _ settings) ([]string, error) {
	if s.o.Renormalize == nil {
		return nil, ora.Errorf(ora.EINTERNAL, "witness: no normalizer configured")
	}
	stored, found, err := storedSignal(w)
	if err != nil {
		return []string{err.Error()}, nil
	}
	if !found {
		return []string{"no signal-received entry"}, nil
	}
	if len(stored.Raw) == 0 {
		return []string{"the raw input was not kept: nothing to re-normalize"}, nil
	}
	again, err := s.o.Renormalize(stored)
	if ora.ErrorCode(err) == ora.ETRANSIENT {
		return nil, fmt.Errorf("re-normalize: %w", err)
	}
	if err != nil {
		return []string{fmt.Sprintf("the raw input no longer normalizes: %v", err)}, nil
	}
	again.Redacted, again.ReceivedDigest = stored.Redacted, stored.ReceivedDigest
	want, err := signalDigest(stored)
	if err != nil {
		return nil, err
	}
	got, err := signalDigest(again)
	if err != nil {
		return nil, err
	}
	if got != want {
		return []string{fmt.Sprintf("re-normalized signal digest %s differs from the recorded %s", got, want)}, nil
	}
	return nil, nil
}

// storedSignal decodes the wave's signal-received entry.
func storedSignal(w act.Wave) (ora.NormalizedSignal, bool, error) {
	var stored ora.NormalizedSignal
	for _, e := range w.Entries {
		if e.Kind == ora.KindSignalReceived {
			if err := json.Unmarshal(e.Body, &stored); err != nil {
				return stored, true, fmt.Errorf("the signal-received entry does not decode: %v", err)
			}
			return stored, true, nil
		}
	}
	return stored, false, nil
}

// witnessSummary is the witness's PASS summary; it states the redaction a
// signal was captured with.
func witnessSummary(w act.Wave) string {
	const pass = "re-normalizing the raw input reproduces the recorded signal"
	stored, _, err := storedSignal(w)
	if err != nil || len(stored.Redacted) == 0 {
		return pass
	}
	return fmt.Sprintf("%s, in the redacted form it was stored in: the raw input held registered secrets (%s), replaced by their markers at capture; the bytes as received had sha256 %s and were not kept",
		pass, strings.Join(stored.Redacted, ", "), stored.ReceivedDigest)
}

// signalDigest is the digest of a signal with normalized_at cleared.
func signalDigest(s ora.NormalizedSignal) (string, error) {
	s.NormalizedAt = time.Time{}
	s.Timestamp = s.Timestamp.UTC()
	var p any
	if len(s.Payload) > 0 && json.Unmarshal(s.Payload, &p) == nil {
		b, _ := json.Marshal(p) // canonical key order
		s.Payload = b
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", ora.Errorf(ora.EINTERNAL, "witness: encode signal: %v", err)
	}
	return ora.Digest(b), nil
}

func indexes(w act.Wave) []int {
	out := make([]int, 0, len(w.Evidence))
	for i := range w.Evidence {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

func sameJSON(a, b json.RawMessage) bool {
	if len(bytes.TrimSpace(a)) == 0 && len(bytes.TrimSpace(b)) == 0 {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}
