package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// ensureSecret makes a secret once and keeps it; a secret file others can
// read, or a directory in its place, is refused.
func TestEnsureSecret(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string // error substring; "" = ok
		keep  string // the value an existing file must keep
	}{
		{name: "new", setup: func(*testing.T, string) {}},
		{name: "kept", setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "db"), "old-value", 0o600) }, keep: "old-value"},
		{name: "readable by others", setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "db"), "x", 0o644) }, want: "readable by group or others"},
		{name: "a directory", setup: func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, "db"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, want: "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".dstgen", "secrets")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			c.setup(t, dir)
			p, err := ensureSecret(dir, "db")
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(p)
			switch {
			case c.keep != "" && string(b) != c.keep:
				t.Errorf("existing secret changed to %q", b)
			case c.keep == "" && (len(b) != secretLen || strings.Trim(string(b), secretAlphabet) != ""):
				t.Errorf("new secret %q: want %d letters and digits", b, secretLen)
			case fi.Mode().Perm() != 0o600:
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			if again, err := ensureSecret(dir, "db"); err != nil || again != p {
				t.Fatalf("second call: %q %v", again, err)
			}
			if b2, _ := os.ReadFile(p); !bytes.Equal(b, b2) {
				t.Errorf("second call changed the secret")
			}
		})
	}
}

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// Configure installs each sut.secrets value on every host, the client
// too, at <workdir>/secrets/<name> with mode 0600, and prints the names,
// never the values; a second deploy installs the same value.
func TestConfigureInstallsSecretsEverywhere(t *testing.T) {
	sshtest.Require(t)
	k := sshtest.NewKeys(t)
	srvs := sshtest.StartTrusted(t, k, 2)
	wds := []string{sshtest.Workdir(t), sshtest.Workdir(t)}
	dir := t.TempDir()
	y := fmt.Sprintf("ssh: {user: %s, key: %s, known_hosts: %s, config: none}\nhosts:\n"+
		"  - {name: m1, address: %s, port: %d, roles: [db], workdir: %s}\n"+
		"  - {name: c1, address: %s, port: %d, roles: [client], workdir: %s}\n"+
		"sut:\n  roles: [db]\n  secrets: [db_pass, other]\n",
		sshtest.User, k.Key, k.KnownHosts, srvs[0].Host, srvs[0].Port, wds[0], srvs[1].Host, srvs[1].Port, wds[1])
	p := filepath.Join(dir, "env.yml")
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := env.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Prepare(e)
	if err != nil {
		t.Fatal(err)
	}
	pool := runner.NewPool(e, runner.Options{})
	defer pool.Close()
	var first []byte
	for round := range 2 {
		var out bytes.Buffer
		if err := (&Deployer{Env: e, Pool: pool, Hosts: hs, Out: &out}).Configure(context.Background()); err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, out.String())
		}
		local, err := os.ReadFile(filepath.Join(dir, ".dstgen", "secrets", "db_pass"))
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			first = local
		} else if !bytes.Equal(first, local) {
			t.Errorf("round %d: the local secret changed", round)
		}
		if strings.Contains(out.String(), string(local)) {
			t.Errorf("round %d: the output shows the secret's value:\n%s", round, out.String())
		}
		for i, wd := range wds {
			host := []string{"m1", "c1"}[i]
			if !strings.Contains(out.String(), "host="+host+" secret=db_pass installed="+wd+"/secrets/db_pass") {
				t.Errorf("round %d: no install line for %s:\n%s", round, host, out.String())
			}
			rp := filepath.Join(wd, "secrets", "db_pass")
			b, err := os.ReadFile(rp)
			if err != nil || !bytes.Equal(b, local) {
				t.Errorf("round %d: %s holds %q (%v), want the local secret", round, rp, b, err)
			}
			if fi, err := os.Stat(rp); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("round %d: %s mode %v (%v), want 0600", round, rp, fi.Mode().Perm(), err)
			}
			if fi, err := os.Stat(filepath.Dir(rp)); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("round %d: %s mode %v (%v), want 0700", round, filepath.Dir(rp), fi.Mode().Perm(), err)
			}
		}
	}
}
