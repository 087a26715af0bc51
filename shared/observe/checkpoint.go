package observe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// CheckpointRetention is how long a stream checkpoint entry is kept: longer
// than a stream keeps its records (24 hours), so a checkpoint gone is one
// older than anything left to read.
const CheckpointRetention = 7 * 24 * time.Hour

// LedgerCheckpoints keeps stream checkpoints in the ledger: one
// stream-checkpoint entry per saved position, under a pseudo signal id per
// stream and shard; the highest sequence number is the checkpoint.
type LedgerCheckpoints struct {
	Ledger ora.Ledger
	Now    func() time.Time // default time.Now
}

// CheckpointID is the pseudo signal id of a stream shard's checkpoints.
func CheckpointID(stream, shard string) string {
	sum := sha256.Sum256([]byte(stream + "\x00" + shard))
	return "chk_" + hex.EncodeToString(sum[:])[:26]
}

// seqWidth pads sequence numbers (decimal strings, at most 40 digits) so
// that they sort as numbers.
const seqWidth = 48

// Checkpoint returns the shard's highest saved sequence number, "" when none.
// Errors: ETRANSIENT.
func (c LedgerCheckpoints) Checkpoint(ctx context.Context, stream, shard string) (string, error) {
	entries, err := ora.EntriesOfKinds(ctx, c.Ledger, CheckpointID(stream, shard), ora.KindStreamCheckpoint)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("checkpoint %s: %w", shard, err)
	}
	var best ora.Entry
	for _, e := range entries {
		if e.Qualifier > best.Qualifier {
			best = e
		}
	}
	var body struct {
		Seq string `json:"sequence_number"`
	}
	if err := json.Unmarshal(best.Body, &body); err != nil || body.Seq == "" {
		return "", ora.Errorf(ora.EINTERNAL, "checkpoint %s: entry %s has no sequence number", shard, best.Qualifier)
	}
	return body.Seq, nil
}

// SaveCheckpoint appends seq as the shard's position; saving one twice is
// not an error. Errors: EINVALID, ETRANSIENT.
func (c LedgerCheckpoints) SaveCheckpoint(ctx context.Context, stream, shard, seq string) error {
	if len(seq) > seqWidth {
		return ora.Invalid("sequence_number", "%d digits, more than %d", len(seq), seqWidth)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	q := strings.Repeat("0", seqWidth-len(seq)) + seq
	e, err := ora.NewEntry(CheckpointID(stream, shard), ora.KindStreamCheckpoint, q,
		map[string]string{"stream": stream, "shard": shard, "sequence_number": seq})
	if err != nil {
		return err
	}
	e.CreatedAt = now().UTC()
	expires := e.CreatedAt.Add(CheckpointRetention)
	e.ExpiresAt = &expires
	if _, err := c.Ledger.Append(ctx, e); err != nil && ora.ErrorCode(err) != ora.ECONFLICT {
		return fmt.Errorf("checkpoint %s at %s: %w", shard, seq, err)
	}
	return nil
}
