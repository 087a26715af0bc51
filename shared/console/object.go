package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/orient"
)

// Objects reads the object store the object.put action writes to (ora
// dev's folder; orient.Folder is one). Optional: without it a receipt's
// object key is shown, not linked.
type Objects interface {
	// Get returns an object's first maxBytes+1 bytes at most and its info.
	// Errors: ENOTFOUND, EINVALID, ETRANSIENT.
	Get(ctx context.Context, key string, maxBytes int64) ([]byte, orient.ObjectInfo, error)
}

// MaxObjectBytes bounds what the console shows of an object.
const MaxObjectBytes = 1 << 20

// object serves the object a wave's action wrote: ?entry=N names the
// evidence entry whose receipt holds the key, so the console opens only
// what the ledger says a wave put, never any key asked for. It is served
// as plain text (never rendered as a page), cut at MaxObjectBytes, secrets
// blanked.
func (s *Server) object(w http.ResponseWriter, r *http.Request) error {
	ctx, id := r.Context(), r.PathValue("id")
	if s.Objects == nil {
		return ora.Errorf(ora.ENOTFOUND, "no object store is configured")
	}
	n, err := strconv.Atoi(r.URL.Query().Get("entry"))
	if err != nil || n < 0 {
		return ora.Invalid("entry", "%q is not an entry's index", r.URL.Query().Get("entry"))
	}
	entries, err := s.Ledger.Entries(ctx, id)
	if err != nil {
		return err
	}
	if n >= len(entries) || entries[n].Kind != ora.KindExecutionEvidence {
		return ora.Errorf(ora.ENOTFOUND, "wave %s has no evidence entry %d", id, n)
	}
	key := objectKey(entries[n].Body)
	if key == "" {
		return ora.Errorf(ora.ENOTFOUND, "evidence entry %d of wave %s names no object", n, id)
	}
	body, _, err := s.Objects.Get(ctx, key, MaxObjectBytes)
	if err != nil {
		return err
	}
	if len(body) > MaxObjectBytes {
		body = append(body[:MaxObjectBytes:MaxObjectBytes], "\n… (cut at 1 MiB)"...)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", "inline")
	_, _ = w.Write(s.Secrets.Redact(body))
	return nil
}

// objectKey is the object an evidence body's receipt names: an object.put's
// target, "" for any other action.
func objectKey(body []byte) string {
	var b evidenceBody
	if json.Unmarshal(body, &b) != nil || b.Type != objectPut || b.Receipt == nil {
		return ""
	}
	return b.Receipt.Target
}

// objectPut is the action type whose receipts name objects.
const objectPut = "object.put"
