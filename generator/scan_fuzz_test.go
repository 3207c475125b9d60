package generator

import (
	"bytes"
	"path"
	"strings"
	"testing"
)

func lineCount(data []byte) int { return bytes.Count(data, []byte("\n")) + 1 }

// FuzzParseMakefile: no panic; every target is a plain name on a line that
// exists.
func FuzzParseMakefile(f *testing.F) {
	for _, s := range []string{
		"build:\n\tgo build\n", "A := b\nx y: z ; cmd\n", "define X\na:\nendef\n",
		"a \\\n b: c\n\t\\\n", "%.o: %.c\n.PHONY: x\n", "\t\t:\n:", "a::\nb:=c\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mf := parseMakefile(data)
		n := lineCount(data)
		for _, tg := range mf.targets {
			if tg.name == "" || strings.ContainsAny(tg.name, " \t\n:=%$") || tg.line < 1 || tg.line > n {
				t.Fatalf("bad target %+v (of %d lines)", tg, n)
			}
		}
		jf := parseJustfile(data)
		for _, tg := range jf.targets {
			if tg.name == "" || tg.line < 1 || tg.line > n {
				t.Fatalf("bad recipe %+v", tg)
			}
		}
	})
}

// FuzzParseUnit: no panic; ExecStart's line exists and dependencies are
// unique.
func FuzzParseUnit(f *testing.F) {
	for _, s := range []string{
		"[Unit]\nAfter=a b\n[Service]\nExecStart=/x \\\n -y\n", "[Service]\nExecStart=\n", "[\n=\\", "[Service]\nExecStart=\\",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u := parseUnit(data)
		if u.Line < 0 || u.Line > lineCount(data) || (u.ExecStart == "") != (u.Line == 0) {
			t.Fatalf("ExecStart %q at line %d", u.ExecStart, u.Line)
		}
		seen := map[string]bool{}
		for _, d := range u.Requires {
			if seen[d] || d == "" {
				t.Fatalf("duplicate or empty dependency %q in %v", d, u.Requires)
			}
			seen[d] = true
		}
	})
}

// FuzzParseMarkdown: no panic; commands and their lines stay parallel,
// ascending and inside the document.
func FuzzParseMarkdown(f *testing.F) {
	for _, s := range []string{
		"# A\n```sh\nmake \\\n x\n```\n", "```console\n$ a\nout\n# b\n", "~~~\n~~\n~~~~\n## H ##\n",
		"```\nx \\", "    ```\n#\n", "##\n```bash\n$ \n```",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := lineCount(data)
		prev := 0
		for _, sec := range parseMarkdown(data) {
			if len(sec.cmds) != len(sec.lines) {
				t.Fatalf("%d commands, %d lines", len(sec.cmds), len(sec.lines))
			}
			if sec.level < 0 || sec.level > 6 || sec.line > n {
				t.Fatalf("bad section %+v", sec)
			}
			for i, l := range sec.lines {
				if l < 1 || l > n || l < prev || sec.cmds[i] == "" {
					t.Fatalf("command %q at line %d (prev %d, %d lines)", sec.cmds[i], l, prev, n)
				}
				prev = l
			}
		}
		// addDoc must cope with whatever the parser returns.
		s := newScanner(t.Context(), "/nonexistent", ScanOptions{})
		s.addDoc("README.md", data, false)
		s.addDoc("INSTALL.md", data, true)
	})
}

// FuzzConfigKeys: no panic on any format; keys are unique and non-empty.
func FuzzConfigKeys(f *testing.F) {
	for _, s := range []string{"a: 1\n", `{"a":1}`, "[x]\na=1\n", "a.b = 1\n[c.d]\n", "- 1\n", "{", "&a [*a]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, target := range []string{"c.yaml", "c.json", "c.toml", "c.ini", ".env"} {
			seen := map[string]bool{}
			for _, k := range configKeys(target, data) {
				if seen[k] {
					t.Fatalf("%s: duplicate key %q", target, k)
				}
				seen[k] = true
			}
		}
	})
}

// FuzzParseCargo: no panic; every [[bin]] entry came from a [[bin]] header.
func FuzzParseCargo(f *testing.F) {
	for _, s := range []string{
		"[package]\nname = \"a\"\n[[bin]]\nname='b'\npath=\"c\"\n", "[[bin]]\nname = \"", "name = 1\n[[", "[workspace]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := parseCargo(data)
		if len(m.bins) > bytes.Count(data, []byte("[[")) {
			t.Fatalf("%d bins from %d table headers", len(m.bins), bytes.Count(data, []byte("[[")))
		}
		_ = isGoMain(data)
		_ = parseGoMod(data)
		_, _, _ = roleByContent(string(data))
	})
}

