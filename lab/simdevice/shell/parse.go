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

type simple struct {
	args   []word
	redirs []redir
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
	return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '>' || c == '<'
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
	var out []andOr
	var pipe pipeline
	var cmd simple
	op := ""
	endCmd := func() error {
		if len(cmd.args) == 0 && len(cmd.redirs) == 0 {
			return fmt.Errorf("syntax error: unexpected operator")
		}
		pipe = append(pipe, cmd)
		cmd = simple{}
		return nil
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.op {
		case "":
			cmd.args = append(cmd.args, t.w)
		case ">", ">>", "<", ">&":
			if i+1 >= len(toks) || toks[i+1].op != "" {
				return nil, fmt.Errorf("syntax error: redirection %s without a target", t.op)
			}
			cmd.redirs = append(cmd.redirs, redir{fd: t.fd, op: t.op, target: toks[i+1].w})
			i++
		case "|":
			if err := endCmd(); err != nil {
				return nil, err
			}
		case ";", "&&", "||":
			if len(cmd.args) == 0 && len(cmd.redirs) == 0 && len(pipe) == 0 {
				if t.op == ";" {
					continue
				}
				return nil, fmt.Errorf("syntax error: unexpected '%s'", t.op)
			}
			if err := endCmd(); err != nil {
				return nil, err
			}
			out = append(out, andOr{op: op, pipe: pipe})
			pipe = nil
			op = t.op
		}
	}
	if len(cmd.args) > 0 || len(cmd.redirs) > 0 {
		if err := endCmd(); err != nil {
			return nil, err
		}
	} else if len(pipe) > 0 || op == "&&" || op == "||" {
		return nil, fmt.Errorf("syntax error: unexpected end of line")
	}
	if len(pipe) > 0 {
		out = append(out, andOr{op: op, pipe: pipe})
	}
	return out, nil
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

// Quote quotes s for mksh so it is passed through as one literal word.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isNameChar(c) || strings.IndexByte("@%+=:,./-", c) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
