package ora

// MaxBodyDepth is how deeply a delivered body may nest objects and arrays.
// Real providers' payloads nest a dozen levels; a body nested thousands deep
// is an attack on whatever later renders or decodes it, and is refused at
// ingest in every home.
const MaxBodyDepth = 64

// CheckDepth refuses (EINVALID on "body", naming the byte offset) JSON
// nested deeper than max. It scans the bytes once, strings skipped, without
// decoding; bytes that are not JSON are left for the decoder to refuse.
func CheckDepth(b []byte, max int) error {
	if off := Deeper(b, max); off >= 0 {
		return Invalid("body", "nested deeper than %d levels at byte offset %d", max, off)
	}
	return nil
}

// Deeper returns the byte offset at which b's nesting first exceeds max,
// or -1 when it never does.
func Deeper(b []byte, max int) int {
	depth, inString, escaped := 0, false, false
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return i
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return -1
}
