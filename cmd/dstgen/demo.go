package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDemoCmd is dstgen demo (being written).
func newDemoCmd() *cobra.Command {
	return &cobra.Command{Use: "demo", Short: "(being written)", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return badInput(errors.New("demo: not built yet")) }}
}
