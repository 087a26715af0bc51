// Package orient is ora's orientation kernel (seed 002), in its minimal form:
// Plan turns a signal into observation jobs for the reasoner context of seed
// 000 (open commitments, recent actions, workspace state, actor history); Fetch
// runs one job against the ledger and writes its results durably as scored,
// attributed observed-fact entries; Compile builds the wave's one bounded,
// deterministic OrientationPacket from those facts under the token budget and
// its six bands, and persists it with its sha256 digest.
//
// Every step is safe to run twice: job ids, fact ids and the packet id are
// derived from the signal, the facts and the packet are write-once ledger
// entries, and a conflict carrying the same content counts as success.
package orient

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// Store is the part of ora.Ledger orientation uses; every ora.Ledger is one.
type Store interface {
	// Append writes an entry once. Errors: EINVALID, ECONFLICT carrying the
	// stored ora.Entry, ETRANSIENT.
	Append(ctx context.Context, e ora.Entry) (ora.Entry, error)
	// Entries returns a signal's entries in order. Errors: ENOTFOUND, ETRANSIENT.
	Entries(ctx context.Context, signalID string) ([]ora.Entry, error)
	// Recent returns entries of one kind created in [from, to), newest first.
	// Errors: EINVALID, ETRANSIENT.
	Recent(ctx context.Context, kind ora.EntryKind, from, to time.Time, limit int) ([]ora.Entry, error)
	// OpenCommitments returns open commitments, oldest first. Errors: ETRANSIENT.
	OpenCommitments(ctx context.Context, limit int) ([]ora.Commitment, error)
}

var _ Store = ora.Ledger(nil)

// Options tune planning, fetching and compiling. The zero value of a field
// means its default.
type Options struct {
	// TokenBudget is the packet's total token budget. Default
	// ora.DefaultTokenBudget (150,000).
	TokenBudget int
	// Bands are the packet's budget bands, in the order their floors are
	// reserved. Default ora.DefaultBands().
	Bands []ora.BandBudget
	// ProfileID and ProfileVersion name the orientation profile recorded in
	// the packet. Default "default", 1.
	ProfileID      string
	ProfileVersion int
	// Limit caps the records one job reads. Default 50; at most MaxJobLimit.
	Limit int
	// RecentActionsWindow, ActorHistoryWindow and WorkspaceWindow are how far
	// back from the signal's timestamp the recent-actions, actor-history and
	// workspace-state jobs look. Defaults 24 h, 7 days and 1 h.
	RecentActionsWindow time.Duration
	ActorHistoryWindow  time.Duration
	WorkspaceWindow     time.Duration
	// InlineBodyBytes is the largest ledger entry body a fact carries inline;
	// a larger one is carried as a reference (its digest and size). Default 1024.
	InlineBodyBytes int
	// Sources are the source families besides the ledger (which is always
	// there), by family name: FamilyObjects, FamilyHTTP, ...
	Sources map[string]Source
	// Admin is what the guard enforces. Default DefaultAdmin(TokenBudget).
	Admin *Admin
	// ProposalTTL is how long a proposal may wait for a decision before it
	// expires (status expired). Default DefaultProposalTTL; negative: never.
	ProposalTTL time.Duration
	// Secrets is the registry of sensitive values: a fact whose provenance
	// holds one keeps a reference to it instead (SensitiveRef). Default:
	// none (URLs with credentials and credential headers are still kept as
	// references).
	Secrets *ora.Secrets
	// SensitiveProvenance names provenance fields whose values are always
	// kept as references.
	SensitiveProvenance []string
	// URLCredentials keeps the credentials of http URLs out of the
	// profiles and proposals written, and gives the http family the URLs to
	// GET. Default: the http family's (HTTP.Credentials), else the one the
	// process keeps for Secrets (so the profile store, the planner and the
	// fetcher of one process share it); either way the http family is given
	// the same one.
	URLCredentials *URLCredentials
	// Metrics receives the metrics of seed 002 §14.1. Default: none.
	Metrics Metrics
	// Logger writes the orientation log lines. Default: none.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Jobs is where Planner.Stage writes a wave's jobs for the Fetch Map's
	// ItemReader. Default: none (Stage fails).
	Jobs JobStore
	// FetchBudget is how long one Fetch invocation may spend on its batch
	// of jobs; it sets Staged.BatchSize. Default DefaultFetchBudget.
	FetchBudget time.Duration
	// InlineMaxJobs is the largest fan-out Planner.Stage hands the state
	// machine inline (Staged.Jobs), for an inline Map in an Express child
	// instead of a Distributed Map Run. Default DefaultInlineMaxJobs; a
	// negative value runs every fan-out as a Distributed Map.
	InlineMaxJobs int
}

