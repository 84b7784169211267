package policy

// expand replaces the tokens of template with their values in params and
// returns the tokens params lacks, in order of appearance, each once. It
// reads templates as external-provisioner does (with Go's os.Expand), so
// that a StorageClass resolves to the same secret here and there:
//
//	${name}   the token name, any text up to the first '}'
//	$name     the longest run of letters, digits and '_' after '$'
//	$c        for c one of * # $ @ ! ? - or a digit, the one-byte token c
//	${}       dropped; "${" without a closing '}' drops the "${"
//
// A '$' followed by anything else, or at the end, stays as it is.
func expand(template string, params map[string]string) (string, []string) {
	var out []byte
	var missing []string
	lookup := func(token string) {
		v, ok := params[token]
		if !ok {
			for _, m := range missing {
				if m == token {
					return
				}
			}
			missing = append(missing, token)
		}
		out = append(out, v...)
	}
	for i := 0; i < len(template); i++ {
		c := template[i]
		if c != '$' || i+1 == len(template) {
			out = append(out, c)
			continue
		}
		rest := template[i+1:]
		switch {
		case rest[0] == '{':
			end := indexByte(rest, '}')
			switch {
			case end < 0:
				i++ // "${" with no end: drop both
			case end == 1:
				i += 2 // "${}": drop it
			default:
				lookup(rest[1:end])
				i += end + 1
			}
		case specialToken(rest[0]):
			lookup(rest[:1])
			i++
		default:
			n := 0
			for n < len(rest) && wordByte(rest[n]) {
				n++
			}
			if n == 0 {
				out = append(out, c)
				continue
			}
			lookup(rest[:n])
			i += n
		}
	}
	return string(out), missing
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

func specialToken(c byte) bool {
	switch c {
	case '*', '#', '$', '@', '!', '?', '-':
		return true
	}
	return '0' <= c && c <= '9'
}

func wordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// isDNS1123Label reports whether s is a valid namespace name: at most 63
// lower-case letters, digits and '-', starting and ending with a letter or
// digit.
func isDNS1123Label(s string) bool {
	return len(s) <= 63 && labelChars(s)
}

// isDNS1123Subdomain reports whether s is a valid Secret name: at most 253
// characters of dot-separated parts, each made like a label (without the
// label's length limit).
func isDNS1123Subdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if !labelChars(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

// labelChars reports whether s is non-empty lower-case letters, digits and
// '-', starting and ending with a letter or digit.
func labelChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}
