package sfnapi

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/ora-runtime/ora/shared/stepfn"
)

// epoch is a timestamp as AWS JSON 1.0 sends it: seconds since the Unix
// epoch, with milliseconds.
type epoch time.Time

// MarshalJSON writes the seconds as a JSON number.
func (t epoch) MarshalJSON() ([]byte, error) {
	ms := time.Time(t).UnixMilli()
	return strconv.AppendFloat(nil, float64(ms)/1000, 'f', -1, 64), nil
}

// at returns t as an epoch, nil for the zero time (the field is left out).
func at(t time.Time) *epoch {
	if t.IsZero() {
		return nil
	}
	e := epoch(t)
	return &e
}

// details says whether data was included in a response (AWS's
// CloudWatchEventsExecutionDataDetails).
type details struct {
	Included bool `json:"included"`
}

// executionDoc is DescribeExecution's answer (and, with fewer fields,
// StartSyncExecution's and an item of ListExecutions).
type executionDoc struct {
	ExecutionArn    string   `json:"executionArn"`
	StateMachineArn string   `json:"stateMachineArn"`
	Name            string   `json:"name"`
	Status          string   `json:"status"`
	StartDate       *epoch   `json:"startDate"`
	StopDate        *epoch   `json:"stopDate,omitempty"`
	Input           *string  `json:"input,omitempty"`
	InputDetails    *details `json:"inputDetails,omitempty"`
	Output          *string  `json:"output,omitempty"`
	OutputDetails   *details `json:"outputDetails,omitempty"`
	Error           string   `json:"error,omitempty"`
	Cause           string   `json:"cause,omitempty"`
	RedriveCount    *int     `json:"redriveCount,omitempty"`
	RedriveDate     *epoch   `json:"redriveDate,omitempty"`
	RedriveStatus   string   `json:"redriveStatus,omitempty"`
}

// describe renders an execution as DescribeExecution answers it.
func describe(x stepfn.Execution) executionDoc {
	d := listItem(x)
	in := string(x.Input)
	d.Input, d.InputDetails = &in, &details{Included: true}
	if x.Status == stepfn.StatusSucceeded {
		out := string(x.Output)
		d.Output, d.OutputDetails = &out, &details{Included: true}
	}
	d.Error, d.Cause = x.Error, x.Cause
	switch x.Status {
	case stepfn.StatusFailed, stepfn.StatusTimedOut, stepfn.StatusAborted:
		d.RedriveStatus = "REDRIVABLE"
	default:
		d.RedriveStatus = "NOT_REDRIVABLE"
	}
	return d
}

// listItem renders an execution as an item of ListExecutions.
func listItem(x stepfn.Execution) executionDoc {
	d := executionDoc{ExecutionArn: x.ExecutionArn, StateMachineArn: x.StateMachineArn, Name: x.Name,
		Status: x.Status, StartDate: at(x.StartDate), StopDate: at(x.StopDate), RedriveDate: at(x.RedriveDate)}
	if x.RedriveCount > 0 {
		n := x.RedriveCount
		d.RedriveCount = &n
	}
	return d
}

// eventDoc is one history event as GetExecutionHistory answers it: the
// engine's event (already in AWS's shape and names) with the timestamp in
// epoch seconds.
type eventDoc struct {
	stepfn.HistoryEvent
	Timestamp *epoch `json:"timestamp"`
}

// withoutData returns ev without its input and output documents
// (includeExecutionData false).
func withoutData(ev stepfn.HistoryEvent) stepfn.HistoryEvent {
	b, _ := json.Marshal(ev)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for k, v := range m {
		d, ok := v.(map[string]any)
		if !ok {
			continue
		}
		for _, f := range []string{"input", "output", "parameters"} {
			delete(d, f)
		}
		m[k] = d
	}
	b, _ = json.Marshal(m)
	var out stepfn.HistoryEvent
	_ = json.Unmarshal(b, &out)
	return out
}

// page cuts items[from:] to at most max and returns the next page's token
// ("" on the last page). Tokens are opaque to clients: the offset, encoded.
func page(n, from, max int) (end int, next string) {
	end = n
	if from+max < n {
		end = from + max
		next = base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(end)))
	}
	return end, next
}

// pageStart decodes a nextToken ("" is the first page) and checks maxResults
// (0 means the default; AWS allows up to 1000). It returns the offset and the
// page size.
func pageStart(token string, maxResults int, def int) (int, int, error) {
	if maxResults < 0 || maxResults > 1000 {
		return 0, 0, validation("maxResults must be between 0 and 1000, got %d", maxResults)
	}
	if maxResults == 0 {
		maxResults = def
	}
	if token == "" {
		return 0, maxResults, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) < 3 || string(b[:2]) != "o:" {
		return 0, 0, clientErr(codeInvalidToken, "the nextToken is not one this endpoint issued")
	}
	from, err := strconv.Atoi(string(b[2:]))
	if err != nil || from < 0 || from > math.MaxInt32 {
		return 0, 0, clientErr(codeInvalidToken, "the nextToken is not one this endpoint issued")
	}
	return from, maxResults, nil
}
