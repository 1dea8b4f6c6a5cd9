package jsonenc

// maxDepth is encoding/json's nesting limit: a value nested deeper is not
// valid for json.Valid.
const maxDepth = 10000

// Valid reports whether b is exactly one JSON value, with optional white
// space around it. It answers as json.Valid does for every input (same
// nesting limit; bytes that are not UTF-8 inside a string are accepted, as
// json.Valid accepts them), in one pass without json's scanner: the stores
// check every JSON field of every write (FuzzValid compares the two).
func Valid(b []byte) bool {
	var buf [64]byte
	stack := buf[:0] // the open containers, '{' or '['
	i := space(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxDepth {
				return false
			}
			stack = append(stack, c)
			i = space(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']': empty
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			continue // the first value (of the member)
		case c == '"':
			if i = str(b, i); i < 0 {
				return false
			}
		case c == 't':
			if !lit(b, i, "true") {
				return false
			}
			i += 4
		case c == 'f':
			if !lit(b, i, "false") {
				return false
			}
			i += 5
		case c == 'n':
			if !lit(b, i, "null") {
				return false
			}
			i += 4
		default:
			if i = number(b, i); i < 0 {
				return false
			}
		}
		// After a value: close containers, or go on to the next value.
		for {
			i = space(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = space(b, i+1)
			if top == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// space returns the index of the first byte at or after i that is not
// JSON white space.
func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// member checks an object member's key and colon at i and returns where
// its value starts, or -1.
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = str(b, i); i < 0 {
		return -1
	}
	i = space(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return space(b, i+1)
}

func lit(b []byte, i int, s string) bool {
	return len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

// str checks the string whose opening quote is at i and returns the index
// after its closing quote, or -1.
func str(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// number checks the number at i and returns the index after it, or -1.
func number(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
