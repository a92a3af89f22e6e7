// Command serve_million measures perflab serve on a history of a million
// rows (issue 37: "pages load fast on a history of a million rows"): it
// writes a CSV history of -builds builds × -metrics metrics (default
// 10,000 × 100), imports it, then times the list page and a series page
// (first and last page of its builds) through the real handler, best of
// -runs. With -postgres the history is on a private PostgreSQL cluster
// (internal/pgtest: initdb in a temporary folder, a free loopback port)
// instead of an SQLite file.
//
//	go run ./bench/serve_million
//	go run ./bench/serve_million -postgres
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/internal/pgtest"
	"github.com/perflab/perflab/sessions/history"
	"github.com/perflab/perflab/sessions/web"
)

func main() {
	builds := flag.Int("builds", 10000, "builds (CSV lines)")
	metrics := flag.Int("metrics", 100, "metrics (CSV columns): series")
	runs := flag.Int("runs", 5, "timings per page (the best is kept)")
	pg := flag.Bool("postgres", false, "keep the history on a private PostgreSQL cluster")
	flag.Parse()
	dir, err := os.MkdirTemp("", "serve_million")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	csv := filepath.Join(dir, "h.csv")
	f, err := os.Create(csv)
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fmt.Fprint(f, "commit")
	for m := range *metrics {
		fmt.Fprintf(f, ",m%03d", m)
	}
	fmt.Fprintln(f)
	for b := range *builds {
		var line strings.Builder
		fmt.Fprintf(&line, "%040x", b+1)
		for m := range *metrics {
			v := 100 + float64(m) + rng.NormFloat64()
			if b > *builds/2 && m%10 == 0 {
				v *= 1.05
			}
			fmt.Fprintf(&line, ",%.3f", v)
		}
		fmt.Fprintln(f, line.String())
	}
	f.Close()
	ctx := context.Background()
	where := filepath.Join(dir, "h.db")
	if *pg {
		c, err := pgtest.Start()
		if err != nil {
			log.Fatal(err)
		}
		defer c.Stop()
		if where, err = c.NewDatabase(ctx, "million"); err != nil {
			log.Fatal(err)
		}
	}
	db, err := history.Open(ctx, where)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	imp, err := db.ImportCSV(ctx, csv, "lab")
	if err != nil {
		log.Fatal(err)
	}
	store := "SQLite"
	if *pg {
		store = "PostgreSQL"
	}
	fmt.Printf("%s: imported %d rows (%d builds × %d series) in %.1fs\n", store, imp.Rows, *builds, *metrics, time.Since(start).Seconds())
	s := &web.Server{DB: db, Detect: changepoint.Options{}, Session: func(io.Writer, string) error { return nil },
		Bisect: func(string) (string, error) { return "", nil }}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, p := range []struct{ name, path string }{
		{"series list (/)", "/"},
		{"a series, newest builds", "/series?device=lab&metric=m010"},
		{"a series, oldest builds", fmt.Sprintf("/series?device=lab&metric=m010&page=%d", (*builds+web.PageSize-1)/web.PageSize)},
	} {
		best := math.Inf(1)
		size := 0
		for range *runs {
			t0 := time.Now()
			resp, err := ts.Client().Get(ts.URL + p.path)
			if err != nil {
				log.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				log.Fatalf("%s: %d", p.path, resp.StatusCode)
			}
			best, size = math.Min(best, time.Since(t0).Seconds()), len(b)
		}
		fmt.Printf("%-26s %6.0f ms  (%d KB)\n", p.name, best*1000, size/1024)
	}
}
