package shell

import (
	"fmt"
	"strings"
)

// segment is part of a word: literal text, or text in which $VAR expands.
type segment struct {
	text   string
	expand bool
}

type word []segment

// redir is one redirection: fd op target, e.g. 2>/dev/null, >>log, 2>&1.
type redir struct {
	fd     int
	op     string // ">", ">>", "<", ">&"
	target word
}

// simple is one command: words and redirections, or a compound command
// (a { list; } group or a ( list ) subshell) with redirections.
type simple struct {
	args     []word
	redirs   []redir
	group    []andOr
	subshell bool
}

type pipeline []simple

// andOr is a pipeline with the operator joining it to the previous one.
type andOr struct {
	op   string // "", ";", "&&", "||"
	pipe pipeline
}

type token struct {
	op   string // operator, or "" for a word
	w    word
	fd   int // for redirection operators: the fd before it
	dupe bool
}

// lex splits a command line into words and operators, honouring single and
// double quotes and backslashes as mksh does.
func lex(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == '\n' || c == ';':
			toks = append(toks, token{op: ";"})
			i++
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '(' || c == ')':
			toks = append(toks, token{op: string(c)})
			i++
		case c == '&':
			if strings.HasPrefix(s[i:], "&&") {
				toks = append(toks, token{op: "&&"})
				i += 2
			} else {
				return nil, fmt.Errorf("syntax error: background jobs ('&') are not supported")
			}
		case c == '|':
			if strings.HasPrefix(s[i:], "||") {
				toks = append(toks, token{op: "||"})
				i += 2
			} else {
				toks = append(toks, token{op: "|"})
				i++
			}
		case c == '>' || c == '<' || (c >= '0' && c <= '9' && i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '<') && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t')):
			fd := -1
			if c >= '0' && c <= '9' {
				fd = int(c - '0')
				i++
			}
			op := string(s[i])
			i++
			if op == ">" && i < len(s) && s[i] == '>' {
				op = ">>"
				i++
			} else if op == ">" && i < len(s) && s[i] == '&' {
				op = ">&"
				i++
			}
			if fd < 0 {
				fd = 1
				if op == "<" {
					fd = 0
				}
			}
			toks = append(toks, token{op: op, fd: fd})
		default:
			w, n, err := lexWord(s[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{w: w})
			i += n
		}
	}
	return toks, nil
}

func isOpChar(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '>' || c == '<' || c == '(' || c == ')'
}

// lexWord reads one word and returns it with the bytes consumed.
func lexWord(s string) (word, int, error) {
	var w word
	var cur strings.Builder
	flush := func(expand bool) {
		if cur.Len() > 0 {
			w = append(w, segment{cur.String(), expand})
			cur.Reset()
		}
	}
	i := 0
	for i < len(s) && !isOpChar(s[i]) {
		switch c := s[i]; c {
		case '\'':
			flush(true)
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, 0, fmt.Errorf("syntax error: unterminated '")
			}
			w = append(w, segment{s[i+1 : i+1+j], false})
			if j == 0 {
				w = append(w, segment{"", false})
			}
			i += j + 2
		case '"':
			flush(true)
			i++
			var q strings.Builder
			closed := false
			for i < len(s) {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					if s[i+1] == '$' {
						// Keep \$ literal through expansion.
						q.WriteString("\\$")
					} else {
						q.WriteByte(s[i+1])
					}
					i += 2
					continue
				}
				if s[i] == '"' {
					closed = true
					i++
					break
				}
				q.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, 0, fmt.Errorf("syntax error: unterminated \"")
			}
			w = append(w, segment{q.String(), true})
			if q.Len() == 0 {
				w = append(w, segment{"", false})
			}
		case '\\':
			if i+1 < len(s) {
				flush(true)
				w = append(w, segment{s[i+1 : i+2], false})
				i += 2
			} else {
				i++
			}
		default:
			cur.WriteByte(c)
			i++
		}
	}
	flush(true)
	return w, i, nil
}

// parse turns tokens into and-or lists of pipelines.
func parse(toks []token) ([]andOr, error) {
	list, i, err := parseList(toks, 0, "")
	if err != nil {
		return nil, err
	}
	if i < len(toks) {
		return nil, fmt.Errorf("syntax error: unexpected '%s'", tokText(toks[i]))
	}
	return list, nil
}

func tokText(t token) string {
	if t.op != "" {
		return t.op
	}
	return t.w.expand(func(string) string { return "" })
}

