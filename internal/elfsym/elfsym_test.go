package elfsym

import "testing"

// TestGroup: names Unknown makes (and bare addresses) are one row per
// binary; function names, C++ ones with "+" among them, are their own.
func TestGroup(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{Unknown("/usr/bin/gzip", 0xcc5c), "gzip (unsymbolized)"},
		{"0x4883", "(unsymbolized)"},
		{"hot_loop", "hot_loop"},
		{"operator+(int, int)", "operator+(int, int)"},
		{"std::vector<int>::push_back+0x10", "std::vector<int>::push_back+0x10"},
		{"gzip+0xzz", "gzip+0xzz"},
	} {
		if got := Group(c.in); got != c.want {
			t.Errorf("Group(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
