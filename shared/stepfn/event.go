package stepfn

import (
	"encoding/json"
	"time"
)

// storedEvent is a HistoryEvent as the engine produces it and MemoryStore
// keeps it. An event of one of the frequent kinds (a state entered or exited,
// a Lambda function scheduled or succeeded, a Parallel or Map state and its
// iterations) holds the state it is about and, for the JSON documents of its
// details, the values themselves: they are rendered only when the history is
// read (expand), never during the run. The values are never changed once an
// event holds them: the engine copies, never updates, the JSON values it
// works on. Any other event (evFull) holds the whole HistoryEvent. An event
// other than evFull has no ID of its own: it is the event's position in the
// history, counted from 1 (the engine stores it so only when that holds).
// Its timestamp is nanoseconds since the Unix epoch in UTC or local time
// (the clocks' own), else, as any evFull's, the HistoryEvent's: 48 bytes an
// event rather than 64 with a time.Time.
type storedEvent struct {
	ns   int64  // the timestamp in Unix nanoseconds, in zone
	st   *state // the state the event is about
	val  any    // the JSON value of its details (json.RawMessage: as it is), or *HistoryEvent
	Prev int64
	num  int32 // an index, a length or a timeout
	kind eventKind
	zone eventZone
}

// eventZone says where a storedEvent's timestamp is.
type eventZone uint8

const (
	zoneFull  eventZone = iota // in the HistoryEvent (evFull)
	zoneUTC                    // ns, in UTC
	zoneLocal                  // ns, in time.Local
)

// setTime gives the event its timestamp t; id is the event's ID.
func (c *storedEvent) setTime(t time.Time, id int64) {
	if c.kind == evFull {
		c.val.(*HistoryEvent).Timestamp = t
		return
	}
	// Unix nanoseconds hold the years 1678 to 2262.
	if s := t.Unix(); s > -9e9 && s < 9e9 {
		switch t.Location() {
		case time.UTC:
			c.ns, c.zone = t.UnixNano(), zoneUTC
			return
		case time.Local:
			c.ns, c.zone = t.UnixNano(), zoneLocal
			return
		}
	}
	*c = fullEvent(c.expandAt(id, t))
}

// time returns the event's timestamp.
func (c *storedEvent) time() time.Time {
	switch c.zone {
	case zoneUTC:
		return time.Unix(0, c.ns).UTC()
	case zoneLocal:
		return time.Unix(0, c.ns)
	}
	return c.val.(*HistoryEvent).Timestamp
}

// eventKind says what a storedEvent holds.
type eventKind uint8

const (
	evFull               eventKind = iota // val: *HistoryEvent
	evStateEntered                        // st, val (the input)
	evStateExited                         // st, val (the output)
	evLambdaScheduled                     // st, val (the payload), num (the timeout)
	evLambdaStarted                       //
	evLambdaSucceeded                     // val (the handler's output, which renders as it was)
	evLambdaSucceededRaw                  // val (the handler's output as it was, a json.RawMessage)
	evParallelStarted                     //
	evParallelSucceeded                   //
	evParallelFailed                      //
	evMapStarted                          // num (the number of items)
	evMapSucceeded                        //
	evMapFailed                           //
	evIterationStarted                    // st (the Map state), num (the index)
	evIterationSucceeded                  // st, num
	evIterationFailed                     // st, num
	evIterationAborted                    // st, num
)

// eventTypes names the event types of the kinds that have a fixed one.
var eventTypes = [...]string{
	evLambdaScheduled:    "LambdaFunctionScheduled",
	evLambdaStarted:      "LambdaFunctionStarted",
	evLambdaSucceeded:    "LambdaFunctionSucceeded",
	evLambdaSucceededRaw: "LambdaFunctionSucceeded",
	evParallelStarted:    "ParallelStateStarted",
	evParallelSucceeded:  "ParallelStateSucceeded",
	evParallelFailed:     "ParallelStateFailed",
	evMapStarted:         "MapStateStarted",
	evMapSucceeded:       "MapStateSucceeded",
	evMapFailed:          "MapStateFailed",
	evIterationStarted:   "MapIterationStarted",
	evIterationSucceeded: "MapIterationSucceeded",
	evIterationFailed:    "MapIterationFailed",
	evIterationAborted:   "MapIterationAborted",
}

// fullEvent returns a storedEvent holding ev as it is.
func fullEvent(ev HistoryEvent) storedEvent {
	return storedEvent{Prev: ev.PreviousEventID, kind: evFull, val: &ev}
}

// typ returns the event's type.
func (c *storedEvent) typ() string {
	switch c.kind {
	case evFull:
		return c.val.(*HistoryEvent).Type
	case evStateEntered:
		return c.st.enteredType
	case evStateExited:
		return c.st.exitedType
	}
	return eventTypes[c.kind]
}

// expand returns the event as GetExecutionHistory shows it, rendering the
// JSON documents it holds; id is its ID unless it holds the HistoryEvent.
func (c *storedEvent) expand(id int64) HistoryEvent { return c.expandAt(id, c.time()) }

// expandAt is expand with the event's timestamp.
func (c *storedEvent) expandAt(id int64, t time.Time) HistoryEvent {
	var ev HistoryEvent
	switch c.kind {
	case evFull:
		ev = *c.val.(*HistoryEvent)
	case evStateEntered:
		ev.StateEnteredEventDetails = &StateEnteredDetails{Name: c.st.name, Input: compactJSON(c.val)}
	case evStateExited:
		ev.StateExitedEventDetails = &StateExitedDetails{Name: c.st.name, Output: compactJSON(c.val)}
	case evLambdaScheduled:
		ev.LambdaFunctionScheduledEventDetails = &LambdaScheduledDetails{Resource: c.st.resource, Input: compactJSON(c.val), TimeoutInSeconds: int64(c.num)}
	case evLambdaSucceeded:
		ev.LambdaFunctionSucceededEventDetails = &OutputDetails{Output: compactJSON(c.val)}
	case evLambdaSucceededRaw:
		raw, _ := c.val.(json.RawMessage)
		ev.LambdaFunctionSucceededEventDetails = &OutputDetails{Output: rawOutput(raw)}
	case evMapStarted:
		ev.MapStateStartedEventDetails = &MapStateStartedDetails{Length: int(c.num)}
	case evIterationStarted:
		ev.MapIterationStartedEventDetails = &MapIterationDetails{Name: c.st.name, Index: int(c.num)}
	case evIterationSucceeded:
		ev.MapIterationSucceededEventDetails = &MapIterationDetails{Name: c.st.name, Index: int(c.num)}
	case evIterationFailed:
		ev.MapIterationFailedEventDetails = &MapIterationDetails{Name: c.st.name, Index: int(c.num)}
	case evIterationAborted:
		ev.MapIterationAbortedEventDetails = &MapIterationDetails{Name: c.st.name, Index: int(c.num)}
	}
	if c.kind != evFull {
		ev.ID = id
	}
	ev.Type = c.typ()
	ev.PreviousEventID, ev.Timestamp = c.Prev, t
	return ev
}
