// Package pgtest starts a private PostgreSQL cluster for tests: initdb in
// a temporary folder (as the postgres user when the tests run as root,
// which initdb refuses), the server on a free loopback port with its
// socket in that folder and a password, stopped and removed by Stop. It
// never touches the machine's own clusters or configuration.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a running private cluster.
type Cluster struct {
	Dir      string // the data folder's parent (removed by Stop)
	Port     int
	Password string
	bin      string
	asUser   string // "" or the user the server runs as
}

// Bin finds the PostgreSQL server binaries (Debian's
// /usr/lib/postgresql/N/bin, else on PATH); "" when there are none.
func Bin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// Start makes and starts a cluster; Stop ends it.
func Start() (*Cluster, error) {
	bin := Bin()
	if bin == "" {
		return nil, errors.New("no PostgreSQL server binaries (initdb): apt-get install postgresql (./test.sh does)")
	}
	dir, err := os.MkdirTemp("", "perflab-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Password: "pw-" + strconv.FormatInt(time.Now().UnixNano(), 36), bin: bin}
	if os.Geteuid() == 0 {
		// initdb refuses root: the cluster is the postgres user's.
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("tests run as root and there is no postgres user to run the server: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.asUser = "postgres"
	}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(c.Password+"\n"), 0o644); err != nil {
		c.Stop()
		return nil, err
	}
	if out, err := c.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=scram-sha-256", "--pwfile="+pwfile, "-E", "UTF8", "--no-locale").CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	for attempt := 0; ; attempt++ {
		c.Port, err = freePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50", c.Port, dir)
		out, err := c.run("pg_ctl", "-D", filepath.Join(dir, "data"), "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start").CombinedOutput()
		if err == nil {
			break
		}
		if attempt == 2 {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			c.Stop()
			return nil, fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
		}
	}
	return c, nil
}

func (c *Cluster) run(name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	if c.asUser != "" {
		return exec.Command("runuser", append([]string{"-u", c.asUser, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// Kill stops the server at once, as a crash or a lost machine would.
func (c *Cluster) Kill() error {
	return c.run("pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-m", "immediate", "-w", "stop").Run()
}

// Restart starts a killed server again on its port.
func (c *Cluster) Restart() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50", c.Port, c.Dir)
	if out, err := c.run("pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-o", opts, "-l", filepath.Join(c.Dir, "log"), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl start: %v\n%s", err, out)
	}
	return nil
}

// Stop stops the server (at once: a test cluster keeps nothing) and
// removes its folder.
func (c *Cluster) Stop() {
	if c.Port != 0 {
		c.run("pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-m", "immediate", "-w", "stop").Run()
	}
	os.RemoveAll(c.Dir)
}

// URL is the cluster's URL for database name, password included.
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/%s?sslmode=disable", c.Password, c.Port, name)
}

// NewDatabase creates an empty database and returns its URL.
func (c *Cluster) NewDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{strings.ToLower(name)}.Sanitize()); err != nil {
		return "", err
	}
	return c.URL(strings.ToLower(name)), nil
}

// freePort is a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
