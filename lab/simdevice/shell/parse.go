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
		case c == '(' || c == ')' || c == '&' || c == '|':
			t, n, err := lexControl(s[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			i += n
		case isRedirStart(s, i):
			t, n := lexRedir(s[i:])
			toks = append(toks, t)
			i += n
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

// lexControl reads the control operator s starts with ( "(", ")", "&&",
// "||", "|") and returns it with the bytes consumed; a lone '&' (a
// background job) is refused.
func lexControl(s string) (token, int, error) {
	switch {
	case s[0] == '(' || s[0] == ')':
		return token{op: s[:1]}, 1, nil
	case strings.HasPrefix(s, "&&"), strings.HasPrefix(s, "||"):
		return token{op: s[:2]}, 2, nil
	case s[0] == '|':
		return token{op: "|"}, 1, nil
	}
	return token{}, 0, fmt.Errorf("syntax error: background jobs ('&') are not supported")
}

// isRedirStart reports whether a redirection starts at s[i]: '>' or '<',
// or a digit (the fd) right before one at the start of a word.
func isRedirStart(s string, i int) bool {
	c := s[i]
	if c == '>' || c == '<' {
		return true
	}
	return c >= '0' && c <= '9' && i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '<') && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t')
}

// lexRedir reads the redirection operator s starts with (">", ">>", "<",
// ">&", with an optional fd before it: 1 for output, 0 for input by
// default) and returns it with the bytes consumed.
func lexRedir(s string) (token, int) {
	i, fd := 0, -1
	if c := s[0]; c >= '0' && c <= '9' {
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
	return token{op: op, fd: fd}, i
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
	l := &listParser{toks: toks}
	for ; i < len(toks); i++ {
		t := toks[i]
		if l.closes(t, closer) {
			return l.finish(i)
		}
		var err error
		if i, err = l.token(i, t); err != nil {
			return nil, i, err
		}
	}
	if closer != "" {
		return nil, i, fmt.Errorf("syntax error: missing '%s'", closer)
	}
	return l.finish(i)
}

// listParser is parseList's state: the and-or lists parsed, the pipeline
// and the command being parsed, and the operator before the pipeline.
type listParser struct {
	toks []token
	out  []andOr
	pipe pipeline
	cmd  simple
	op   string
}

// started reports whether the command being parsed has anything yet;
// atStart, whether it has no word and no group (redirections may come
// first).
func (l *listParser) started() bool {
	return len(l.cmd.args) > 0 || len(l.cmd.redirs) > 0 || l.cmd.group != nil
}

func (l *listParser) atStart() bool { return len(l.cmd.args) == 0 && l.cmd.group == nil }

// closes reports whether t closes the list: a '}' word where a command
// starts in a { } group, ')' in a subshell.
func (l *listParser) closes(t token, closer string) bool {
	return closer == "}" && l.atStart() && isWord(t, "}") || closer == ")" && t.op == ")"
}

// endCmd adds the command to the pipeline.
func (l *listParser) endCmd() error {
	if !l.started() {
		return fmt.Errorf("syntax error: unexpected operator")
	}
	l.pipe = append(l.pipe, l.cmd)
	l.cmd = simple{}
	return nil
}

// token parses toks[i], t, and returns the index of the last token it
// used.
func (l *listParser) token(i int, t token) (int, error) {
	switch {
	case t.op == ")":
		return i, fmt.Errorf("syntax error: unexpected ')'")
	case l.atStart() && (isWord(t, "{") || t.op == "("):
		return l.group(i, t)
	case t.op == "":
		if l.cmd.group != nil {
			return i, fmt.Errorf("syntax error: unexpected word after a command group")
		}
		l.cmd.args = append(l.cmd.args, t.w)
	case t.op == ">" || t.op == ">>" || t.op == "<" || t.op == ">&":
		if i+1 >= len(l.toks) || l.toks[i+1].op != "" {
			return i, fmt.Errorf("syntax error: redirection %s without a target", t.op)
		}
		l.cmd.redirs = append(l.cmd.redirs, redir{fd: t.fd, op: t.op, target: l.toks[i+1].w})
		return i + 1, nil
	case t.op == "|":
		return i, l.endCmd()
	case t.op == ";" || t.op == "&&" || t.op == "||":
		return i, l.separate(t.op)
	}
	return i, nil
}

// group parses a { list; } group or a ( list ) subshell opened by t at
// toks[i] into the command.
func (l *listParser) group(i int, t token) (int, error) {
	closer := "}"
	if t.op == "(" {
		closer = ")"
	}
	inner, j, err := parseList(l.toks, i+1, closer)
	if err != nil {
		return j, err
	}
	if j >= len(l.toks) {
		return j, fmt.Errorf("syntax error: missing '%s'", closer)
	}
	if len(inner) == 0 {
		return j, fmt.Errorf("syntax error: empty command group")
	}
	l.cmd.group, l.cmd.subshell = inner, t.op == "("
	return j, nil
}

// separate ends the pipeline at the list operator op (";", "&&", "||");
// an empty command before ";" is skipped.
func (l *listParser) separate(op string) error {
	if !l.started() && len(l.pipe) == 0 {
		if op == ";" {
			return nil
		}
		return fmt.Errorf("syntax error: unexpected '%s'", op)
	}
	if err := l.endCmd(); err != nil {
		return err
	}
	l.out = append(l.out, andOr{op: l.op, pipe: l.pipe})
	l.pipe = nil
	l.op = op
	return nil
}

// finish ends the list at toks[i]: the last command and pipeline, unless
// an operator still wants one.
func (l *listParser) finish(i int) ([]andOr, int, error) {
	if l.started() {
		if err := l.endCmd(); err != nil {
			return nil, i, err
		}
	} else if len(l.pipe) > 0 || l.op == "&&" || l.op == "||" {
		return nil, i, fmt.Errorf("syntax error: unexpected end of line")
	}
	if len(l.pipe) > 0 {
		l.out = append(l.out, andOr{op: l.op, pipe: l.pipe})
	}
	return l.out, i, nil
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
