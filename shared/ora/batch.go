package ora

import "time"

// Batch is one batch window of the reason stage on AWS: signals of one batch
// key (their source family) whose waves reach Reason within the window are
// reasoned together, once, by one of them (the claimant). The first signal
// opened it (its Leader); the others joined it.
type Batch struct {
	// ID names the batch; each decision it made records it
	// (ModelTrace.BatchID).
	ID string `json:"batch_id"`
	// Key is the batch key the members share.
	Key string `json:"batch_key"`
	// Leader is the signal that opened the batch.
	Leader string `json:"leader"`
	// ClosesAt is the end of the window: no signal joins after it, and the
	// leader claims the batch then.
	ClosesAt time.Time `json:"closes_at"`
}

// BatchState is what became of a batch after its window: claimed by a
// member that reasons for all (until LeaseUntil), and finished (decided, or
// failed with the reason in Failed).
type BatchState struct {
	// Claimant is the member reasoning for the batch; "" while unclaimed.
	Claimant string `json:"claimant,omitempty"`
	// LeaseUntil is when the claim lapses if the claimant never finishes.
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Finished is set when the claimant recorded the batch's decisions (or
	// gave up on them: Failed says why).
	Finished bool `json:"finished,omitempty"`
	// Failed is the claimant's error when the batch's reasoning failed; each
	// member then reasons alone.
	Failed string `json:"failed,omitempty"`
}
