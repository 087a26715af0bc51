package dynamo

import (
	"bytes"
	"compress/flate"

	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// attrBodyZ names the attribute an entry item carries instead of "body" when
// the body is stored deflated (RFC 1951, binary).
const attrBodyZ = "bodyz"

// compressMin is the smallest body worth deflating: below it the saving
// rarely crosses a 1 KB write unit.
const compressMin = 256

// maxInflated bounds what one stored body inflates to: an item holds at most
// 400 KB, and JSON deflates by far less than this ratio.
const maxInflated = 64 << 20

var deflaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestCompression)
	return w
}}

// deflate returns b deflated.
func deflate(b []byte) []byte {
	var buf bytes.Buffer
	w := deflaters.Get().(*flate.Writer)
	w.Reset(&buf)
	_, _ = w.Write(b) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	deflaters.Put(w)
	return buf.Bytes()
}

// inflate returns z inflated.
func inflate(z []byte) ([]byte, error) {
	r := flate.NewReader(bytes.NewReader(z))
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxInflated+1))
	if err != nil {
		return nil, ora.Invalid("bodyz", "cannot inflate the stored body: %v", err)
	}
	if len(b) > maxInflated {
		return nil, ora.Invalid("bodyz", "the stored body inflates past %d bytes", maxInflated)
	}
	return b, nil
}

// deflated returns b deflated when setBody would store it so (b is
// compressMin bytes or more and deflating makes it smaller), else nil. The
// size rules measure the item by it, and entryItemZ stores it, so a body is
// deflated once on the write path.
func deflated(b []byte) []byte {
	if len(b) >= compressMin {
		if z := deflate(b); len(z) < len(b) {
			return z
		}
	}
	return nil
}

// setBody stores b in item: deflated (attrBodyZ) when it is compressMin
// bytes or more and that is smaller, else as text ("body"). It reports
// whether it stored anything (an empty body is not stored).
func setBody(item map[string]types.AttributeValue, b []byte) bool {
	return setBodyZ(item, b, deflated(b))
}

// setBodyZ is setBody with z, deflated(b), already computed.
func setBodyZ(item map[string]types.AttributeValue, b, z []byte) bool {
	if z != nil {
		item[attrBodyZ] = &types.AttributeValueMemberB{Value: z}
		return true
	}
	if len(b) == 0 {
		return false
	}
	item["body"] = sv(string(b))
	return true
}

// storedSize applies the size rules to e: the item limit (ora.SizeCheck) to
// the entry as given, as the SQLite ledger does, so both ledgers take and
// refuse the same entries; the offload threshold (ora.SizeCheckAbove with
// above) to the entry as its item stores it, with z, deflated(e.Body), in
// place of the body when it is not nil: DynamoDB bills the bytes of the
// binary attribute, so a body that deflates well stays in its item where
// its text would be offloaded.
func storedSize(e ora.Entry, z []byte, haveStore bool, above int) (offload bool, err error) {
	if offload, err = ora.SizeCheck(e, haveStore); err != nil || offload {
		return offload, err
	}
	if z != nil {
		e.Body = z
	}
	return ora.SizeCheckAbove(e, haveStore, above)
}

// itemBody reads back the body setBody stored in item (nil if none).
func itemBody(item map[string]types.AttributeValue) ([]byte, error) {
	if z, ok := item[attrBodyZ].(*types.AttributeValueMemberB); ok {
		return inflate(z.Value)
	}
	if v, ok := item["body"].(*types.AttributeValueMemberS); ok {
		return []byte(v.Value), nil
	}
	return nil, nil
}
