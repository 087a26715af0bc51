package reason_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/bedrock/bedrocktest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
)

// stopReasons are StopPolicy's rows and one Bedrock may add later.
func stopReasons() []string {
	var out []string
	for r := range reason.StopPolicy {
		out = append(out, r)
	}
	sort.Strings(out)
	return append(out, "some_future_reason")
}

func handling(r string) reason.StopHandling {
	if h, ok := reason.StopPolicy[r]; ok {
		return h
	}
	return reason.StopUnusable
}

// TestStopPolicy runs every stopReason of the policy table at stage 1 and at
// stage 2. The stopped answer is always a well-formed, confident decision: a
// policy that ignored stopReason would act on it.
func TestStopPolicy(t *testing.T) {
	confident := func(content string) bedrocktest.Reply { return stage(0.97, 2, content, safeOPS) }
	for _, sr := range stopReasons() {
		h := handling(sr)
		retry := h == reason.StopRetryLargerCap || h == reason.StopRetryOnce
		t.Run(sr+"/stage 1, retry answers", func(t *testing.T) {
			f := newFixture(t, testConfig(), bedrocktest.Stopped(sr, confident("stopped")), confident("retried"))
			out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
			if err != nil {
				t.Fatal(err)
			}
			reqs := f.srv.Requests()
			switch h {
			case reason.StopUsable:
				if out.Result.Status != ora.ReasoningOK || len(reqs) != 1 || out.Final.Content != "stopped" {
					t.Errorf("status %s after %d requests, want OK after 1", out.Result.Status, len(reqs))
				}
			case reason.StopBlocked:
				if out.Result.Status != ora.ReasoningBlocked || len(out.Result.Decision) != 0 || out.Payload != nil || !hasDiag(out, reason.DiagGuardrail) || len(reqs) != 1 {
					t.Errorf("status %s decision %s after %d requests, want BLOCKED with no decision", out.Result.Status, out.Result.Decision, len(reqs))
				}
			case reason.StopUnusable:
				if out.Result.Status != ora.ReasoningFailed || len(out.Result.Decision) != 0 || len(reqs) != 1 {
					t.Errorf("status %s after %d requests, want FAILED after 1 (no retry)", out.Result.Status, len(reqs))
				}
			default: // retried once
				wantCap := testConfig().Inference.MaxTokens
				if h == reason.StopRetryLargerCap {
					wantCap *= 2
				}
				if out.Result.Status != ora.ReasoningOK || len(reqs) != 2 || out.Final.Content != "retried" || reqs[1].MaxTokens() != wantCap || !hasDiag(out, reason.DiagStopReason) {
					t.Errorf("status %s after %d requests, retry maxTokens %d: want OK from the retry with maxTokens %d", out.Result.Status, len(reqs), reqs[len(reqs)-1].MaxTokens(), wantCap)
				}
				if out.Observations[0].Usage.OutputTokens <= 0 || out.Trace.Usage.OutputTokens <= out.Observations[0].Usage.OutputTokens/2 {
					t.Errorf("the stage's usage %+v must count both calls (trace %+v)", out.Observations[0].Usage, out.Trace.Usage)
				}
			}
		})
		if retry {
			t.Run(sr+"/stage 1, retry stops the same way", func(t *testing.T) {
				f := newFixture(t, testConfig(), bedrocktest.Stopped(sr, confident("a")), bedrocktest.Stopped(sr, confident("b")))
				out, err := f.bridge.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
				if err != nil {
					t.Fatal(err)
				}
				if out.Result.Status != ora.ReasoningFailed || len(out.Result.Decision) != 0 || len(f.srv.Requests()) != 2 {
					t.Errorf("status %s after %d requests, want FAILED after 2", out.Result.Status, len(f.srv.Requests()))
				}
			})
		}
		t.Run(sr+"/stage 2 through the Reasoner", func(t *testing.T) {
			replies := []bedrocktest.Reply{stage(0.6, 8, "stage one", safeOPS), bedrocktest.Stopped(sr, confident("x")), bedrocktest.Stopped(sr, confident("y"))}
			r, srv, _ := newReasoner(t, testConfig(), replies...)
			d, err := r.Reason(context.Background(), input("sig-stop"))
			switch h {
			case reason.StopUsable:
				if err != nil || d.Confidence != 0.97 {
					t.Errorf("decision %+v err %v, want the stage 2 decision at 0.97", d, err)
				}
			case reason.StopBlocked:
				var re *reason.ResultError
				if ora.ErrorCode(err) != ora.EFORBIDDEN || !errors.As(err, &re) || re.Outcome.Result.Status != ora.ReasoningBlocked || d.ID != "" {
					t.Fatalf("decision %+v err %v, want BLOCKED (EFORBIDDEN) and no decision, though stage 1 proposed one", d, err)
				}
				if !strings.Contains(err.Error(), sr) {
					t.Errorf("error %q does not record the stop reason", err)
				}
			default:
				want := 2
				if retry {
					want = 3
				}
				if err != nil || d.Confidence > reason.HumanOnlyConfidence || d.Band() != ora.BandLow || d.Model.Status != ora.ReasoningDegraded || len(srv.Requests()) != want {
					t.Errorf("decision confidence %v (band %s) status %v after %d requests (err %v): want stage 1's decision for a human, after %d requests", d.Confidence, d.Band(), d.Model, len(srv.Requests()), err, want)
				}
			}
		})
	}
}

