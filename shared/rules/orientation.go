package rules

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// orientationRoot is the field predicates and templates use to read the
// wave's orientation packet.
const orientationRoot = "orientation"

// orientation is the packet as predicates see it under "orientation":
//
//	packet_id, digest, profile_id, truncated
//	facts[]            every fact, band by band: fact_id, source_type,
//	                   source_ref, band, utility, created_at, normalized
//	counts.<family>    facts per source family (a ledger fact's family is
//	                   its query); hyphens become underscores, and the four
//	                   ledger queries are always present (0 when none)
//	open_commitments[] the normalized open commitments (id, title, status,
//	                   opened_at, origin_signal_id, body)
//	recent_actions[]   the normalized recent actions (kind, qualifier,
//	                   signal_id, author_type, created_at, body)
//
// Numbers are float64, as the operators compare them. A fact whose
// normalized form is not JSON keeps it as a string.
func orientation(p ora.OrientationPacket) map[string]any {
	counts := map[string]any{}
	for _, k := range orient.JobKinds {
		counts[countKey(string(k))] = 0.0
	}
	facts, commitments, actions := []any{}, []any{}, []any{}
	for _, b := range p.Bands {
		for _, f := range b.Facts {
			var n any
			if len(f.Normalized) > 0 && json.Unmarshal(f.Normalized, &n) != nil {
				n = string(f.Normalized)
			}
			band := f.Band
			if band == "" {
				band = b.Band
			}
			fact := map[string]any{
				"fact_id": f.ID, "source_type": f.SourceType, "source_ref": f.SourceRef,
				"band": string(band), "utility": f.Utility, "normalized": n,
			}
			if !f.CreatedAt.IsZero() {
				fact["created_at"] = f.CreatedAt.UTC().Format(time.RFC3339Nano)
			}
			facts = append(facts, fact)
			key := countKey(f.SourceType)
			c, _ := counts[key].(float64)
			counts[key] = c + 1
			switch orient.JobKind(f.SourceType) {
			case orient.JobOpenCommitments:
				commitments = append(commitments, n)
			case orient.JobRecentActions:
				actions = append(actions, n)
			}
		}
	}
	return map[string]any{
		"packet_id": p.ID, "digest": p.Digest, "profile_id": p.ProfileID, "truncated": p.Truncated,
		"facts": facts, "counts": counts, "open_commitments": commitments, "recent_actions": actions,
	}
}

// countKey is a family's key under orientation.counts.
func countKey(family string) string { return strings.ReplaceAll(family, "-", "_") }

// readsOrientation reports whether a field path starts at the packet.
func readsOrientation(field string) bool {
	f := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(field), "$"), ".")
	for _, q := range []string{"['" + orientationRoot + "']", `["` + orientationRoot + `"]`} {
		if strings.HasPrefix(f, q) {
			return true
		}
	}
	return f == orientationRoot || strings.HasPrefix(f, orientationRoot+".") || strings.HasPrefix(f, orientationRoot+"[")
}

// readsOrientation reports whether the predicate tests the packet.
func (n node) readsOrientation() bool {
	for _, k := range append(append([]node(nil), n.all...), n.any...) {
		if k.readsOrientation() {
			return true
		}
	}
	if n.not != nil && n.not.readsOrientation() {
		return true
	}
	return n.field != "" && readsOrientation(n.field)
}

// readsOrientation reports whether the outcome's templates read the packet.
func (o compiledOutcome) readsOrientation() bool {
	for _, t := range o.templates {
		if readsOrientation(t.field) {
			return true
		}
	}
	for _, st := range o.steps {
		if st.readsOrientation() {
			return true
		}
	}
	return false
}