// FuzzBuildManifests: package.json, CMakeLists.txt, justfile and CI files
// of any content never panic the scanner, and every finding they yield
// cites the file it came from.
func FuzzBuildManifests(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","scripts":{"build":"x","chaos:net":"tc qdisc add"}}`, `{"scripts":null}`, `{"scripts":{"a\nb":"x"}}`, `{`, `[]`,
		"project(x)\nadd_executable(y a.c)\n", "ADD_EXECUTABLE(\n", "soak:\n  ./x\n",
		"run: iptables -A INPUT -j DROP\n# tc qdisc\n", "\x00\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		s := newScanner(t.Context(), "/nonexistent", ScanOptions{})
		s.addPackageJSON("web/package.json", "web", []byte(data))
		s.addCMake("native/CMakeLists.txt", "native", []byte(data))
		s.addJustfile("justfile", []byte(data))
		s.addCI(".github/workflows/ci.yml", []byte(data))
		files := map[string]bool{"web/package.json": true, "native/CMakeLists.txt": true, "justfile": true, ".github/workflows/ci.yml": true}
		for _, b := range s.p.Build {
			if !files[b.File] {
				t.Fatalf("build system %+v does not cite its file", b)
			}
			for _, c := range b.Commands {
				if c == "" || strings.ContainsAny(c, "\n\r") {
					t.Fatalf("build system %s: command %q is empty or spans lines", b.File, c)
				}
			}
		}
		for _, a := range s.p.Artifacts {
			if !files[a.File] || a.Name == "" {
				t.Fatalf("artifact %+v", a)
			}
		}
		for _, tl := range s.p.Toolbox {
			if !files[tl.Path] {
				t.Fatalf("toolbox item %+v does not cite its file", tl)
			}
		}
	})
}

// FuzzParseDeploy: Dockerfiles, compose files, charts, manifests and
// Procfiles of any content never panic the scanner; every artifact cites
// its file at a line that exists, with a kind and a name.
func FuzzParseDeploy(f *testing.F) {
	for _, s := range []string{
		"FROM a AS b\nRUN x \\\n  y\nFROM c\nEXPOSE 1 2\nENTRYPOINT [\"/bin/x\"]\nCMD [\"-y\"]\n", "ENTRYPOINT [\"\nCMD x\n", "FROM\n",
		"services:\n  a:\n    image: x\n    command: [\"-a\", 1]\n    ports: [\"1:1\"]\n", "services: [1]\n", "services:\n  a: 1\n",
		"apiVersion: v2\nname: c\n", "kind: StatefulSet\nmetadata:\n  name: {{ x }}\nspec:\n  containers:\n    - image: i\n      args:\n        - a\n---\nkind: Pod\n",
		"web: ./x --port 1\n#c: y\n:\n", "\x00\xff", "kind:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		s := newScanner(t.Context(), "/nonexistent", ScanOptions{})
		files := map[string]fileKind{"Dockerfile": kindDockerfile, "docker-compose.yml": kindCompose, "chart/Chart.yaml": kindHelmChart,
			"k8s/sts.yaml": kindManifest, "Procfile": kindProcfile, "Vagrantfile": kindVagrant}
		for rel, k := range files {
			s.addDeploy(k, rel, []byte(data))
		}
		n := lineCount([]byte(data))
		for _, a := range s.p.DeployArtifacts {
			if _, ok := files[a.File]; !ok || a.Kind == "" || a.Line < 0 || a.Line > n {
				t.Fatalf("artifact %+v (of %d lines)", a, n)
			}
			_ = deployLine(a)
		}
		if m, ok := clusterTarget(mkTarget{name: "up", line: 1, recipe: data}); ok && (m.Command == "" || strings.Contains(m.Command, "\n")) {
			t.Fatalf("cluster target %+v", m)
		}
	})
}

// FuzzSentencesIn: docs and comments of any content never panic the claim
// scan; every sentence's line exists, and every scored candidate cites one
// and says why it was picked.
func FuzzSentencesIn(f *testing.F) {
	for _, s := range []string{
		"# T\n\nReads are linearizable.\n- [ ] todo\n```\nx\n```\n<!-- a\nb -->\n", "/*\n * Package x is durable.\n */\npackage x\n",
		"// A\n//\n// B is atomic. C\nfunc f() {\n\t// never lost\n}\n", "type t struct {\n\t// f is fsynced.\n\tf int\n}\n", "/* a */ x\n*/\n",
		"`linearizable` [x](http://y/linearizable) 'serializable=true'", "\x00\xff", "..... . ? !",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		n := lineCount([]byte(data))
		for _, rel := range []string{"README.md", "store/store.go", "x.py", "api/x.proto", "notes.txt"} {
			tier, where := tierOf(rel, docExts[path.Ext(rel)])
			for _, s := range sentencesIn(rel, data) {
				if len(s.text) != len(s.prose) {
					t.Fatalf("%s: prose %q does not keep the offsets of %q", rel, s.prose, s.text)
				}
				if l := s.lineAt(0); l < 1 || l > n {
					t.Fatalf("%s: sentence %q at line %d of %d", rel, s.text, l, n)
				}
				c, ok := scoreSentence(claimFile{rel: rel, tier: tier, where: where}, s)
				if ok && (c.c.Matched == "" || len(c.c.Why) == 0 || !strings.HasPrefix(c.c.Source, rel+":")) {
					t.Fatalf("%s: candidate %+v", rel, c.c)
				}
			}
		}
	})
}
