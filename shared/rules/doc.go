// Package rules is ora's rules reasoner: a versioned YAML file of boolean
// predicates over the normalized signal and the wave's orientation packet
// (its facts, counts by family, open commitments and recent actions), checked in order (first match wins,
// then a default), each giving the action to take, its parameters, a
// confidence, a validation tier, the scope the actor is bound by, the author
// type the reasoner acted as and the reasoning. Reasoner implements
// ora.Reasoner; decisions are deterministic: the same signal and the same
// rules version yield the same decision id, action, parameters and confidence.
package rules
