package observe

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

// EnvOptions reads the optional settings of the observe-* Lambdas from the
// environment: ORA_ESCALATION_TIMEOUT_SECONDS (default 86400) and
// ORA_MAX_BODY_BYTES (default 262144), ORA_COALESCE_WINDOW_MS (the
// coalescing window in milliseconds; unset or 0: off) and
// ORA_COALESCE_SOURCES (a JSON object of source name to "off" or a payload
// path; see CoalesceConfig.Sources). Errors: EINVALID naming the variable.
func EnvOptions(getenv func(string) string) (func(*Options), error) {
	var timeout time.Duration
	var maxBody int64
	var coalesce CoalesceConfig
	if v := getenv("ORA_COALESCE_WINDOW_MS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, ora.Invalid("ORA_COALESCE_WINDOW_MS", "%q is not a non-negative integer", v)
		}
		coalesce.Window = time.Duration(n) * time.Millisecond
	}
	if v := getenv("ORA_COALESCE_SOURCES"); v != "" {
		if err := json.Unmarshal([]byte(v), &coalesce.Sources); err != nil {
			return nil, ora.Invalid("ORA_COALESCE_SOURCES", "not a JSON object of source name to \"off\" or a payload path: %v", err)
		}
	}
	if v := getenv("ORA_ESCALATION_TIMEOUT_SECONDS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return nil, ora.Invalid("ORA_ESCALATION_TIMEOUT_SECONDS", "%q is not a positive integer", v)
		}
		timeout = time.Duration(n) * time.Second
	}
	if v := getenv("ORA_MAX_BODY_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return nil, ora.Invalid("ORA_MAX_BODY_BYTES", "%q is not a positive integer", v)
		}
		maxBody = n
	}
	return func(o *Options) {
		if timeout > 0 {
			o.EscalationTimeout = timeout
		}
		if maxBody > 0 {
			o.MaxBody = maxBody
		}
		if coalesce.Window > 0 {
			o.Coalesce = coalesce
		}
	}, nil
}

// ParseSources decodes a JSON array of source configs (the observe-webhook
// Lambda's ORA_SOURCES, or the Secrets Manager secret ORA_SOURCES_SECRET_ARN
// names) and validates each. Empty input is no sources. Errors: EINVALID.
func ParseSources(b []byte) ([]SourceConfig, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var out []SourceConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, ora.Invalid("sources", "not a JSON array of {name, type, secret, header, hash}: %v", err)
	}
	seen := map[string]bool{}
	for i := range out {
		if err := out[i].Validate(); err != nil {
			return nil, err
		}
		if seen[out[i].Name] {
			return nil, ora.Invalid("source.name", "%q is configured twice", out[i].Name)
		}
		seen[out[i].Name] = true
	}
	return out, nil
}

// ParseTables decodes observe-table's ORA_TABLES, a JSON array of the user's
// tables ({name, stream_arn}), and validates each. Empty input is none.
// Errors: EINVALID.
func ParseTables(b []byte) ([]TableConfig, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var out []TableConfig
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, ora.Invalid("tables", "not a JSON array of {name, stream_arn}: %v", err)
	}
	for _, t := range out {
		if err := t.Validate(); err != nil {
			return nil, err
		}
		if t.StreamARN == "" {
			return nil, ora.Invalid("tables.stream_arn", "table %s: required", t.Name)
		}
	}
	return out, nil
}
