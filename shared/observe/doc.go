// Package observe is the Observer of seed 000: it turns what arrives from the
// four signal sources (webhooks, schedules, objects, table changes) into
// ora.NormalizedSignal, captures each as a signal-received ledger entry and
// starts one wave per signal, named after the signal id.
//
// Normalization is a pure function of the raw input the observer keeps
// (Normalize), so the witness can normalize a stored signal again and compare.
// Signal ids are derived from the source name and the dedup key (SignalID), so
// a redelivery maps to the same id: the conditional append is the first dedup
// layer, the wave starter's idempotency by name (Step Functions execution
// names) the second.
package observe
