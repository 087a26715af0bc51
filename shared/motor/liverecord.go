package motor

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/mcp"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/reason"
	"github.com/ora-runtime/ora/shared/telemetry"
)

// EnvRecordRate is the share of real waves the reason function records for
// the gate (0 to 1, unset: none), under EnvGoldenBucket/EnvGoldenPrefix +
// RecordingsFolder.
const EnvRecordRate = "ORA_GOLDEN_RECORD_RATE"

// LiveRecorderFromEnv returns the reason function's recorder of real waves:
// nil unless ORA_REASONER is bedrock and EnvRecordRate is above 0; then a
// bedrock.Recorder over S3Recordings under the golden prefix's recordings/
// folder (creating each recording once, refusing an exchange holding a
// value of secrets or over DefaultRecordMaxBytes), the gate's replay build
// (ReplayBuildFromEnv) over the Converser conv makes around it, recording
// before the decision returns (a Lambda freezes when it returns). With MCP
// servers, their tool lists (MCPToolsFile beside the recordings) are read
// at the first recording, and again at the next while they cannot be
// (Lazy); a tool the model calls is called through servers (the reason
// function's client of them) and its result kept beside the recordings
// (bedrock.Recorder.Tool). Errors: EINVALID (the environment).
func LiveRecorderFromEnv(getenv func(string) string, objects bedrock.S3API, servers *mcp.Client, secrets *ora.Secrets, conv func(*bedrock.Recorder) reason.Converser) (*LiveRecorder, error) {
	raw := getenv(EnvRecordRate)
	if raw == "" || getenv("ORA_REASONER") != "bedrock" {
		return nil, nil
	}
	rate, err := strconv.ParseFloat(raw, 64)
	if err != nil || rate < 0 || rate > 1 {
		return nil, ora.Invalid(EnvRecordRate, "%q is not a share between 0 and 1", raw)
	}
	bucket := getenv(EnvGoldenBucket)
	if rate == 0 {
		return nil, nil
	}
	if bucket == "" {
		return nil, ora.Invalid(EnvRecordRate, "needs %s: the recordings go under the golden set", EnvGoldenBucket)
	}
	store := bedrock.S3Recordings{Client: objects, Bucket: bucket, Prefix: getenv(EnvGoldenPrefix) + RecordingsFolder}
	rec := &bedrock.Recorder{Store: store, Secrets: secrets, MaxBytes: DefaultRecordMaxBytes, KeepOnce: true}
	with, configured, err := replayFromEnv(getenv, conv(rec))
	if err != nil {
		return nil, err
	}
	build := with(nil)
	if len(configured) > 0 {
		// The gate offers the MCP tools whose lists `ora motor record` kept
		// beside the recordings, so a recording offers the same ones. They
		// are read at the first recording, not at start, and again at the
		// next one until they are: without them (or when they cannot be
		// read) each recording fails, counted, and the waves go on.
		build = Lazy(func() (ReplayBuild, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			lists, err := store.Object(ctx, MCPToolsFile)
			if err != nil && ora.ErrorCode(err) != ora.ENOTFOUND {
				return nil, fmt.Errorf("the MCP tool lists of the recordings: %w", err)
			}
			listed, err := ListedMCP(configured, false, lists, rec, servers)
			if err != nil {
				return nil, err
			}
			return with(listed), nil
		})
	}
	return &LiveRecorder{Build: build, Rate: rate}, nil
}

// DefaultRecordTimeout bounds one wave's recording.
const DefaultRecordTimeout = 20 * time.Second

// DefaultRecordMaxBytes bounds one recorded exchange (request and answer).
const DefaultRecordMaxBytes = 1 << 20

// The outcomes of telemetry.GoldenRecordings.
const (
	RecordKept    = "kept"    // the wave's model calls are recorded (or were already)
	RecordSecret  = "secret"  // an exchange held a registered secret: not recorded
	RecordSize    = "size"    // an exchange was over the size limit: not recorded
	RecordFailed  = "failed"  // the model or the store failed, or the time ran out
	RecordSkipped = "skipped" // a recording was running (in the background), or too little time was left
)

// LiveRecorder records the golden set's model calls from real waves: after
// a wave is decided, a sampled share of waves (Rate) is decided once more
// exactly as the promotion gate replays a golden wave (ReplayWith through
// Build, whose Bedrock client's HTTP client is a *bedrock.Recorder), so each
// Converse request the gate will ask for that wave is kept under its digest,
// in the format `ora motor record` writes. The live call itself is not what
// is kept: its prompt holds the wall clock and the operator's live state,
// which a replay never asks again.
//
// A recording never fails or holds up a wave: its errors are logged and
// counted (telemetry.GoldenRecordings by outcome); it runs within Timeout,
// in the background when Async is set (one at a time, skipping waves while
// one runs), else before the decision returns and at most until
// RecordMargin before the context's deadline.
type LiveRecorder struct {
	// Build is the gate's replay build over a recording client.
	Build ReplayBuild
	// Rate is the share of waves recorded, 0 to 1, chosen by the signal id
	// (a retried reason step chooses the same).
	Rate float64
	// Timeout bounds one wave's recording (default DefaultRecordTimeout).
	Timeout time.Duration
	// Async records in the background (ora dev) instead of before the
	// decision returns (a Lambda, which freezes when it returns).
	Async   bool
	Log     *slog.Logger      // default slog.Default()
	Metrics telemetry.Metrics // default telemetry.Discard

	busy sync.Mutex
	wg   sync.WaitGroup
}

// Sampled reports whether the wave of signalID is recorded at rate.
func Sampled(signalID string, rate float64) bool {
	if rate <= 0 {
		return false
	}
	if rate >= 1 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(signalID))
	return float64(h.Sum32())/float64(1<<32) < rate
}

