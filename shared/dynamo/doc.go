// Package dynamo implements ora's stores on Amazon DynamoDB (aws-sdk-go-v2):
// the ledger and debounce on one table (Ledger), and idempotency records. It
// runs unchanged against AWS and DynamoDB Local: the endpoint is the client's
// configuration (BaseEndpoint), never a branch in this code.
//
// # The ledger table
//
// One table holds every ledger record (single-table design); LedgerTableInput
// describes it and the CDK app builds the same one. Keys and index keys are
// strings; billing is on demand; the stream carries NEW_AND_OLD_IMAGES (the
// table-change signal source reads it); TTL is on the attribute "ttl" (epoch
// seconds). Every item has a "type" attribute naming its kind.
//
//	type        PK                 SK                         GSI1PK / GSI1SK                          GSI2PK / GSI2SK
//	entry       SIGNAL#<signal>    ENTRY#<kind>#<qualifier>   KIND#<kind> / <created_at>#<signal>#<q>   -
//	decision    DECISION#<id>      STATE                      -                                          -
//	commitment  COMMITMENT#<id>    COMMITMENT                 -                                          OPEN / <opened_at>#<id> (open only)
//	debounce    DEBOUNCE#<key>     DEBOUNCE                   -                                          -
//	fact-body   FACT#<sha256>      BODY                       -                                          -
//
// Times in keys and attributes use a fixed-width UTC layout
// (2006-01-02T15:04:05.000000000Z) so that their strings sort as the instants.
//
//   - entry: the write-once ledger record, one per (signal, kind, qualifier),
//     written with attribute_not_exists(PK). A losing write asks for
//     ReturnValuesOnConditionCheckFailure=ALL_OLD and returns ECONFLICT carrying
//     the stored ora.Entry. Attributes: signal_id, kind, qualifier, author_type,
//     body (the JSON as a string attribute, byte for byte, so the digest holds),
//     meta (map), digest, created_at, and for entries with an expiry expires_at
//     and ttl. All entries of a signal are one strongly consistent Query on the
//     signal's partition, sorted in code by created_at, kind rank, qualifier.
//   - GSI1 (IndexRecent): recent entries of one kind in a time range, newest
//     first: GSI1PK = KIND#<kind>, GSI1SK BETWEEN from AND to (every key at an
//     instant sorts after the bare timestamp, so the range is [from, to)).
//   - decision: a reasoner decision's mutable status record: decision_id,
//     signal_id, status, digest (of the reasoner-decision entry's body),
//     reason, version, updated_at. RecordDecision puts it together with the
//     decision's entry in one TransactWriteItems; TransitionDecision is an
//     UpdateItem conditional on status = the expected old status, so of two
//     concurrent executors exactly one wins and the other gets ECONFLICT
//     carrying the current ora.DecisionState.
//   - commitment: id, signal_id, title, body, status, opened_at, closed_at,
//     closed_by, version. Only open commitments carry GSI2PK/GSI2SK, so GSI2
//     (IndexOpen) is sparse and lists open commitments oldest first; closing
//     is an update conditional on status = open that removes those keys.
//   - debounce: expires_at (Unix nanoseconds, the end of the window) and ttl.
//     A call wins through a put conditional on attribute_not_exists(PK) OR
//     expires_at < now, which holds across concurrent Lambdas; the window is
//     checked in that condition, TTL only clears old records away.
//   - fact-body: a fact's normalized body, kept once for every observed-fact
//     and orientation-packet entry that refers to it (factrefs.go): body and,
//     unless kept, ttl.
//
// GSI1 holds only the kinds in ora.RecentKinds, spread by signal id over
// DefaultRecentShards index partitions per kind (GSI1PK = KIND#<kind>#<shard>);
// Recent queries every shard and merges. GSI2 is spread the same way, by
// commitment id (GSI2PK = OPEN, OPEN#1, ...: shard 0 keeps the unsharded
// key); OpenCommitments queries every shard and merges, oldest first.
//
// Queries through the GSIs are eventually consistent, as GSIs are on AWS: an
// entry or a close may take a moment to show in Recent or OpenCommitments.
//
// # Errors
//
// SDK errors are translated at this boundary: a failed condition is
// ECONFLICT (carrying the stored record where the operation can say what it
// is); ProvisionedThroughputExceeded, RequestLimitExceeded, ThrottlingException,
// transaction conflicts, 5xx answers, deadlines and network timeouts are
// ETRANSIENT, which callers may retry.
package dynamo
