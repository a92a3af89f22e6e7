// Package housetest holds the tests that keep perflab's house rules true
// across the whole module (docs/architecture.md): imports run one way down
// the floors, only tui draws with the Charm libraries, and no function or
// file grows past the limits that keep the code readable. It has no code
// of its own.
package housetest
