package dynamo

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ora-runtime/ora/shared/ora"
)

// records is a JSON body of n bytes or a little more shaped like an S3
// event notification batch (a webhook or stream payload): records that
// differ in their ids and keys, so it deflates well but not trivially.
func records(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"Records":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"eu-west-1","eventTime":"2026-11-27T01:%02d:%02d.%03dZ",`+
			`"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"ora-intake","arn":"arn:aws:s3:::ora-intake"},`+
			`"object":{"key":"invoices/2026/11/%06d.json","size":%d,"eTag":"%08x%08x","sequencer":"%016X"}}}`,
			i/60%60, i%60, i%1000, i, 40000+i*37%9000, i*2654435761, i*40503, i*97)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// noise is a JSON body of about n bytes that deflates poorly (base64 of
// random bytes, as an attachment's content would be).
func noise(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	raw := make([]byte, n*3/4)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	return []byte(`{"attachment":"` + base64.StdEncoding.EncodeToString(raw) + `"}`)
}

// TestSizeRulesMeasureStoredBytes: on DynamoDB Local, the offload threshold
// and the item limit are compared with the entry as its item stores it (the
// body deflated when that applies): a compressible body over OffloadAbove
// uncompressed but under it deflated stays in its item, one that deflates
// poorly still goes to the body store. The item limit stays on the entry as
// given (the SQLite ledger's rule, and the contract's): a non-offloadable
// entry over it is refused, compressible or not. Each written entry reads back byte for byte
// with its digest, by Append and by AppendNew.
func TestSizeRulesMeasureStoredBytes(t *testing.T) {
	ctx := context.Background()
	c, name := newTable(t)
	at := time.Now().UTC()
	for _, tc := range []struct {
		name   string
		kind   ora.EntryKind
		body   []byte
		off    bool // the body goes to the body store
		refuse bool
	}{
		{"compressible evidence over the threshold stays inline", ora.KindExecutionEvidence, records(24 * 1024), false, false},
		{"incompressible evidence over the threshold offloads", ora.KindExecutionEvidence, noise(30 * 1024), true, false},
		{"compressible verdict over the item limit is refused, as by SQLite", ora.KindFinalVerdict, records(500 * 1024), false, true},
		{"incompressible verdict over the item limit is refused", ora.KindFinalVerdict, noise(600 * 1024), false, true},
	} {
		for _, path := range []string{"Append", "AppendNew"} {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				bodies := &countingBodies{m: map[string][]byte{}}
				l := New(c, name, func(o *Options) { o.Bodies = bodies; o.BodyCacheBytes = -1 })
				sig := "sig-stored-" + strings.ReplaceAll(tc.name, " ", "-") + "-" + path
				e := ora.Entry{SignalID: sig, Kind: tc.kind, Body: tc.body, CreatedAt: at}
				e.Digest = ora.Digest(e.Body)
				var err error
				if path == "Append" {
					_, err = l.Append(ctx, e)
				} else {
					_, err = l.AppendNew(ctx, []ora.Entry{e})
				}
				if z := len(deflate(tc.body)); tc.kind.Offloadable() && (len(tc.body) <= DefaultOffloadAbove || (z < DefaultOffloadAbove) == tc.off) {
					t.Fatalf("body of %d bytes, %d deflated: not the case it names (threshold %d)", len(tc.body), z, DefaultOffloadAbove)
				}
				if tc.refuse {
					if ora.ErrorCode(err) != ora.EINVALID || !errors.Is(err, ora.ErrEntryTooLarge) || !strings.Contains(err.Error(), sig) {
						t.Fatalf("%s of %d bytes: %v, want EINVALID (entry too large) naming %s", path, len(tc.body), err, sig)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s of %d bytes (%d deflated): %v", path, len(tc.body), len(deflate(tc.body)), err)
				}
				if got := bodies.puts == 1; got != tc.off {
					t.Errorf("%d bodies stored, want offload %v (body %d bytes, %d deflated)", bodies.puts, tc.off, len(tc.body), len(deflate(tc.body)))
				}
				out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), Key: entryKey(e.SignalID, e.Kind, e.Qualifier)})
				if err != nil {
					t.Fatal(err)
				}
				if _, ref := out.Item[attrBodyRef]; ref != tc.off {
					t.Errorf("item has body_ref %v, want %v", ref, tc.off)
				}
				if _, z := out.Item[attrBodyZ]; !tc.off && !z {
					t.Errorf("inline item has no deflated body")
				}
				es, err := l.Entries(ctx, sig)
				if err != nil || len(es) != 1 {
					t.Fatalf("Entries: %d, %v", len(es), err)
				}
				if string(es[0].Body) != string(tc.body) || ora.Digest(es[0].Body) != e.Digest || es[0].Digest != e.Digest {
					t.Errorf("body read back %d bytes (digest %s), want %d bytes, digest %s", len(es[0].Body), es[0].Digest, len(tc.body), e.Digest)
				}
			})
		}
	}
}
