package dynamo

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ora-runtime/ora/shared/ora"
)

// The reasoner's items on the ledger table:
//
//	type     PK                  SK        attributes
//	pattern  PAT#<fingerprint>   PATTERN   motor_version, body (S), expires_at (N, Unix ns), ttl
//	spend    SPEND#<YYYY-MM-DD>  SPEND     micro_usd (N, millionths of a dollar), ttl (400 days on)
const (
	typePattern   = "pattern"
	typeSpend     = "spend"
	prefixPattern = "PAT#"
	prefixSpend   = "SPEND#"
	skPattern     = "PATTERN"
	skSpend       = "SPEND"
	spendKeep     = 400 * 24 * time.Hour
)

// Patterns is the reasoner's pattern cache on the ledger table (see
// reason.PatternCache). Expiry is checked on read (expires_at); the TTL
// attribute only clears old items away.
type Patterns struct{ l *Ledger }

// Patterns returns the pattern cache on the ledger's table.
func (l *Ledger) Patterns() *Patterns { return &Patterns{l: l} }

// Get returns the body stored for fingerprint, by a strongly consistent read.
// Errors: EINVALID (empty key), ENOTFOUND when there is none, it has expired
// or it was stored under another motor version, ETRANSIENT.
func (p *Patterns) Get(ctx context.Context, fingerprint, motorVersion string) ([]byte, error) {
	if fingerprint == "" || motorVersion == "" {
		return nil, fmt.Errorf("patterns: get: %w", ora.Invalid("fingerprint", "fingerprint and motor version are required"))
	}
	out, err := p.l.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(p.l.table),
		Key:            key(prefixPattern+fingerprint, skPattern),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("patterns: get %s: %w", fingerprint, translate(err))
	}
	if len(out.Item) == 0 {
		return nil, ora.Errorf(ora.ENOTFOUND, "patterns: no pattern for %s", fingerprint)
	}
	expires, err := getN(out.Item, "expires_at")
	if err != nil {
		return nil, fmt.Errorf("patterns: get %s: %w", fingerprint, err)
	}
	if expires <= p.l.now().UnixNano() {
		return nil, ora.Errorf(ora.ENOTFOUND, "patterns: the pattern for %s has expired", fingerprint)
	}
	if m := getS(out.Item, "motor_version"); m != motorVersion {
		return nil, ora.Errorf(ora.ENOTFOUND, "patterns: the pattern for %s is from motor %q, not %q", fingerprint, m, motorVersion)
	}
	return []byte(getS(out.Item, "body")), nil
}

// Put stores body for fingerprint under motorVersion, replacing any earlier
// pattern, expiring after ttl. Errors: EINVALID, ETRANSIENT.
func (p *Patterns) Put(ctx context.Context, fingerprint, motorVersion string, body []byte, ttl time.Duration) error {
	switch {
	case fingerprint == "" || motorVersion == "":
		return fmt.Errorf("patterns: put: %w", ora.Invalid("fingerprint", "fingerprint and motor version are required"))
	case ttl <= 0:
		return fmt.Errorf("patterns: put %s: %w", fingerprint, ora.Invalid("ttl", "%v is not positive", ttl))
	case len(body) == 0:
		return fmt.Errorf("patterns: put %s: %w", fingerprint, ora.Invalid("body", "required"))
	case len(body) > maxBody:
		return fmt.Errorf("patterns: put %s: %w", fingerprint, ora.Invalid("body", "%d bytes is over %d", len(body), maxBody))
	}
	end := p.l.now().Add(ttl)
	item := key(prefixPattern+fingerprint, skPattern)
	item["type"] = sv(typePattern)
	item["motor_version"] = sv(motorVersion)
	item["body"] = sv(string(body))
	item["expires_at"] = nv(end.UnixNano())
	item[AttrTTL] = nv(ttlSeconds(end))
	if _, err := p.l.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.l.table), Item: item}); err != nil {
		return fmt.Errorf("patterns: put %s: %w", fingerprint, translate(err))
	}
	return nil
}

// Spend is the reasoner's per-day spend counter on the ledger table (see
// reason.SpendMeter), in whole millionths of a dollar.
type Spend struct{ l *Ledger }

// Spend returns the spend counter on the ledger's table.
func (l *Ledger) Spend() *Spend { return &Spend{l: l} }

func spendDay(day string) (time.Time, error) {
	t, err := time.Parse("2006-01-02", day)
	if err != nil {
		return t, ora.Invalid("day", "%q is not a date (2006-01-02)", day)
	}
	return t, nil
}

// Add adds usd to day's total with one UpdateItem ADD, which DynamoDB applies
// atomically, and returns the new total. Errors: EINVALID (bad day, negative
// or NaN amount), ETRANSIENT.
func (s *Spend) Add(ctx context.Context, day string, usd float64) (float64, error) {
	d, err := spendDay(day)
	if err != nil {
		return 0, fmt.Errorf("spend: add: %w", err)
	}
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return 0, fmt.Errorf("spend: add %s: %w", day, ora.Invalid("usd", "%v is not a non-negative amount", usd))
	}
	out, err := s.l.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.l.table),
		Key:                      key(prefixSpend+day, skSpend),
		UpdateExpression:         aws.String("ADD #micro :v SET #type = :type, #ttl = :ttl"),
		ExpressionAttributeNames: map[string]string{"#micro": "micro_usd", "#type": "type", "#ttl": AttrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":v":    nv(int64(math.Round(usd * 1e6))),
			":type": sv(typeSpend),
			":ttl":  nv(ttlSeconds(d.Add(spendKeep))),
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("spend: add %s: %w", day, translate(err))
	}
	micro, err := getN(out.Attributes, "micro_usd")
	if err != nil {
		return 0, fmt.Errorf("spend: add %s: %w", day, err)
	}
	return float64(micro) / 1e6, nil
}

// Total returns day's total by a strongly consistent read, 0 when nothing
// was spent. Errors: EINVALID, ETRANSIENT.
func (s *Spend) Total(ctx context.Context, day string) (float64, error) {
	if _, err := spendDay(day); err != nil {
		return 0, fmt.Errorf("spend: total: %w", err)
	}
	out, err := s.l.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.l.table),
		Key:            key(prefixSpend+day, skSpend),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("spend: total %s: %w", day, translate(err))
	}
	micro, err := getN(out.Item, "micro_usd")
	if err != nil {
		return 0, fmt.Errorf("spend: total %s: %w", day, err)
	}
	return float64(micro) / 1e6, nil
}
