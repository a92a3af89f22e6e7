package history

// ncruces/go-sqlite3 is SQLite compiled to Go (no cgo, no runtime). Chosen
// over modernc.org/sqlite for its build cost: a cold `go test -race -c`
// of a one-test package took 64–69 s of CPU with it against 87 s with
// modernc and 28–30 s with neither (2 cores, 2026-11-27).
import _ "github.com/ncruces/go-sqlite3/driver"

// DriverName is the database/sql driver the history is opened with (tests
// open files with it directly).
const DriverName = "sqlite3"
