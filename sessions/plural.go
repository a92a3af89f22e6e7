package sessions

import "strconv"

// Count is n and word, plural unless n is 1: "1 trial", "3 trials".
func Count(n int, word string) string {
	return strconv.Itoa(n) + " " + Plural(n, word)
}

// Plural is word, with an s unless n is 1.
func Plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
