// Package generator scans a system under test into a Profile and renders
// the testing/ directory (Taskfile.yml, env.example.yml, scenarios.yml,
// scripts, README, agent definition) from the embedded templates.
//
// The schema of the generated scenarios.yml is scenariosFile (see
// docs/scenarios-yml.md); the rendered file repeats it in its header comment.
package generator

import "github.com/dstgen/dstgen/env"

// Profile is what the scanner learned about a SUT (docs/real-env-test.md §2.4).
// Every finding cites the file it came from (repo-relative path).
type Profile struct {
	Root     string   `json:"root" yaml:"root"`         // absolute SUT directory
	Name     string   `json:"name" yaml:"name"`         // project name (dir name, module, crate, package)
	Language []string `json:"language" yaml:"language"` // "go", "rust", "node", "c++", ...

	Build     []BuildSystem `json:"build" yaml:"build"`
	Artifacts []Artifact    `json:"artifacts" yaml:"artifacts"`
	Deploy    []DeployDoc   `json:"deploy_docs" yaml:"deploy_docs"`
	Units     []Unit        `json:"systemd_units" yaml:"systemd_units"`
	Configs   []Config      `json:"config_templates" yaml:"config_templates"`
	Toolbox   []Tool        `json:"toolbox" yaml:"toolbox"`
	// DeployArtifacts are the SUT's own files that start it: Dockerfiles,
	// compose services, Helm charts, Kubernetes workloads, systemd units,
	// Procfiles, Makefile targets that bring a cluster up.
	DeployArtifacts []DeployArtifact `json:"deploy_artifacts,omitempty" yaml:"deploy_artifacts,omitempty"`

	Completeness Completeness `json:"completeness" yaml:"completeness"`
	Questions    []Question   `json:"questions" yaml:"questions"`
	FilesScanned int          `json:"files_scanned" yaml:"files_scanned"`

	// Plans are the plan files found (docs/testing-plans/*.md,
	// testing-plans/*.md) or given; any one makes the intent clear.
	Plans []string `json:"plans,omitempty" yaml:"plans,omitempty"`
	// Warnings name files the scanner could not use (unreadable, too large,
	// a symlink leaving the tree), so a person knows what the profile missed.
	Warnings []string `json:"warnings,omitempty" yaml:"warnings,omitempty"`
}

// BuildSystem is one build file and the commands/targets found in it.
type BuildSystem struct {
	Kind     string   `json:"kind" yaml:"kind"` // make | go | cargo | npm | cmake | just
	File     string   `json:"file" yaml:"file"`
	Commands []string `json:"commands,omitempty" yaml:"commands,omitempty"` // e.g. "make build", "go build ./cmd/x"
	Targets  []string `json:"targets,omitempty" yaml:"targets,omitempty"`   // Makefile targets, cargo bins, npm scripts, go main pkgs
}

// Artifact is a binary or package the build produces.
type Artifact struct {
	Name  string `json:"name" yaml:"name"`
	Path  string `json:"path" yaml:"path"`   // expected output path after build
	Build string `json:"build" yaml:"build"` // command that builds it
	File  string `json:"file" yaml:"file"`   // where this was learned
	// GoPackage is the Go main package's dir (root-relative) it is built
	// from, "" for other builds: deploy can build it for each host.
	GoPackage string `json:"go_package,omitempty" yaml:"go_package,omitempty"`
}

// DeployDoc is a document (or README section) with install/deploy steps.
type DeployDoc struct {
	File     string   `json:"file" yaml:"file"`
	Section  string   `json:"section,omitempty" yaml:"section,omitempty"`
	Line     int      `json:"line,omitempty" yaml:"line,omitempty"`
	Commands []string `json:"commands,omitempty" yaml:"commands,omitempty"` // shell lines from fenced blocks
	// CommandLines[i] is the source line of Commands[i].
	CommandLines []int `json:"command_lines,omitempty" yaml:"command_lines,omitempty"`
}

