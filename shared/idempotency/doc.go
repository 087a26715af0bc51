// Package idempotency makes any function idempotent, the way Powertools for AWS
// Lambda (Python) does with @idempotent and @idempotent_function, on an
// ora.IdempotencyStore: shared/sqlite for the embedded runtime, shared/dynamo
// (a separate table keyed by "id", TTL attribute "expiration") on AWS.
//
//	idem := idempotency.New(store, func(o *idempotency.Options) { o.KeyPrefix = "act" })
//	act := idempotency.Wrap(idem, func(in Input) (string, error) { return in.DecisionID, nil }, svc.Act)
//	out, err := act(ctx, in) // runs svc.Act once per decision; duplicates get its result
//
// # How a call goes
//
// Do writes an INPROGRESS record for the key with one conditional write that
// succeeds when there is no record, when the record has expired, or when it is
// an INPROGRESS lock whose in-progress expiry has passed (its invocation
// crashed or timed out). The lock's in-progress expiry is the context's
// deadline: in Lambda, the invocation's deadline, the Go counterpart of the
// remaining time Powertools reads from the Lambda context. Then the function
// runs; its result is stored as COMPLETED, JSON-encoded, for Options.Expiry
// (1 h by default). If it fails, the lock is deleted and its error returned
// unchanged, so a retry runs it again.
//
// When the write loses, the store returns the record it found and Do answers
// from it without running anything: a COMPLETED record gives the stored
// response; an INPROGRESS one gives *InProgressError, whose ora code is
// ETRANSIENT (taskerr.From turns it into TransientError, the one error the
// state machine retries); a record written with another payload gives EINVALID
// on field "payload". Expiry is compared against Options.Now in code: the
// store's TTL only cleans up, which on DynamoDB may lag by days.
//
// # Against Powertools for AWS Lambda (Python)
//
//	Powertools                                      here
//	INPROGRESS / COMPLETED records                  same (EXPIRED is implied by ExpiresAt <= now)
//	in_progress_expiration from the Lambda context  from ctx.Deadline() (aws-lambda-go sets the invocation's)
//	no in-progress expiry without a Lambda context  Options.InProgressFallback (15 min) without a deadline
//	expires_after_seconds (3600)                    Options.Expiry (1 h)
//	expiry checked in code, TTL only cleans         same
//	payload_validation_jmespath (opt-in)            always on: sha256 of the canonical JSON of the whole payload
//	IdempotencyValidationError                      ora EINVALID, field "payload"
//	IdempotencyAlreadyInProgressError               *InProgressError (ora ETRANSIENT)
//	record deleted when the function raises         same; the error is returned unchanged
//	event_key_jmespath, key stored as its md5       the key argument of Do, or Wrap's key function, stored as given
//	raise_on_no_idempotency_key                     always: an empty key is EINVALID, field "key"
//	function_name prefix on the key                 Options.KeyPrefix
//	idempotent_function(data_keyword_argument)      Wrap (payload = the input) or Do (any payload)
//	DynamoDB: conditional put, ALL_OLD on failure   same, one round trip for a duplicate
//	key "id", "expiration", "in_progress_expiration", "status", "data", "validation"   same names
//	hash_function (md5 default)                     sha256 only
//	use_local_cache (in-memory LRU)                 not provided: a Lambda's memory is not shared, the store is
//	output_serializer / response_hook               JSON only; no hook
//	Redis and custom persistence layers             any ora.IdempotencyStore; SQLite and DynamoDB provided
//	POWERTOOLS_IDEMPOTENCY_DISABLED                 not provided
//
// As in Powertools, a lock whose holder outlived its in-progress expiry can be
// taken over, so the function may then run twice; keep the context's deadline
// (the Lambda timeout) above the function's real duration.
package idempotency
