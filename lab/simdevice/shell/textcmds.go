package shell

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The simulated phone's text commands: echo, cat, head, wc, grep.

func cmdEcho(e *env, args []string, _ io.Reader, stdout, _ io.Writer) int {
	args = args[1:]
	newline, escapes := true, false
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "neE") == "" {
		for _, c := range args[0][1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	s := strings.Join(args, " ")
	if escapes {
		s = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(s)
	}
	if newline {
		s += "\n"
	}
	io.WriteString(stdout, s)
	return 0
}

func cmdCat(e *env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 {
		io.Copy(stdout, stdin)
		return 0
	}
	status := 0
	for _, a := range args[1:] {
		if a == "-" {
			io.Copy(stdout, stdin)
			continue
		}
		data, err := e.readPath(a)
		if err != nil {
			fmt.Fprintf(stderr, "cat: %s: %v\n", a, err)
			status = 1
			continue
		}
		stdout.Write(data)
	}
	return status
}

func cmdHead(e *env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	n := 10
	var files []string
	for i := 1; i < len(args); i++ {
		switch {
		case args[i] == "-n" && i+1 < len(args):
			n, _ = strconv.Atoi(args[i+1])
			i++
		case strings.HasPrefix(args[i], "-") && len(args[i]) > 1:
			n, _ = strconv.Atoi(args[i][1:])
		default:
			files = append(files, args[i])
		}
	}
	var r io.Reader = stdin
	if len(files) > 0 {
		data, err := e.readPath(files[0])
		if err != nil {
			fmt.Fprintf(stderr, "head: %s: %v\n", files[0], err)
			return 1
		}
		r = strings.NewReader(string(data))
	}
	sc := bufio.NewScanner(r)
	for i := 0; i < n && sc.Scan(); i++ {
		fmt.Fprintln(stdout, sc.Text())
	}
	return 0
}

func cmdWc(e *env, args []string, stdin io.Reader, stdout, _ io.Writer) int {
	data, _ := io.ReadAll(stdin)
	if len(args) > 1 && args[1] == "-l" {
		fmt.Fprintln(stdout, strings.Count(string(data), "\n"))
		return 0
	}
	fmt.Fprintf(stdout, "%d %d %d\n", strings.Count(string(data), "\n"), len(strings.Fields(string(data))), len(data))
	return 0
}

func cmdGrep(e *env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	quiet, invert, fold, count := false, false, false, false
	var rest []string
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") && len(a) > 1 && len(rest) == 0 {
			for _, c := range a[1:] {
				switch c {
				case 'q':
					quiet = true
				case 'v':
					invert = true
				case 'i':
					fold = true
				case 'c':
					count = true
				case 'E', 'F':
				default:
					fmt.Fprintf(stderr, "grep: unknown option -%c\n", c)
					return 2
				}
			}
			continue
		}
		rest = append(rest, a)
	}
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "grep: no pattern")
		return 2
	}
	pat := rest[0]
	var r io.Reader = stdin
	if len(rest) > 1 {
		data, err := e.readPath(rest[1])
		if err != nil {
			fmt.Fprintf(stderr, "grep: %s: %v\n", rest[1], err)
			return 2
		}
		r = strings.NewReader(string(data))
	}
	if fold {
		pat = strings.ToLower(pat)
	}
	n := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		l := line
		if fold {
			l = strings.ToLower(l)
		}
		if strings.Contains(l, pat) != invert {
			n++
			if !quiet && !count {
				fmt.Fprintln(stdout, line)
			}
		}
	}
	if count && !quiet {
		fmt.Fprintln(stdout, n)
	}
	if n > 0 {
		return 0
	}
	return 1
}