// isWord reports whether t is the unquoted literal word s ("{" or "}").
func isWord(t token, s string) bool {
	return t.op == "" && len(t.w) == 1 && t.w[0].expand && t.w[0].text == s
}

// parseList parses and-or lists from toks[i:] until closer ("}" as a word
// at a command's start, ")" as an operator, or "" for the end) and returns
// the index of the closer.
func parseList(toks []token, i int, closer string) ([]andOr, int, error) {
	var out []andOr
	var pipe pipeline
	var cmd simple
	op := ""
	started := func() bool { return len(cmd.args) > 0 || len(cmd.redirs) > 0 || cmd.group != nil }
	endCmd := func() error {
		if !started() {
			return fmt.Errorf("syntax error: unexpected operator")
		}
		pipe = append(pipe, cmd)
		cmd = simple{}
		return nil
	}
	for ; i < len(toks); i++ {
		t := toks[i]
		atStart := len(cmd.args) == 0 && cmd.group == nil
		switch {
		case closer == "}" && atStart && isWord(t, "}"), closer == ")" && t.op == ")":
			goto done
		case t.op == ")":
			return nil, i, fmt.Errorf("syntax error: unexpected ')'")
		case atStart && (isWord(t, "{") || t.op == "("):
			inner, j, err := parseList(toks, i+1, map[bool]string{true: ")", false: "}"}[t.op == "("])
			if err != nil {
				return nil, j, err
			}
			if j >= len(toks) {
				return nil, j, fmt.Errorf("syntax error: missing '%s'", map[bool]string{true: ")", false: "}"}[t.op == "("])
			}
			if len(inner) == 0 {
				return nil, j, fmt.Errorf("syntax error: empty command group")
			}
			cmd.group, cmd.subshell = inner, t.op == "("
			i = j
		case t.op == "":
			if cmd.group != nil {
				return nil, i, fmt.Errorf("syntax error: unexpected word after a command group")
			}
			cmd.args = append(cmd.args, t.w)
		case t.op == ">" || t.op == ">>" || t.op == "<" || t.op == ">&":
			if i+1 >= len(toks) || toks[i+1].op != "" {
				return nil, i, fmt.Errorf("syntax error: redirection %s without a target", t.op)
			}
			cmd.redirs = append(cmd.redirs, redir{fd: t.fd, op: t.op, target: toks[i+1].w})
			i++
		case t.op == "|":
			if err := endCmd(); err != nil {
				return nil, i, err
			}
		case t.op == ";" || t.op == "&&" || t.op == "||":
			if !started() && len(pipe) == 0 {
				if t.op == ";" {
					continue
				}
				return nil, i, fmt.Errorf("syntax error: unexpected '%s'", t.op)
			}
			if err := endCmd(); err != nil {
				return nil, i, err
			}
			out = append(out, andOr{op: op, pipe: pipe})
			pipe = nil
			op = t.op
		}
	}
	if closer != "" {
		return nil, i, fmt.Errorf("syntax error: missing '%s'", closer)
	}
done:
	if started() {
		if err := endCmd(); err != nil {
			return nil, i, err
		}
	} else if len(pipe) > 0 || op == "&&" || op == "||" {
		return nil, i, fmt.Errorf("syntax error: unexpected end of line")
	}
	if len(pipe) > 0 {
		out = append(out, andOr{op: op, pipe: pipe})
	}
	return out, i, nil
}

// expand substitutes $NAME, ${NAME} and $? in the expandable segments.
func (w word) expand(vars func(string) string) string {
	var b strings.Builder
	for _, seg := range w {
		if !seg.expand {
			b.WriteString(seg.text)
			continue
		}
		s := seg.text
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' && i+1 < len(s) && s[i+1] == '$' {
				b.WriteByte('$')
				i++
				continue
			}
			if s[i] != '$' || i+1 >= len(s) {
				b.WriteByte(s[i])
				continue
			}
			j := i + 1
			switch {
			case s[j] == '?' || s[j] == '$' || s[j] == '#':
				b.WriteString(vars(s[j : j+1]))
				i = j
			case s[j] == '{':
				k := strings.IndexByte(s[j:], '}')
				if k < 0 {
					b.WriteString(s[i:])
					i = len(s)
					continue
				}
				b.WriteString(vars(s[j+1 : j+k]))
				i = j + k
			case isNameChar(s[j]):
				k := j
				for k < len(s) && isNameChar(s[k]) {
					k++
				}
				b.WriteString(vars(s[j:k]))
				i = k - 1
			default:
				b.WriteByte('$')
			}
		}
	}
	return b.String()
}

func isNameChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
