package stepfn

import "time"

// storedEvent is a HistoryEvent as MemoryStore keeps it: the one details
// pointer an event carries, and its index, instead of a pointer field per
// event type (a quarter of the size to store and copy).
type storedEvent struct {
	Type      string
	ID, Prev  int64
	Timestamp time.Time
	field     uint8
	details   any
}

func compactEvent(ev HistoryEvent) storedEvent {
	c := storedEvent{Type: ev.Type, ID: ev.ID, Prev: ev.PreviousEventID, Timestamp: ev.Timestamp}
	switch {
	case ev.ExecutionStartedEventDetails != nil:
		c.field, c.details = 1, ev.ExecutionStartedEventDetails
	case ev.ExecutionSucceededEventDetails != nil:
		c.field, c.details = 2, ev.ExecutionSucceededEventDetails
	case ev.ExecutionFailedEventDetails != nil:
		c.field, c.details = 3, ev.ExecutionFailedEventDetails
	case ev.ExecutionAbortedEventDetails != nil:
		c.field, c.details = 4, ev.ExecutionAbortedEventDetails
	case ev.ExecutionTimedOutEventDetails != nil:
		c.field, c.details = 5, ev.ExecutionTimedOutEventDetails
	case ev.ExecutionRedrivenEventDetails != nil:
		c.field, c.details = 6, ev.ExecutionRedrivenEventDetails
	case ev.StateEnteredEventDetails != nil:
		c.field, c.details = 7, ev.StateEnteredEventDetails
	case ev.StateExitedEventDetails != nil:
		c.field, c.details = 8, ev.StateExitedEventDetails
	case ev.TaskScheduledEventDetails != nil:
		c.field, c.details = 9, ev.TaskScheduledEventDetails
	case ev.TaskStartedEventDetails != nil:
		c.field, c.details = 10, ev.TaskStartedEventDetails
	case ev.TaskSubmittedEventDetails != nil:
		c.field, c.details = 11, ev.TaskSubmittedEventDetails
	case ev.TaskSucceededEventDetails != nil:
		c.field, c.details = 12, ev.TaskSucceededEventDetails
	case ev.TaskFailedEventDetails != nil:
		c.field, c.details = 13, ev.TaskFailedEventDetails
	case ev.TaskTimedOutEventDetails != nil:
		c.field, c.details = 14, ev.TaskTimedOutEventDetails
	case ev.LambdaFunctionScheduledEventDetails != nil:
		c.field, c.details = 15, ev.LambdaFunctionScheduledEventDetails
	case ev.LambdaFunctionSucceededEventDetails != nil:
		c.field, c.details = 16, ev.LambdaFunctionSucceededEventDetails
	case ev.LambdaFunctionFailedEventDetails != nil:
		c.field, c.details = 17, ev.LambdaFunctionFailedEventDetails
	case ev.LambdaFunctionTimedOutEventDetails != nil:
		c.field, c.details = 18, ev.LambdaFunctionTimedOutEventDetails
	case ev.MapStateStartedEventDetails != nil:
		c.field, c.details = 19, ev.MapStateStartedEventDetails
	case ev.MapIterationStartedEventDetails != nil:
		c.field, c.details = 20, ev.MapIterationStartedEventDetails
	case ev.MapIterationSucceededEventDetails != nil:
		c.field, c.details = 21, ev.MapIterationSucceededEventDetails
	case ev.MapIterationFailedEventDetails != nil:
		c.field, c.details = 22, ev.MapIterationFailedEventDetails
	case ev.MapIterationAbortedEventDetails != nil:
		c.field, c.details = 23, ev.MapIterationAbortedEventDetails
	}
	return c
}

func (c storedEvent) expand() HistoryEvent {
	ev := HistoryEvent{Type: c.Type, ID: c.ID, PreviousEventID: c.Prev, Timestamp: c.Timestamp}
	switch c.field {
	case 1:
		ev.ExecutionStartedEventDetails = c.details.(*ExecutionStartedDetails)
	case 2:
		ev.ExecutionSucceededEventDetails = c.details.(*OutputDetails)
	case 3:
		ev.ExecutionFailedEventDetails = c.details.(*FailureDetails)
	case 4:
		ev.ExecutionAbortedEventDetails = c.details.(*FailureDetails)
	case 5:
		ev.ExecutionTimedOutEventDetails = c.details.(*FailureDetails)
	case 6:
		ev.ExecutionRedrivenEventDetails = c.details.(*RedrivenDetails)
	case 7:
		ev.StateEnteredEventDetails = c.details.(*StateEnteredDetails)
	case 8:
		ev.StateExitedEventDetails = c.details.(*StateExitedDetails)
	case 9:
		ev.TaskScheduledEventDetails = c.details.(*TaskScheduledDetails)
	case 10:
		ev.TaskStartedEventDetails = c.details.(*TaskDetails)
	case 11:
		ev.TaskSubmittedEventDetails = c.details.(*TaskOutputDetails)
	case 12:
		ev.TaskSucceededEventDetails = c.details.(*TaskOutputDetails)
	case 13:
		ev.TaskFailedEventDetails = c.details.(*TaskFailureDetails)
	case 14:
		ev.TaskTimedOutEventDetails = c.details.(*TaskFailureDetails)
	case 15:
		ev.LambdaFunctionScheduledEventDetails = c.details.(*LambdaScheduledDetails)
	case 16:
		ev.LambdaFunctionSucceededEventDetails = c.details.(*OutputDetails)
	case 17:
		ev.LambdaFunctionFailedEventDetails = c.details.(*FailureDetails)
	case 18:
		ev.LambdaFunctionTimedOutEventDetails = c.details.(*FailureDetails)
	case 19:
		ev.MapStateStartedEventDetails = c.details.(*MapStateStartedDetails)
	case 20:
		ev.MapIterationStartedEventDetails = c.details.(*MapIterationDetails)
	case 21:
		ev.MapIterationSucceededEventDetails = c.details.(*MapIterationDetails)
	case 22:
		ev.MapIterationFailedEventDetails = c.details.(*MapIterationDetails)
	case 23:
		ev.MapIterationAbortedEventDetails = c.details.(*MapIterationDetails)
	}
	return ev
}
