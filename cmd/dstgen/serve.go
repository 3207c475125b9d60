package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newServeCmd is dstgen serve (being written).
func newServeCmd() *cobra.Command {
	return &cobra.Command{Use: "serve", Short: "(being written)", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return badInput(errors.New("serve: not built yet")) }}
}
