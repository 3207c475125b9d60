package main

import (
	"encoding/json"
	"fmt"

	"github.com/dstgen/dstgen/generator"
	"github.com/spf13/cobra"
)

// newScanCmd is `dstgen scan [DIR] [--plan FILE] [--json]`: the profile of a
// SUT tree that init would generate from, for a person to approve.
func newScanCmd() *cobra.Command {
	var (
		planPath string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "scan [DIR]",
		Short: "Scan a SUT tree: build, deploy docs and artifacts, units, configs, existing test toolbox, mode and open questions",
		Long: `scan walks DIR (default: the current directory) and prints what dstgen
learned about the system under test: build systems and commands, artifacts,
install/deploy docs with their shell commands, systemd units, deploy
artifacts (Dockerfiles, compose services, Helm charts, Kubernetes workloads,
Procfiles, Makefile targets that start a cluster), config templates and the
existing test toolbox, each with the file (and line) it came from.
It then picks the completeness mode (Fast / Semi / Full) and lists the
questions still open, with defaults. --json prints the profile as JSON.

Exit codes: 0 scanned; 2 DIR or --plan missing or unreadable.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			p, err := generator.Scan(cmd.Context(), dir, generator.ScanOptions{PlanPath: planPath})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(p); err != nil {
					return fmt.Errorf("scan: write JSON: %w", err)
				}
				return nil
			}
			if err := generator.WriteSummary(out, p); err != nil {
				return fmt.Errorf("scan: write summary: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&planPath, "plan", "", "plan file the test is driven by (makes the intent clear)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the profile as JSON")
	return cmd
}
