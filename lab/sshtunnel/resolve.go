package sshtunnel

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Resolve is the configuration with which `ssh t` itself would connect:
// OpenSSH's own evaluation of its configuration (`ssh -G`, of the user's
// ~/.ssh/config, or of configFile as ssh -F reads it), so that an alias
// with its HostName, Port, User, IdentityFile, UserKnownHostsFile and
// ProxyJump reaches the host as it does in a terminal, as the suite's ssh
// workers (lab/sshworker) do. Without an ssh client installed it is
// DefaultConfig (and configFile, if given, is an error).
func Resolve(ctx context.Context, t Target, configFile string) (Config, error) {
	if _, err := exec.LookPath("ssh"); err != nil {
		if configFile != "" {
			return Config{}, fmt.Errorf("ssh %s: reading %s needs the OpenSSH client (ssh), which is not installed", t, configFile)
		}
		return DefaultConfig(t), nil
	}
	return resolve(ctx, t, configFile, 0)
}

func resolve(ctx context.Context, t Target, configFile string, depth int) (Config, error) {
	if depth > 4 {
		return Config{}, fmt.Errorf("ssh %s: ProxyJump chain longer than 4 hosts", t)
	}
	args := []string{"-G"}
	if configFile != "" {
		args = append(args, "-F", configFile)
	}
	if t.Port != 0 {
		args = append(args, "-p", strconv.Itoa(t.Port))
	}
	dest := t.Host
	if t.User != "" {
		dest = t.User + "@" + dest
	}
	cmd := exec.CommandContext(ctx, "ssh", append(args, "--", dest)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Config{}, fmt.Errorf("ssh %s: reading the ssh configuration (ssh -G): %v: %s", t, err, strings.TrimSpace(stderr.String()))
	}
	c, jump, err := parseG(out, t)
	if err != nil {
		return Config{}, err
	}
	c.AgentSocket = os.Getenv("SSH_AUTH_SOCK")
	if c.Target.Host != t.Host {
		c.Alias = t.String()
	}
	if jump != "" {
		// The first hop of a chain (a,b: a first); the hops after it are
		// the jump's own ProxyJump as ssh would chain them.
		first, _, _ := strings.Cut(jump, ",")
		jt, err := ParseTarget(strings.TrimPrefix(first, "ssh://"))
		if err != nil {
			return Config{}, fmt.Errorf("ssh %s: ProxyJump %q: %w", t, jump, err)
		}
		jc, err := resolve(ctx, jt, configFile, depth+1)
		if err != nil {
			return Config{}, err
		}
		c.Jump = &jc
	}
	return c, nil
}

// parseG reads `ssh -G` output: "keyword value" lines, lower-case
// keywords, identityfile and userknownhostsfile possibly several.
func parseG(out []byte, t Target) (Config, string, error) {
	c := Config{Target: Target{Host: t.Host}}
	var jump string
	home, _ := os.UserHomeDir()
	expand := func(p string) string {
		if strings.HasPrefix(p, "~/") && home != "" {
			return filepath.Join(home, p[2:])
		}
		return p
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		switch k {
		case "hostname":
			c.Host = v
		case "port":
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, "", fmt.Errorf("ssh -G %s: port %q", t, v)
			}
			c.Port = n
		case "user":
			c.User = v
		case "identityfile":
			c.Identities = append(c.Identities, expand(v))
		case "userknownhostsfile":
			for _, f := range strings.Fields(v) {
				c.KnownHosts = append(c.KnownHosts, expand(f))
			}
		case "proxyjump":
			if v != "none" {
				jump = v
			}
		case "proxycommand":
			if v != "none" {
				return c, "", fmt.Errorf("ssh %s: its configuration sets ProxyCommand, which perflab's --ssh tunnels do not run (ProxyJump works)", t)
			}
		}
	}
	if c.Port == 22 && t.Port == 0 {
		c.Port = 0
	}
	return c, jump, nil
}
