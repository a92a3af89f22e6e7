// Package housetest holds the tests that keep perflab's house rules true
// across the whole module (docs/architecture.md): imports run one way down
// the floors, and only tui draws with the Charm libraries. It has no code
// of its own.
package housetest