// sources returns the configured families plus the ledger over store.
func (o Options) sources(store Store) map[string]Source {
	out := map[string]Source{FamilyLedger: Ledger{Store: store, InlineBodyBytes: o.InlineBodyBytes}}
	for k, v := range o.Sources {
		if k != FamilyLedger {
			out[k] = v
		}
	}
	return out
}

// Families returns the source families this home has configured, sorted:
// the ledger always, the others when a source serves them (the http family
// only with at least one allowed prefix). A profile rule naming another
// family would fail every wave's Plan.
func (o Options) Families() []string {
	out := []string{FamilyLedger}
	for k, v := range o.Sources {
		if h, ok := v.(HTTP); k == FamilyLedger || (ok && len(h.Allow) == 0) {
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DefaultProposalTTL is how long a proposal waits for a decision by default.
const DefaultProposalTTL = 7 * 24 * time.Hour

// MaxJobLimit is the most records a single job may read.
const MaxJobLimit = 1000

func options(opts []func(*Options)) Options {
	o := Options{}
	for _, f := range opts {
		f(&o)
	}
	if o.TokenBudget == 0 {
		o.TokenBudget = ora.DefaultTokenBudget
	}
	if o.Bands == nil {
		o.Bands = ora.DefaultBands()
	}
	if o.ProfileID == "" {
		o.ProfileID = "default"
	}
	if o.ProfileVersion == 0 {
		o.ProfileVersion = 1
	}
	if o.Limit == 0 {
		o.Limit = 50
	}
	if o.RecentActionsWindow == 0 {
		o.RecentActionsWindow = 24 * time.Hour
	}
	if o.ActorHistoryWindow == 0 {
		o.ActorHistoryWindow = 7 * 24 * time.Hour
	}
	if o.WorkspaceWindow == 0 {
		o.WorkspaceWindow = time.Hour
	}
	if o.InlineBodyBytes == 0 {
		o.InlineBodyBytes = 1024
	}
	if o.Admin == nil {
		a := DefaultAdmin(o.TokenBudget)
		o.Admin = &a
	}
	if o.ProposalTTL == 0 {
		o.ProposalTTL = DefaultProposalTTL
	}
	if o.Metrics == nil {
		o.Metrics = nopMetrics{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.InlineMaxJobs == 0 {
		o.InlineMaxJobs = DefaultInlineMaxJobs
	}
	if o.FetchBudget <= 0 {
		o.FetchBudget = DefaultFetchBudget
	}
	h, isHTTP := o.Sources[FamilyHTTP].(HTTP)
	if o.URLCredentials == nil {
		o.URLCredentials = h.Credentials
		if o.URLCredentials == nil {
			o.URLCredentials = processURLCredentials(o.Secrets)
		}
	}
	if isHTTP && h.Credentials != o.URLCredentials {
		h.Credentials = o.URLCredentials
		o.Sources = maps.Clone(o.Sources)
		o.Sources[FamilyHTTP] = h
	}
	return o
}

// Signal finds the signal among a wave's entries. Errors: ENOTFOUND when the
// wave has no signal-received entry, EINVALID when its body is malformed.
func Signal(entries []ora.Entry) (ora.NormalizedSignal, error) {
	for _, e := range entries {
		if e.Kind != ora.KindSignalReceived {
			continue
		}
		var s ora.NormalizedSignal
		if err := json.Unmarshal(e.Body, &s); err != nil {
			return ora.NormalizedSignal{}, ora.Invalid("signal", "stored signal %s is malformed: %v", e.SignalID, err)
		}
		return s, nil
	}
	return ora.NormalizedSignal{}, ora.Errorf(ora.ENOTFOUND, "no signal-received entry")
}

// Packet finds the wave's orientation packet among its entries and checks its
// digest. Errors: ENOTFOUND when there is none, EINVALID when it is malformed
// or its digest does not match its content.
func Packet(entries []ora.Entry) (ora.OrientationPacket, error) {
	for _, e := range entries {
		if e.Kind != ora.KindOrientationPacket {
			continue
		}
		sum, checked, kept := lookupPacket(e.Body)
		if kept != nil {
			return *kept, nil
		}
		var p ora.OrientationPacket
		if err := json.Unmarshal(e.Body, &p); err != nil {
			return ora.OrientationPacket{}, ora.Invalid("packet", "stored packet of %s is malformed: %v", e.SignalID, err)
		}
		if !checked {
			d, err := PacketDigest(p)
			if err != nil {
				return ora.OrientationPacket{}, err
			}
			if d != p.Digest {
				return ora.OrientationPacket{}, ora.Invalid("packet.digest_sha256", "stored packet of %s has digest %s, its content %s", e.SignalID, p.Digest, d)
			}
		}
		keepPacket(sum, len(e.Body), &p)
		return p, nil
	}
	return ora.OrientationPacket{}, ora.Errorf(ora.ENOTFOUND, "no orientation-packet entry")
}

// Input loads what a reasoner reads about a signal: the signal and its wave's
// orientation packet. Errors: ENOTFOUND when either is missing, EINVALID,
// ETRANSIENT.
func Input(ctx context.Context, store Store, signalID string) (ora.ReasonerInput, error) {
	entries, err := store.Entries(ctx, signalID)
	if err != nil {
		return ora.ReasonerInput{}, fmt.Errorf("orient: input of %s: %w", signalID, err)
	}
	return InputOf(entries)
}

// InputOf is Input over entries already read.
func InputOf(entries []ora.Entry) (ora.ReasonerInput, error) {
	s, err := Signal(entries)
	if err != nil {
		return ora.ReasonerInput{}, fmt.Errorf("orient: input: %w", err)
	}
	p, err := Packet(entries)
	if err != nil {
		return ora.ReasonerInput{}, fmt.Errorf("orient: input of %s: %w", s.ID, err)
	}
	return ora.ReasonerInput{Signal: s, Packet: p}, nil
}

// Kinds a stage reads of its wave: the planner the signal and its pin, the
// compiler those, the observed facts and a packet already compiled.
var (
	planKinds    = []ora.EntryKind{ora.KindSignalReceived, ora.KindOrientationPin}
	compileKinds = []ora.EntryKind{ora.KindSignalReceived, ora.KindOrientationPin, ora.KindObservedFact, ora.KindOrientationPacket}
)

// loadSignal reads a signal from the ledger with its entries of kinds (all
// its entries when none are given): a stage reads only what it uses, not the
// wave's jobs and audit records.
func loadSignal(ctx context.Context, store Store, signalID string, kinds ...ora.EntryKind) (ora.NormalizedSignal, []ora.Entry, error) {
	if signalID == "" {
		return ora.NormalizedSignal{}, nil, ora.Invalid("signal_id", "required")
	}
	var (
		entries []ora.Entry
		err     error
	)
	if len(kinds) == 0 {
		entries, err = store.Entries(ctx, signalID)
	} else {
		entries, err = ora.EntriesOfKinds(ctx, store, signalID, kinds...)
	}
	if err != nil {
		return ora.NormalizedSignal{}, nil, err
	}
	s, err := Signal(entries)
	if err != nil {
		return ora.NormalizedSignal{}, nil, err
	}
	return s, entries, nil
}

// EnvOptions reads orientation settings from the environment through getenv
// (os.Getenv in a main): ORA_TOKEN_BUDGET, the default profile's total token
// budget (default 150000; the bands' floors must fit in it), and
// ORA_OBSERVE_HTTP_ALLOW, the comma-separated URL prefixes the http source
// family may GET (none: the family plans and fetches nothing),
// ORA_ORIENTATION_ADMIN, the guard's admin settings as JSON (AdminSettings:
// changes to the defaults), and ORA_PROPOSAL_TTL, how long a proposal waits
// for a decision (a Go duration). Errors: EINVALID naming the variable.
func EnvOptions(getenv func(string) string) (func(*Options), error) {
	budget := 0
	if v := getenv("ORA_TOKEN_BUDGET"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, ora.Invalid("ORA_TOKEN_BUDGET", "%q is not a positive whole number", v)
		}
		if err := CheckBands(n, ora.DefaultBands()); err != nil {
			return nil, ora.Invalid("ORA_TOKEN_BUDGET", "%d: %v", n, err)
		}
		budget = n
	}
	var allow []string
	for _, p := range strings.Split(getenv("ORA_OBSERVE_HTTP_ALLOW"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !strings.HasPrefix(p, "https://") && !strings.HasPrefix(p, "http://") {
			return nil, ora.Invalid("ORA_OBSERVE_HTTP_ALLOW", "%q is not an http(s) URL prefix", p)
		}
		allow = append(allow, p)
	}
	var admin *Admin
	if v := getenv("ORA_ORIENTATION_ADMIN"); v != "" {
		var change AdminSettings
		if err := ora.DecodeJSON([]byte(v), &change); err != nil {
			return nil, ora.Invalid("ORA_ORIENTATION_ADMIN", "%v", err)
		}
		a, err := change.Apply(DefaultAdmin(cmp.Or(budget, ora.DefaultTokenBudget)))
		if err != nil {
			return nil, ora.Invalid("ORA_ORIENTATION_ADMIN", "%v", err)
		}
		admin = &a
	}
	var ttl time.Duration
	if v := getenv("ORA_PROPOSAL_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, ora.Invalid("ORA_PROPOSAL_TTL", "%q is not a positive duration such as 168h", v)
		}
		ttl = d
	}
	inline := 0
	if v := getenv("ORA_INLINE_FETCH_MAX_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, ora.Invalid("ORA_INLINE_FETCH_MAX_JOBS", "%q is not a whole number", v)
		}
		inline = n
		if n == 0 {
			inline = -1 // 0 jobs inline: every fan-out is a Distributed Map
		}
	}
	return func(o *Options) {
		if budget != 0 {
			o.TokenBudget = budget
		}
		if inline != 0 {
			o.InlineMaxJobs = inline
		}
		if o.Sources == nil {
			o.Sources = map[string]Source{}
		}
		o.Sources[FamilyHTTP] = HTTP{Allow: allow}
		if admin != nil {
			o.Admin = admin
		}
		if ttl != 0 {
			o.ProposalTTL = ttl
		}
	}, nil
}

// ObjectsFromEnv adds the objects source family over the bucket
// ORA_OBJECTS_BUCKET names, read through client; nothing when it is unset.
// Every function that plans, fetches or judges proposals reads it, so they
// agree on which families exist.
func ObjectsFromEnv(getenv func(string) string, client S3API) func(*Options) {
	bucket := getenv("ORA_OBJECTS_BUCKET")
	if bucket == "" {
		return func(*Options) {}
	}
	return WithObjects(S3{Client: client, Bucket: bucket})
}

// WithObjects adds the objects source family over r.
func WithObjects(r ObjectReader) func(*Options) {
	return func(o *Options) {
		if o.Sources == nil {
			o.Sources = map[string]Source{}
		}
		o.Sources[FamilyObjects] = Objects{Reader: r}
	}
}