// Unit is a systemd unit file.
type Unit struct {
	Name      string   `json:"name" yaml:"name"` // "quorumkv.service"
	File      string   `json:"file" yaml:"file"`
	ExecStart string   `json:"exec_start" yaml:"exec_start"`
	Requires  []string `json:"requires,omitempty" yaml:"requires,omitempty"` // Requires= + Wants= + After=
	Line      int      `json:"line,omitempty" yaml:"line,omitempty"`         // line of ExecStart=
	// Conflicts are [Unit] Conflicts=: units that must not run beside this
	// one (a package's own unit holding the same ports).
	Conflicts []string `json:"conflicts,omitempty" yaml:"conflicts,omitempty"`
	// Dstgen holds the [Service] X-Dstgen-* keys (systemd ignores X-
	// keys), lower-cased without the prefix: how dstgen starts the SUT
	// beyond ExecStart (docs/env-yml.md §7.2).
	Dstgen map[string]string `json:"dstgen,omitempty" yaml:"dstgen,omitempty"`
	// TimeoutStartS is [Service] TimeoutStartSec= in seconds (0 = unset):
	// how long the unit's start may take, which bounds deploy's health wait.
	TimeoutStartS int `json:"timeout_start_s,omitempty" yaml:"timeout_start_s,omitempty"`
}

// Config is a config template (*.example, *.sample, *.template, *.tmpl).
type Config struct {
	File   string   `json:"file" yaml:"file"`
	Target string   `json:"target" yaml:"target"`                 // name without the template suffix
	Keys   []string `json:"keys,omitempty" yaml:"keys,omitempty"` // top-level keys found, when parseable
	// Templated is true when the file holds template actions ("{{"), so
	// deploy renders it per host instead of copying one file everywhere.
	Templated bool `json:"templated,omitempty" yaml:"templated,omitempty"`
	// DataDir is a literal data-dir / data_dir value the file sets: the
	// SUT's real data dir, which clean:data must wipe.
	DataDir string `json:"data_dir,omitempty" yaml:"data_dir,omitempty"`
	// Roles are the roles the template names (.Roles.R, index .Roles "R",
	// .Host.Ordinal.R), in the order it names them.
	Roles []string `json:"roles,omitempty" yaml:"roles,omitempty"`

	roleRefs []env.TemplateRole // each with its line
	problem  error              // the template's first bad reference, at its line
}

// Tool is a piece of the SUT's existing test toolbox.
type Tool struct {
	Path string `json:"path" yaml:"path"`
	Role string `json:"role" yaml:"role"`                     // driver | workload | bring-up | fault-injector | runbook | ci-wiring | observability | bench | test-suite | other
	Why  string `json:"why" yaml:"why"`                       // what matched (e.g. "Makefile target chaos", "CI step runs iptables")
	Line int    `json:"line,omitempty" yaml:"line,omitempty"` // where in Path it matched, when meaningful
}

// Completeness is the mode of docs/real-env-test.md §2.2.
type Completeness struct {
	DocsComplete bool     `json:"docs_complete" yaml:"docs_complete"`
	IntentClear  bool     `json:"intent_clear" yaml:"intent_clear"` // a plan was found/given
	Mode         string   `json:"mode" yaml:"mode"`                 // Fast | Semi | Full
	Missing      []string `json:"missing,omitempty" yaml:"missing,omitempty"`
}

// Question is an open question init asks on a terminal or writes as a TODO.
type Question struct {
	ID      string `json:"id" yaml:"id"`           // stable key, e.g. "remote.host", "test.workload"
	Text    string `json:"text" yaml:"text"`       // the question
	Default string `json:"default" yaml:"default"` // shown as the default; "" = none
	Answer  string `json:"answer,omitempty" yaml:"answer,omitempty"`
	// Group is the topic the question belongs to ("ssh", "test", "cleanup",
	// or a questionnaire category); Fast mode asks at most three groups.
	Group string `json:"group,omitempty" yaml:"group,omitempty"`
	// Batch is the questionnaire batch (1–3) in Full mode, 0 otherwise,
	// so init can ask two or three categories at a time.
	Batch int `json:"batch,omitempty" yaml:"batch,omitempty"`
	// EnvKey is the env.yml key the answer fills, when there is one.
	EnvKey string `json:"env_key,omitempty" yaml:"env_key,omitempty"`
}
