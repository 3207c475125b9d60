package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 23 item 1 at the CLI: a template that names a role no host has is
// one line with its file:line and exit 2, at init (the SUT's own
// template) and at deploy (env.yml's), before any host is touched.
func TestTemplateUnknownRoleExit2(t *testing.T) {
	sut := t.TempDir()
	for p, text := range map[string]string{
		"README.md":              "# coord\n",
		"deploy/coord.service":   "[Service]\nExecStart=/usr/bin/coord --config /etc/coord/coord.conf\n",
		"deploy/coord.conf.tmpl": "me={{ .Host.Name }}\npeers={{ range .Roles.coord }}{{ .Address }} {{ end }}\nzk={{ range index .Roles \"zk\" }}{{ .Address }}{{ end }}\n",
	} {
		full := filepath.Join(sut, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	envDir := t.TempDir()
	envPath := filepath.Join(envDir, "env.yml")
	if err := os.WriteFile(envPath, []byte("hosts:\n  - {name: c1, address: 192.0.2.1, roles: [coord]}\n  - {name: cl, address: 192.0.2.2, roles: [client]}\n"+
		"sut:\n  roles: [coord]\n  command: coord\n  configs:\n    - template: "+filepath.Join(sut, "deploy", "coord.conf.tmpl")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"init", []string{"init", "--sut", sut, "--yes"}, `deploy/coord.conf.tmpl:3: unknown role "zk"`},
		{"deploy", []string{"deploy", "--env", envPath}, `coord.conf.tmpl:3: unknown role "zk" (index .Roles "zk"): no host has it (roles: client, coord)`},
	} {
		code, _, errs := runDstgen(t, "", c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%s: exit %d stderr %q; want exit 2 and one line with %q", c.name, code, errs, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(sut, "testing")); err == nil {
		t.Error("a refused init wrote testing/")
	}
}