// Wrap returns build with each version's reasoner recording its waves; nil
// lr returns build.
func (lr *LiveRecorder) Wrap(build BuildFunc) BuildFunc {
	if lr == nil || lr.Build == nil || lr.Rate <= 0 {
		return build
	}
	return func(b Bundle) (ora.Reasoner, error) {
		rs, err := build(b)
		if err != nil {
			return nil, err
		}
		live := &recording{Reasoner: rs, lr: lr, b: b}
		if br, ok := rs.(batchReasoner); ok {
			return &batchRecording{recording: live, br: br}, nil
		}
		return live, nil
	}
}

// Wait waits for the background recordings to end (tests, shutdown).
func (lr *LiveRecorder) Wait() { lr.wg.Wait() }

type batchReasoner interface {
	ReasonBatch(context.Context, []ora.ReasonerInput) ([]ora.ReasonerDecision, error)
}

type recording struct {
	ora.Reasoner
	lr *LiveRecorder
	b  Bundle
}

func (r *recording) Reason(ctx context.Context, in ora.ReasonerInput) (ora.ReasonerDecision, error) {
	d, err := r.Reasoner.Reason(ctx, in)
	if err == nil {
		r.lr.record(ctx, r.b, in)
	}
	return d, err
}

type batchRecording struct {
	*recording
	br batchReasoner
}

func (r *batchRecording) ReasonBatch(ctx context.Context, ins []ora.ReasonerInput) ([]ora.ReasonerDecision, error) {
	ds, err := r.br.ReasonBatch(ctx, ins)
	if err == nil {
		for _, in := range ins {
			r.lr.record(ctx, r.b, in)
		}
	}
	return ds, err
}

// record records one decided wave, if sampled, within the bounds.
func (lr *LiveRecorder) record(ctx context.Context, b Bundle, in ora.ReasonerInput) {
	if !Sampled(in.Signal.ID, lr.Rate) {
		return
	}
	timeout := lr.Timeout
	if timeout <= 0 {
		timeout = DefaultRecordTimeout
	}
	run := func() {
		// Bounded by cancelling at the timeout, not by a deadline: the
		// reasoner reads a deadline as its stage's (a tool call too close
		// to it is answered "not called"), and the gate replays with none,
		// so the recording must decide as the gate will.
		ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		stop := time.AfterFunc(timeout, cancel)
		defer stop.Stop()
		lr.outcome(in.Signal.ID, b.Version, lr.RecordWave(ctx, b, in))
	}
	if !lr.Async {
		// Within the invocation's deadline, leaving the wave the time to
		// record its decision.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl)-RecordMargin < timeout {
			if timeout = time.Until(dl) - RecordMargin; timeout <= 0 {
				lr.outcome(in.Signal.ID, b.Version, errNoTime)
				return
			}
		}
		run()
		return
	}
	if !lr.busy.TryLock() {
		lr.outcome(in.Signal.ID, b.Version, errSkipped)
		return
	}
	lr.wg.Add(1)
	go func() {
		defer lr.wg.Done()
		defer lr.busy.Unlock()
		run()
	}()
}

var (
	errSkipped = errors.New("a recording is running")
	errNoTime  = errors.New("too little of the invocation's time is left")
)

// RecordMargin is the time a recording before the decision returns leaves
// the wave before its context's deadline.
const RecordMargin = 10 * time.Second

// RecordWave decides the wave in once as the gate replays it under b
// (the packet compiled again under b's budget, the clock at the signal's
// time), through Build. Errors: the replay's (a *bedrock.NotRecorded when
// the recorder refused an exchange).
func (lr *LiveRecorder) RecordWave(ctx context.Context, b Bundle, in ora.ReasonerInput) error {
	w := GoldenWave{Name: in.Signal.ID, Signal: in.Signal, Packet: in.Packet}
	packet, err := packetUnder(b, w)
	if err != nil {
		return err
	}
	at := w.Signal.NormalizedAt
	if at.IsZero() {
		at = w.Signal.Timestamp
	}
	rs, err := lr.Build(b, at)
	if err != nil {
		return fmt.Errorf("motor %s: %w", b.Version, err)
	}
	ctx, tools := withToolNotes(ctx)
	_, err = rs.Reason(ctx, ora.ReasonerInput{Signal: w.Signal, Packet: packet})
	if terr := tools.first(); terr != nil { // a tool result not kept: the gate could not replay the decision
		err = terr
	}
	if err != nil {
		return fmt.Errorf("motor: record wave %s under %s: %w", in.Signal.ID, b.Version, err)
	}
	return nil
}

// outcome logs and counts one recording's end.
func (lr *LiveRecorder) outcome(signalID, version string, err error) {
	m := lr.Metrics
	if m == nil {
		m = telemetry.Discard
	}
	log := lr.Log
	if log == nil {
		log = slog.Default()
	}
	out := RecordKept
	var nr *bedrock.NotRecorded
	switch {
	case err == nil:
	case errors.Is(err, errSkipped), errors.Is(err, errNoTime):
		out = RecordSkipped
	case errors.As(err, &nr) && nr.Reason == "secret":
		out = RecordSecret
	case errors.As(err, &nr) && nr.Reason == "size":
		out = RecordSize
	default:
		out = RecordFailed
	}
	m.Add(telemetry.GoldenRecordings, 1, "outcome", out)
	if err != nil {
		// The whole error, each layer's context with it (the operator's log,
		// not a client's answer): what failed and why.
		log.Warn("golden recording not kept", "signal_id", signalID, "motor_version", version, "outcome", out, "error", err.Error())
	}
}
