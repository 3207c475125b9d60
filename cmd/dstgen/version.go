package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// moduleVersion is dstgen's module version as `go install …@version`
// records it, or "devel" for a build from a working tree.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// withVersion gives root `--version` and a `version` command, both
// printing "dstgen <version>".
func withVersion(root *cobra.Command) *cobra.Command {
	root.Version = moduleVersion()
	root.SetVersionTemplate("dstgen {{.Version}}\n")
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print dstgen's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "dstgen %s\n", root.Version)
		},
	})
	return root
}
