// Package shquote quotes words for a POSIX shell (Android's mksh, toybox
// sh, dash). It is a leaf: the adb backend and the simulated phone's shell
// both use it, and neither knows the other.
package shquote

import "strings"

// Quote quotes s so the shell passes it through as one literal word: words
// made only of safe characters are left as they are, anything else is put
// in single quotes, each single quote inside closed, escaped and reopened.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		if !safe(s[i]) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

func safe(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("@%+=:,./-", c) >= 0
}
