package generator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/internal/fileline"
)

// writeFiles writes files (slash paths relative to dir) into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, text := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// jvmSUT is a coordination service installed from a Debian package and
// started by a unit through java: the shape issue 23 onboarded.
func jvmSUT(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"README.md": "# coord\n\nA coordination service.\n\n## Install\n\n```sh\nsudo apt-get install -y zookeeperd\n```\n",
		"deploy/zookeeper.service": "[Unit]\nDescription=coord\n\n[Service]\n" +
			"ExecStart=/usr/bin/java -Xmx512m -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar org.apache.zookeeper.server.quorum.QuorumPeerMain /etc/zookeeper/conf/zoo.cfg\n",
		"deploy/zoo.cfg.tmpl": "tickTime=2000\ndataDir={{ .DataDir }}\nclientPort=2181\n" +
			"{{ range .Roles.zk }}server.{{ .Ordinal.zk }}={{ .Address }}:2888:3888\n{{ end }}",
		"deploy/myid.tmpl": "{{ .Host.Ordinal.zk }}\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	writeFiles(t, dir, files)
	return dir
}

// Issue 23 item 1: the SUT's own templates name the role (zk, not the
// unit's zookeeper), every template of deploy/ is offered with a dest, and
// a java unit's version is its package's, never the interpreter's.
func TestInitReadsAJVMServiceFromItsTemplatesAndPackage(t *testing.T) {
	sut := jvmSUT(t, nil)
	res := mustInit(t, InitOptions{SUT: sut, Yes: true})
	data, err := os.ReadFile(filepath.Join(res.Out, "env.example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{
		`- name: "zk-1"`, `roles: ["zk"]`, `roles: ["zk"]`, "named by deploy/",
		`- template: "../deploy/zoo.cfg.tmpl"`, `dest: "{{ .Host.Workdir }}/etc/zoo.cfg"`,
		`- template: "../deploy/myid.tmpl"`, `dest: "{{ .Host.Workdir }}/etc/myid"`,
		`version: "dpkg-query -W -f '${Version}' zookeeperd 2>/dev/null || rpm -q --qf '%{VERSION}-%{RELEASE}' zookeeperd"`,
		`package: "zookeeperd"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("env.example.yml lacks %q", want)
		}
	}
	for _, bad := range []string{`binary: "/usr/bin/java"`, "java --version", `"zookeeper-1"`} {
		if strings.Contains(got, bad) {
			t.Errorf("env.example.yml has %q", bad)
		}
	}
}

// A jar is the binary a `java -jar` unit needs; without a package there
// is no version command to offer rather than java's.
func TestInitJarUnitWithoutPackage(t *testing.T) {
	sut := t.TempDir()
	writeFiles(t, sut, map[string]string{
		"README.md":            "# svc\n",
		"deploy/svc.service":   "[Service]\nExecStart=/usr/bin/java -jar /opt/svc/svc.jar --port 1\n",
		"deploy/svc.conf.tmpl": "me={{ .Host.Name }}\n",
	})
	res := mustInit(t, InitOptions{SUT: sut, Yes: true})
	data, _ := os.ReadFile(filepath.Join(res.Out, "env.example.yml"))
	got := string(data)
	if !strings.Contains(got, `binary: "/opt/svc/svc.jar"`) || !strings.Contains(got, `version: ""`) || strings.Contains(got, "java --version") {
		t.Errorf("a -jar unit without a package: binary/version wrong:\n%s", got)
	}
}

// A template deploy would refuse stops init at its line (exit 2 material):
// a role no proposed host has, a value that is no fact.
func TestInitRefusesABadSUTTemplate(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra map[string]string
		want  string
	}{
		{"two roles", map[string]string{"deploy/peers.conf.tmpl": "a\n{{ range index .Roles \"kafka\" }}{{ .Address }}{{ end }}\n"},
			`deploy/peers.conf.tmpl:2: unknown role "kafka": no host init proposes has it (roles: client, zk)`},
		{"unknown fact", map[string]string{"deploy/myid.tmpl": "\n\n{{ .Host.Ordnial.zk }}\n"},
			"deploy/myid.tmpl:3: unknown value .Host.Ordnial: no such template fact"},
	} {
		sut := jvmSUT(t, c.extra)
		_, err := testInit(context.Background(), InitOptions{SUT: sut, Yes: true})
		var fe *fileline.Error
		if err == nil || err.Error() != c.want && !strings.HasPrefix(err.Error(), c.want) || !errors.As(err, &fe) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
		if _, serr := os.Stat(filepath.Join(sut, "testing")); serr == nil {
			t.Errorf("%s: testing/ written despite the error", c.name)
		}
	}
}

// The generated README's Configuration section keeps the env.yml table and
// what it says about it together: the benchmark keys follow the table, not
// a paragraph about hosts without systemd.
func TestReadmeConfigurationTableNotSplit(t *testing.T) {
	res := mustInit(t, InitOptions{SUT: sutWithPlan(t), Yes: true})
	data, err := os.ReadFile(filepath.Join(res.Out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(data)
	i := strings.Index(sec, "## Configuration\n")
	if i < 0 {
		t.Fatal("no Configuration section")
	}
	sec = sec[i:]
	sec = sec[:strings.Index(sec, "\n### ")]
	lines := strings.Split(sec, "\n")
	last := -1
	for j, l := range lines {
		if strings.HasPrefix(l, "| ") {
			last = j
		}
	}
	var next string
	for _, l := range lines[last+1:] {
		if strings.TrimSpace(l) != "" {
			next = l
			break
		}
	}
	if last < 0 || !strings.HasPrefix(next, "Key benchmark parameters:") {
		t.Errorf("after the Configuration table comes %q, want the benchmark keys", next)
	}
}

// Issue 23 item 6: the generated Taskfile offers the whole-plan run and
// lets run:scenario add to a named session.
func TestTaskfileOffersRunAllAndNamedSessions(t *testing.T) {
	res := mustInit(t, InitOptions{SUT: sutWithPlan(t), Yes: true})
	data, err := os.ReadFile(filepath.Join(res.Out, "Taskfile.yml"))
	if err != nil {
		t.Fatal(err)
	}
	tf := string(data)
	i := strings.Index(tf, "\n  run:all:\n")
	j := strings.Index(tf, "\n  run:scenario:\n")
	if i < 0 || j < 0 {
		t.Fatalf("Taskfile lacks run:all or run:scenario")
	}
	if all := tf[i:j]; !strings.Contains(all, " run --all ") || !strings.Contains(all, "--session {{shellQuote .SESSION}}") {
		t.Errorf("run:all: %s", all)
	}
	if sc := tf[j:]; !strings.Contains(sc[:strings.Index(sc, "\n\n")], "{{if .SESSION}} --session {{shellQuote .SESSION}}{{end}}") {
		t.Errorf("run:scenario does not pass SESSION: %s", sc[:strings.Index(sc, "\n\n")])
	}
	if !strings.Contains(tf, "SESSION: '{{.SESSION}}'") {
		t.Error("the per-scenario tasks do not pass SESSION on")
	}
}