// TestResumeAfterTransientError: a transient error at stage 2 ends the run;
// the retried run reads stage 1 back and asks only stage 2.
func TestResumeAfterTransientError(t *testing.T) {
	stages := &memPatterns{}
	replies := []bedrocktest.Reply{stage(0.5, 8, "stage one", safeOPS)}
	for i := 0; i < 6; i++ { // 3 attempts on the primary, 3 on the fallback
		replies = append(replies, bedrocktest.Throttle())
	}
	replies = append(replies, stage(0.97, 3, "stage two", safeOPS))
	srv := bedrocktest.New(t, replies...)
	b, err := reason.NewBridge(bedrock.New(srv.Client(3)), testConfig(), func(o *reason.Options) { o.Stages = stages })
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
	if ora.ErrorCode(err) != ora.ETRANSIENT || !strings.Contains(err.Error(), "ThrottlingException") {
		t.Fatalf("first run: err = %v, want ETRANSIENT naming ThrottlingException", err)
	}
	out, err := b.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
	if err != nil {
		t.Fatal(err)
	}
	explorer := 0
	for _, r := range srv.Requests() {
		if strings.Contains(r.UserText(), "stage 1: Explorer") {
			explorer++
		}
	}
	if explorer != 1 || len(srv.Requests()) != 8 {
		t.Errorf("stage 1 asked %d times in %d requests, want once in 8", explorer, len(srv.Requests()))
	}
	if out.Result.Status != ora.ReasoningOK || out.Resumed != 1 || out.Trace.ChainLength != 2 || out.Final.Content != "stage two" || !hasDiag(out, reason.DiagResumed) {
		t.Errorf("status %s resumed %d length %d final %q", out.Result.Status, out.Resumed, out.Trace.ChainLength, out.Final.Content)
	}
	if out.Observations[0].Content != "stage one" || out.Trace.Usage != out.Observations[0].Usage.Add(out.Observations[1].Usage) {
		t.Errorf("the trace must count the resumed stage: %+v", out.Trace.Usage)
	}
	// A third run finds both stages and asks nothing.
	again, err := b.Run(context.Background(), envelope(ora.ProgramSafeOPSDecision), reason.Input{})
	if err != nil || again.Result.Status != ora.ReasoningOK || again.Resumed != 2 || len(srv.Requests()) != 8 {
		t.Errorf("third run: status %s resumed %d, %d requests (err %v)", again.Result.Status, again.Resumed, len(srv.Requests()), err)
	}
}

// TestBedrockErrorsInTheDecision: a 424 the same-model retry recovered is
// named in the decision's trace, though the decision is not degraded.
func TestBedrockErrorsInTheDecision(t *testing.T) {
	var logs bytes.Buffer
	srv := bedrocktest.New(t, bedrocktest.ModelError(), stage(0.97, 3, "x", safeOPS))
	r, err := reason.NewReasoner(bedrock.New(srv.Client(3)), testConfig(), func(o *reason.Options) {
		o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Reason(context.Background(), input("sig-424"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[1].ModelID != reason.DefaultModel {
		t.Errorf("%d requests, want the same model asked again", len(reqs))
	}
	if d.Model.Status != ora.ReasoningOK || len(d.Model.BedrockErrors) != 1 || !strings.Contains(d.Model.BedrockErrors[0], "ModelErrorException") {
		t.Errorf("trace %+v: want OK naming ModelErrorException", d.Model)
	}
	if !strings.Contains(logs.String(), "ModelErrorException") || !strings.Contains(logs.String(), "code=BEDROCK_ERROR") {
		t.Errorf("logs %q do not name the Bedrock error", logs.String())
	}
}
